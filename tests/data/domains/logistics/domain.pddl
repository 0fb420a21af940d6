; Typed with a hierarchy: packages carried by trucks within cities and by planes between airports.
(define (domain parcels)
  (:requirements :strips :typing)
  (:types
    city place locatable - object
    depot airport - place
    vehicle parcel - locatable
    truck plane - vehicle)
  (:predicates
    (at ?x - locatable ?p - place)
    (in ?x - parcel ?v - vehicle)
    (in-city ?p - place ?c - city))
  (:action load
    :parameters (?x - parcel ?v - vehicle ?p - place)
    :precondition (and (at ?v ?p) (at ?x ?p))
    :effect (and (not (at ?x ?p)) (in ?x ?v)))
  (:action unload
    :parameters (?x - parcel ?v - vehicle ?p - place)
    :precondition (and (at ?v ?p) (in ?x ?v))
    :effect (and (not (in ?x ?v)) (at ?x ?p)))
  (:action drive
    :parameters (?t - truck ?from ?to - place ?c - city)
    :precondition (and (at ?t ?from) (in-city ?from ?c) (in-city ?to ?c))
    :effect (and (not (at ?t ?from)) (at ?t ?to)))
  (:action fly
    :parameters (?a - plane ?from ?to - airport)
    :precondition (at ?a ?from)
    :effect (and (not (at ?a ?from)) (at ?a ?to))))
