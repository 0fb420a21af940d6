; Household rearrangement in a partially observed home (issue 13: MCTS over a commonsense belief).
; The agent walks to a place (a container or a surface), opens containers, picks items up and puts
; them down; it carries any number of items. Where an item is stays unknown until the agent stands at
; its place while the place is open: (looked ?p) records that a place's contents have been seen.
(define (domain rearrange)
  (:requirements :strips :typing :negative-preconditions :equality)
  (:types room place item - object container surface - place)
  (:predicates
    (in_room ?p - place ?r - room)
    (agent_at ?p - place)
    (closed ?p - place)
    (looked ?p - place)
    (in ?i - item ?p - place)
    (holding ?i - item))
  (:action walk
    :parameters (?from - place ?to - place)
    :precondition (and (agent_at ?from) (not (= ?from ?to)))
    :effect (and (agent_at ?to) (not (agent_at ?from))))
  (:action open
    :parameters (?c - container)
    :precondition (and (agent_at ?c) (closed ?c))
    :effect (not (closed ?c)))
  (:action pick
    :parameters (?i - item ?p - place)
    :precondition (and (agent_at ?p) (in ?i ?p) (not (closed ?p)))
    :effect (and (holding ?i) (not (in ?i ?p))))
  (:action put
    :parameters (?i - item ?p - place)
    :precondition (and (agent_at ?p) (holding ?i) (not (closed ?p)))
    :effect (and (in ?i ?p) (not (holding ?i)))))
