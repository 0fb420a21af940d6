; Action costs: a courier moves along roads with costs and delivers letters; the cheapest route can
; take more steps than the shortest.
(define (domain courier)
  (:requirements :typing :action-costs)
  (:types place courier letter)
  (:predicates (road ?a ?b - place) (courier-at ?c - courier ?p - place) (letter-at ?l - letter ?p - place)
               (carrying ?c - courier ?l - letter))
  (:functions (total-cost) - number (travel-cost ?a ?b - place) - number)
  (:action go
    :parameters (?c - courier ?a ?b - place)
    :precondition (and (courier-at ?c ?a) (road ?a ?b))
    :effect (and (not (courier-at ?c ?a)) (courier-at ?c ?b) (increase (total-cost) (travel-cost ?a ?b))))
  (:action pick
    :parameters (?c - courier ?l - letter ?p - place)
    :precondition (and (courier-at ?c ?p) (letter-at ?l ?p))
    :effect (and (not (letter-at ?l ?p)) (carrying ?c ?l) (increase (total-cost) 1)))
  (:action deliver
    :parameters (?c - courier ?l - letter ?p - place)
    :precondition (and (courier-at ?c ?p) (carrying ?c ?l))
    :effect (and (not (carrying ?c ?l)) (letter-at ?l ?p) (increase (total-cost) 1))))
