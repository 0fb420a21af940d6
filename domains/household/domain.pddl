; kgplan's bundled household domain: rooms joined by doors, furniture and containers in rooms,
; devices to switch, items that are somewhere (on furniture, inside a container, held by the agent
; or by a person), laundry, dishes, cups with drinks, and people who stay where they are.
(define (domain household)
  (:requirements :strips :typing :negative-preconditions :conditional-effects)
  (:types
    room agent person liquid - object
    fixture - object
    furniture container device window - fixture
    table shelf counter sofa bed - furniture
    fridge cabinet drawer laundrybasket washer dryer sink - container
    light tv faucet stove - device
    item - object
    food dish cup cloth phone book remote - item
  )
  (:predicates
    (agent_at ?a - agent ?r - room)
    (person_at ?p - person ?r - room)
    (connected ?from - room ?to - room)
    (in_room ?x - (either furniture container device window) ?r - room)
    (on ?i - item ?f - furniture)
    (inside ?i - item ?c - container)
    (holding ?a - agent ?i - item)
    (held_by ?i - item ?p - person)
    (closed ?c - (either fridge cabinet drawer washer dryer))
    (switched_on ?d - device)
    (window_open ?w - window)
    (phone_ringing ?p - phone)
    (clean ?x - (either cloth dish cup))
    (dry ?c - cloth)
    (cup_empty ?c - cup)
    (cup_contains ?c - cup ?l - liquid)
  )

  (:action move
    :parameters (?a - agent ?from - room ?to - room)
    :precondition (and (agent_at ?a ?from) (connected ?from ?to))
    :effect (and (not (agent_at ?a ?from)) (agent_at ?a ?to)))

  (:action pick_up
    :parameters (?a - agent ?i - item ?f - furniture ?r - room)
    :precondition (and (agent_at ?a ?r) (in_room ?f ?r) (on ?i ?f))
    :effect (and (not (on ?i ?f)) (holding ?a ?i)))

  (:action put_on
    :parameters (?a - agent ?i - item ?f - furniture ?r - room)
    :precondition (and (agent_at ?a ?r) (in_room ?f ?r) (holding ?a ?i))
    :effect (and (not (holding ?a ?i)) (on ?i ?f)))

  (:action take_out
    :parameters (?a - agent ?i - item ?c - container ?r - room)
    :precondition (and (agent_at ?a ?r) (in_room ?c ?r) (inside ?i ?c) (not (closed ?c)))
    :effect (and (not (inside ?i ?c)) (holding ?a ?i)))

  (:action put_in
    :parameters (?a - agent ?i - item ?c - container ?r - room)
    :precondition (and (agent_at ?a ?r) (in_room ?c ?r) (holding ?a ?i) (not (closed ?c)))
    :effect (and (not (holding ?a ?i)) (inside ?i ?c)))

  (:action open
    :parameters (?a - agent ?c - (either fridge cabinet drawer washer dryer) ?r - room)
    :precondition (and (agent_at ?a ?r) (in_room ?c ?r) (closed ?c))
    :effect (not (closed ?c)))

  (:action close
    :parameters (?a - agent ?c - (either fridge cabinet drawer washer dryer) ?r - room)
    :precondition (and (agent_at ?a ?r) (in_room ?c ?r) (not (closed ?c)))
    :effect (closed ?c))

  (:action switch_on
    :parameters (?a - agent ?d - device ?r - room)
    :precondition (and (agent_at ?a ?r) (in_room ?d ?r) (not (switched_on ?d)))
    :effect (switched_on ?d))

  (:action switch_off
    :parameters (?a - agent ?d - device ?r - room)
    :precondition (and (agent_at ?a ?r) (in_room ?d ?r) (switched_on ?d))
    :effect (not (switched_on ?d)))

  (:action open_window
    :parameters (?a - agent ?w - window ?r - room)
    :precondition (and (agent_at ?a ?r) (in_room ?w ?r) (not (window_open ?w)))
    :effect (window_open ?w))

  (:action close_window
    :parameters (?a - agent ?w - window ?r - room)
    :precondition (and (agent_at ?a ?r) (in_room ?w ?r) (window_open ?w))
    :effect (not (window_open ?w)))

  (:action hand_over
    :parameters (?a - agent ?i - item ?p - person ?r - room)
    :precondition (and (agent_at ?a ?r) (person_at ?p ?r) (holding ?a ?i))
    :effect (and (not (holding ?a ?i)) (held_by ?i ?p)))

  (:action take_from
    :parameters (?a - agent ?i - item ?p - person ?r - room)
    :precondition (and (agent_at ?a ?r) (person_at ?p ?r) (held_by ?i ?p))
    :effect (and (not (held_by ?i ?p)) (holding ?a ?i)))

  (:action answer_phone
    :parameters (?a - agent ?ph - phone)
    :precondition (and (holding ?a ?ph) (phone_ringing ?ph))
    :effect (not (phone_ringing ?ph)))

  (:action run_washer
    :parameters (?a - agent ?w - washer ?r - room)
    :precondition (and (agent_at ?a ?r) (in_room ?w ?r) (closed ?w))
    :effect (forall (?c - cloth) (when (inside ?c ?w) (and (clean ?c) (not (dry ?c))))))

  (:action run_dryer
    :parameters (?a - agent ?d - dryer ?r - room)
    :precondition (and (agent_at ?a ?r) (in_room ?d ?r) (closed ?d))
    :effect (forall (?c - cloth) (when (inside ?c ?d) (dry ?c))))

  (:action wash_dish
    :parameters (?a - agent ?x - (either dish cup) ?s - sink ?f - faucet ?r - room)
    :precondition (and (agent_at ?a ?r) (in_room ?s ?r) (in_room ?f ?r) (inside ?x ?s) (switched_on ?f))
    :effect (clean ?x))

  (:action pour
    :parameters (?a - agent ?c - cup ?l - liquid)
    :precondition (and (holding ?a ?c) (cup_empty ?c) (clean ?c))
    :effect (and (not (cup_empty ?c)) (cup_contains ?c ?l) (not (clean ?c))))

  (:action empty_cup
    :parameters (?a - agent ?c - cup ?l - liquid)
    :precondition (and (holding ?a ?c) (cup_contains ?c ?l))
    :effect (and (cup_empty ?c) (not (cup_contains ?c ?l))))
)
