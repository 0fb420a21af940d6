; TextWorld's cooking games (tw-make tw-cooking) for exploration. Rooms seen through an exit but never
; entered are placeholders (unknown ?r), merged into the real room when the way there is learnt; a door
; stands on one exit of a room (each side is seen from its own room); containers seen closed and never
; looked into are (unexplored ?c); the recipe is known once the cookbook is read.
(define (domain textworld_cooking)
  (:requirements :adl)
  (:types room direction door furniture item - object container supporter - furniture)
  (:predicates
    (at ?r - room) (visited ?r - room) (unknown ?r - room)
    (connected ?a - room ?d - direction ?b - room)
    (door_on ?a - room ?d - direction ?x - door) (door_closed ?x - door)
    (placed ?f - furniture ?r - room) (closed ?c - container) (unexplored ?c - container)
    (in ?i - item ?c - container) (on ?i - item ?s - supporter) (lying ?i - item ?r - room)
    (holding ?i - item) (sharp ?k - item) (cookbook ?b - item)
    (uncut ?i - item) (sliced ?i - item) (diced ?i - item) (chopped ?i - item)
    (fried ?i - item) (roasted ?i - item) (grilled ?i - item)
    (fries ?f - furniture) (roasts ?f - furniture) (grills ?f - furniture)
    (recipe_read) (kitchen ?r - room) (needs ?i - item)
    (want_sliced ?i - item) (want_diced ?i - item) (want_chopped ?i - item)
    (want_fried ?i - item) (want_roasted ?i - item) (want_grilled ?i - item)
    (meal_ready) (meal_eaten))
  (:action move
    :parameters (?a - room ?d - direction ?b - room)
    :precondition (and (at ?a) (connected ?a ?d ?b)
                       (not (exists (?x - door) (and (door_on ?a ?d ?x) (door_closed ?x)))))
    :effect (and (at ?b) (not (at ?a))))
  (:action open_door
    :parameters (?x - door ?a - room ?d - direction)
    :precondition (and (at ?a) (door_on ?a ?d ?x) (door_closed ?x))
    :effect (not (door_closed ?x)))
  (:action open
    :parameters (?c - container ?r - room)
    :precondition (and (at ?r) (placed ?c ?r) (closed ?c))
    :effect (not (closed ?c)))
  (:action take_from
    :parameters (?i - item ?c - container ?r - room)
    :precondition (and (at ?r) (placed ?c ?r) (in ?i ?c) (not (closed ?c)))
    :effect (and (holding ?i) (not (in ?i ?c))))
  (:action take_off
    :parameters (?i - item ?s - supporter ?r - room)
    :precondition (and (at ?r) (placed ?s ?r) (on ?i ?s))
    :effect (and (holding ?i) (not (on ?i ?s))))
  (:action take
    :parameters (?i - item ?r - room)
    :precondition (and (at ?r) (lying ?i ?r))
    :effect (and (holding ?i) (not (lying ?i ?r))))
  (:action read
    :parameters (?b - item ?r - room)
    :precondition (and (at ?r) (cookbook ?b)
                       (or (holding ?b) (lying ?b ?r)
                           (exists (?s - supporter) (and (on ?b ?s) (placed ?s ?r)))
                           (exists (?c - container) (and (in ?b ?c) (placed ?c ?r) (not (closed ?c))))))
    :effect (recipe_read))
  (:action slice
    :parameters (?i - item ?k - item)
    :precondition (and (holding ?i) (holding ?k) (sharp ?k) (uncut ?i))
    :effect (and (sliced ?i) (not (uncut ?i))))
  (:action dice
    :parameters (?i - item ?k - item)
    :precondition (and (holding ?i) (holding ?k) (sharp ?k) (uncut ?i))
    :effect (and (diced ?i) (not (uncut ?i))))
  (:action chop
    :parameters (?i - item ?k - item)
    :precondition (and (holding ?i) (holding ?k) (sharp ?k) (uncut ?i))
    :effect (and (chopped ?i) (not (uncut ?i))))
  (:action fry
    :parameters (?i - item ?f - furniture ?r - room)
    :precondition (and (at ?r) (placed ?f ?r) (fries ?f) (holding ?i)
                       (not (fried ?i)) (not (roasted ?i)) (not (grilled ?i)))
    :effect (fried ?i))
  (:action roast
    :parameters (?i - item ?f - furniture ?r - room)
    :precondition (and (at ?r) (placed ?f ?r) (roasts ?f) (holding ?i)
                       (not (fried ?i)) (not (roasted ?i)) (not (grilled ?i)))
    :effect (roasted ?i))
  (:action grill
    :parameters (?i - item ?f - furniture ?r - room)
    :precondition (and (at ?r) (placed ?f ?r) (grills ?f) (holding ?i)
                       (not (fried ?i)) (not (roasted ?i)) (not (grilled ?i)))
    :effect (grilled ?i))
  (:action prepare_meal
    :parameters (?r - room)
    :precondition (and (at ?r) (kitchen ?r) (recipe_read)
      (forall (?i - item) (imply (needs ?i) (and (holding ?i)
        (imply (want_sliced ?i) (sliced ?i)) (imply (want_diced ?i) (diced ?i))
        (imply (want_chopped ?i) (chopped ?i)) (imply (want_fried ?i) (fried ?i))
        (imply (want_roasted ?i) (roasted ?i)) (imply (want_grilled ?i) (grilled ?i))))))
    :effect (and (meal_ready) (forall (?i - item) (when (needs ?i) (not (holding ?i))))))
  (:action eat_meal
    :parameters ()
    :precondition (meal_ready)
    :effect (and (meal_eaten) (not (meal_ready)))))
