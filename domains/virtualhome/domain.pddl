; VirtualHome homes as scene graphs see them (kgplan observe --scene; the mapping is domain.toml's [scene]):
; rooms, a character, furniture (fixtures, appliances, places to put things: it stands on or is built into
; other furniture) and items that can be carried. Everything is in one room; an item is on or inside at most
; one thing, or held (a dropped item lies in its room); things are open, switched on, plugged in, dirty; the
; character sits or lies, on a thing.
(define (domain virtualhome)
  (:requirements :strips :typing)
  (:types room character thing - object
          furniture item - thing)
  (:predicates
    (in_room ?x - (either thing character) ?r - room)
    (on ?x - (either item character) ?y - thing)
    (inside ?x - item ?y - thing)
    (stands_on ?f - furniture ?y - thing)
    (built_in ?f - furniture ?y - thing)
    (holds ?c - character ?x - item)
    (worn ?x - item ?c - character)
    (open ?x - thing)
    (switched_on ?x - thing)
    (plugged_in ?x - thing)
    (dirty ?x - (either thing room))
    (sitting ?c - character)
    (lying ?c - character))

  (:action walk
    :parameters (?c - character ?from - room ?to - room)
    :precondition (in_room ?c ?from)
    :effect (and (in_room ?c ?to) (not (in_room ?c ?from))))

  (:action grab_from
    :parameters (?c - character ?i - item ?y - thing ?r - room)
    :precondition (and (in_room ?c ?r) (in_room ?i ?r) (on ?i ?y))
    :effect (and (holds ?c ?i) (not (on ?i ?y))))

  (:action take_out
    :parameters (?c - character ?i - item ?y - thing ?r - room)
    :precondition (and (in_room ?c ?r) (in_room ?i ?r) (inside ?i ?y) (open ?y))
    :effect (and (holds ?c ?i) (not (inside ?i ?y))))

  (:action put_on
    :parameters (?c - character ?i - item ?y - thing ?r - room)
    :precondition (and (in_room ?c ?r) (in_room ?y ?r) (holds ?c ?i))
    :effect (and (on ?i ?y) (not (holds ?c ?i))))

  (:action put_in
    :parameters (?c - character ?i - item ?y - thing ?r - room)
    :precondition (and (in_room ?c ?r) (in_room ?y ?r) (holds ?c ?i) (open ?y))
    :effect (and (inside ?i ?y) (not (holds ?c ?i))))

  (:action drop
    :parameters (?c - character ?i - item)
    :precondition (holds ?c ?i)
    :effect (not (holds ?c ?i)))

  (:action open
    :parameters (?c - character ?x - furniture ?r - room)
    :precondition (and (in_room ?c ?r) (in_room ?x ?r))
    :effect (open ?x))

  (:action close
    :parameters (?c - character ?x - furniture ?r - room)
    :precondition (and (in_room ?c ?r) (in_room ?x ?r) (open ?x))
    :effect (not (open ?x)))

  (:action switch_on
    :parameters (?c - character ?x - thing ?r - room)
    :precondition (and (in_room ?c ?r) (in_room ?x ?r))
    :effect (switched_on ?x))

  (:action switch_off
    :parameters (?c - character ?x - thing ?r - room)
    :precondition (and (in_room ?c ?r) (in_room ?x ?r) (switched_on ?x))
    :effect (not (switched_on ?x))))
