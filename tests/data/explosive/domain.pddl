; One action with eight parameters: over 30 objects, 30^8 (6.6e11) ground instances, all relaxed-reachable.
(define (domain wide)
  (:requirements :typing :negative-preconditions :equality)
  (:types thing)
  (:predicates (ok ?x - thing) (done))
  (:action all-eight
    :parameters (?a ?b ?c ?d ?e ?f ?g ?h - thing)
    :precondition (and (ok ?a) (ok ?b) (ok ?c) (ok ?d) (ok ?e) (ok ?f) (ok ?g) (ok ?h) (not (= ?a ?b)))
    :effect (done)))
