; A small kitchen for the generic scene form's tests (tests/games/test_scene.py): places in rooms, items on or
; inside places or held (exactly one of them), places open, items dirty.
(define (domain shelves)
  (:requirements :strips :typing)
  (:types room place item - object)
  (:predicates
    (in_room ?p - place ?r - room)
    (on ?i - item ?p - place)
    (inside ?i - item ?p - place)
    (holding ?i - item)
    (open ?p - place)
    (dirty ?i - item))
  (:action pick
    :parameters (?i - item ?p - place)
    :precondition (on ?i ?p)
    :effect (and (holding ?i) (not (on ?i ?p))))
  (:action take
    :parameters (?i - item ?p - place)
    :precondition (and (inside ?i ?p) (open ?p))
    :effect (and (holding ?i) (not (inside ?i ?p))))
  (:action put
    :parameters (?i - item ?p - place)
    :precondition (holding ?i)
    :effect (and (on ?i ?p) (not (holding ?i))))
  (:action store
    :parameters (?i - item ?p - place)
    :precondition (and (holding ?i) (open ?p))
    :effect (and (inside ?i ?p) (not (holding ?i))))
  (:action open
    :parameters (?p - place)
    :effect (open ?p)))
