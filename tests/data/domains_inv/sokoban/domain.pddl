; Sokoban-like: a player walks onto clear cells and pushes stones along a line.
(define (domain boxes)
  (:requirements :strips :typing)
  (:types cell stone)
  (:predicates (player ?c - cell) (stone_at ?s - stone ?c - cell) (clear ?c - cell)
               (next ?a - cell ?b - cell))
  (:action walk
    :parameters (?from - cell ?to - cell)
    :precondition (and (player ?from) (clear ?to) (next ?from ?to))
    :effect (and (not (player ?from)) (player ?to) (not (clear ?to)) (clear ?from)))
  (:action push
    :parameters (?p - cell ?from - cell ?to - cell ?s - stone)
    :precondition (and (player ?p) (stone_at ?s ?from) (clear ?to) (next ?p ?from) (next ?from ?to))
    :effect (and (not (player ?p)) (player ?from) (not (stone_at ?s ?from)) (stone_at ?s ?to)
                 (not (clear ?to)) (clear ?p))))
