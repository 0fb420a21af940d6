; Depots-like: hoists lift crates off surfaces (pallets or crates) and drop them onto clear ones.
; Every lift frees one surface and every drop covers one, so Fast Downward proves that the number
; of clear surfaces never grows; a real start state has many.
(define (domain stacks)
  (:requirements :strips :typing)
  (:types crate pallet - surface surface hoist place)
  (:predicates (on ?c - crate ?s - surface) (clear ?s - surface) (at ?x - object ?p - place)
               (lifting ?h - hoist ?c - crate) (available ?h - hoist))
  (:action lift
    :parameters (?h - hoist ?c - crate ?s - surface ?p - place)
    :precondition (and (at ?h ?p) (at ?c ?p) (available ?h) (on ?c ?s) (clear ?c))
    :effect (and (lifting ?h ?c) (clear ?s) (not (at ?c ?p)) (not (clear ?c)) (not (available ?h))
                 (not (on ?c ?s))))
  (:action drop
    :parameters (?h - hoist ?c - crate ?s - surface ?p - place)
    :precondition (and (at ?h ?p) (at ?s ?p) (clear ?s) (lifting ?h ?c))
    :effect (and (available ?h) (not (lifting ?h ?c)) (at ?c ?p) (not (clear ?s)) (clear ?c)
                 (on ?c ?s))))
