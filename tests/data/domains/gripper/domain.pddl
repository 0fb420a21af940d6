; Constants and negative preconditions: a robot with two named hands carries balls between rooms.
(define (domain two-hands)
  (:requirements :strips :typing :negative-preconditions)
  (:types room ball hand)
  (:constants left right - hand)
  (:predicates (robot-at ?r - room) (at ?b - ball ?r - room) (carry ?b - ball ?h - hand)
               (busy ?h - hand))
  (:action move
    :parameters (?from ?to - room)
    :precondition (and (robot-at ?from) (not (robot-at ?to)))
    :effect (and (robot-at ?to) (not (robot-at ?from))))
  (:action pick
    :parameters (?b - ball ?r - room ?h - hand)
    :precondition (and (at ?b ?r) (robot-at ?r) (not (busy ?h)))
    :effect (and (carry ?b ?h) (busy ?h) (not (at ?b ?r))))
  (:action drop
    :parameters (?b - ball ?r - room ?h - hand)
    :precondition (and (carry ?b ?h) (robot-at ?r))
    :effect (and (at ?b ?r) (not (busy ?h)) (not (carry ?b ?h))))
  (:action swap-to-left
    :parameters (?b - ball)
    :precondition (and (carry ?b right) (not (busy left)))
    :effect (and (carry ?b left) (busy left) (not (carry ?b right)) (not (busy right)))))
