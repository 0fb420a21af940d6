; Depots-like: hoists stack crates on pallets and load them into trucks ("clear" surfaces).
(define (domain crates)
  (:requirements :strips :typing)
  (:types place locatable - object
          depot distributor - place
          truck hoist surface - locatable
          pallet crate - surface)
  (:predicates (at ?x - locatable ?p - place) (on ?x - crate ?y - surface) (in ?x - crate ?t - truck)
               (lifting ?h - hoist ?x - crate) (available ?h - hoist) (clear ?x - surface))
  (:action drive
    :parameters (?t - truck ?from ?to - place)
    :precondition (at ?t ?from)
    :effect (and (not (at ?t ?from)) (at ?t ?to)))
  (:action lift
    :parameters (?h - hoist ?x - crate ?y - surface ?p - place)
    :precondition (and (at ?h ?p) (available ?h) (at ?x ?p) (on ?x ?y) (clear ?x))
    :effect (and (not (at ?x ?p)) (lifting ?h ?x) (not (clear ?x)) (not (available ?h))
                 (clear ?y) (not (on ?x ?y))))
  (:action drop
    :parameters (?h - hoist ?x - crate ?y - surface ?p - place)
    :precondition (and (at ?h ?p) (at ?y ?p) (clear ?y) (lifting ?h ?x))
    :effect (and (available ?h) (not (lifting ?h ?x)) (at ?x ?p) (not (clear ?y)) (clear ?x) (on ?x ?y)))
  (:action load
    :parameters (?h - hoist ?x - crate ?t - truck ?p - place)
    :precondition (and (at ?h ?p) (at ?t ?p) (lifting ?h ?x))
    :effect (and (not (lifting ?h ?x)) (in ?x ?t) (available ?h)))
  (:action unload
    :parameters (?h - hoist ?x - crate ?t - truck ?p - place)
    :precondition (and (at ?h ?p) (at ?t ?p) (available ?h) (in ?x ?t))
    :effect (and (not (in ?x ?t)) (not (available ?h)) (lifting ?h ?x))))
