; Sokoban-like grid: the player walks and pushes stones onto goal squares.
(define (domain stones)
  (:requirements :typing :negative-preconditions)
  (:types square direction stone player)
  (:predicates (player-at ?p - player ?s - square) (stone-at ?t - stone ?s - square) (clear ?s - square)
               (next ?from ?to - square ?d - direction) (goal-square ?s - square) (done ?t - stone))
  (:action walk
    :parameters (?p - player ?from ?to - square ?d - direction)
    :precondition (and (player-at ?p ?from) (clear ?to) (next ?from ?to ?d))
    :effect (and (not (player-at ?p ?from)) (not (clear ?to)) (player-at ?p ?to) (clear ?from)))
  (:action push-to-goal
    :parameters (?p - player ?t - stone ?ppos ?from ?to - square ?d - direction)
    :precondition (and (player-at ?p ?ppos) (stone-at ?t ?from) (clear ?to)
                       (next ?ppos ?from ?d) (next ?from ?to ?d) (goal-square ?to))
    :effect (and (not (player-at ?p ?ppos)) (not (stone-at ?t ?from)) (not (clear ?to))
                 (player-at ?p ?from) (stone-at ?t ?to) (clear ?ppos) (done ?t)))
  (:action push
    :parameters (?p - player ?t - stone ?ppos ?from ?to - square ?d - direction)
    :precondition (and (player-at ?p ?ppos) (stone-at ?t ?from) (clear ?to)
                       (next ?ppos ?from ?d) (next ?from ?to ?d) (not (goal-square ?to)))
    :effect (and (not (player-at ?p ?ppos)) (not (stone-at ?t ?from)) (not (clear ?to))
                 (player-at ?p ?from) (stone-at ?t ?to) (clear ?ppos) (not (done ?t)))))
