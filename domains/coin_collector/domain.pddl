; Coin Collector (TextWorld-Express) for exploration: rooms seen through a door but never entered
; are placeholders marked (unknown ?r); entering one makes it (visited ?r). Doors join two rooms and
; start closed; opening one from either side opens it for both.
(define (domain coin_collector)
  (:requirements :strips :typing :negative-preconditions :existential-preconditions)
  (:types room direction item)
  (:predicates
    (at ?r - room)
    (visited ?r - room)
    (unknown ?r - room)
    (connected ?from - room ?d - direction ?to - room)
    (door_closed ?from - room ?to - room)
    (coin_in ?c - item ?r - room)
    (carrying ?c - item))
  (:action move
    :parameters (?from - room ?d - direction ?to - room)
    :precondition (and (at ?from) (connected ?from ?d ?to) (not (door_closed ?from ?to)))
    :effect (and (at ?to) (not (at ?from))))
  (:action open_door
    :parameters (?from - room ?d - direction ?to - room)
    :precondition (and (at ?from) (connected ?from ?d ?to) (door_closed ?from ?to))
    :effect (and (not (door_closed ?from ?to)) (not (door_closed ?to ?from))))
  (:action take
    :parameters (?c - item ?r - room)
    :precondition (and (at ?r) (coin_in ?c ?r))
    :effect (and (carrying ?c) (not (coin_in ?c ?r)))))
