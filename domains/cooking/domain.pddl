; Cooking World (TextWorld-Express) for exploration. Rooms seen through an exit but never entered are
; placeholders (unknown ?l), merged into the real room when entered; containers seen closed and never
; looked into are (unexplored ?c); the recipe is known after reading the cookbook.
(define (domain cooking)
  (:requirements :adl)
  (:types location direction thing - object item container device - thing)
  (:predicates
    (at ?l - location) (visited ?l - location) (unknown ?l - location) (is_kitchen ?l - location)
    (connected ?a - location ?d - direction ?b - location)
    (door_closed ?a - location ?b - location)
    (placed ?c - container ?l - location) (device_in ?v - device ?l - location)
    (closed ?c - container) (unexplored ?c - container)
    (in ?i - item ?c - container) (item_at ?i - item ?l - location) (holding ?i - item)
    (is_knife ?i - item) (is_cookbook ?i - item)
    (uncut ?i - item) (sliced ?i - item) (diced ?i - item) (chopped ?i - item)
    (raw ?i - item) (fried ?i - item) (roasted ?i - item) (grilled ?i - item)
    (fries ?v - device) (roasts ?v - device) (grills ?v - device)
    (recipe_read) (needs ?i - item)
    (want_uncut ?i - item) (want_sliced ?i - item) (want_diced ?i - item) (want_chopped ?i - item)
    (want_raw ?i - item) (want_fried ?i - item) (want_roasted ?i - item) (want_grilled ?i - item)
    (meal_ready) (meal_eaten))
  (:action move
    :parameters (?a - location ?d - direction ?b - location)
    :precondition (and (at ?a) (connected ?a ?d ?b) (not (door_closed ?a ?b)))
    :effect (and (at ?b) (not (at ?a))))
  (:action open_door
    :parameters (?a - location ?d - direction ?b - location)
    :precondition (and (at ?a) (connected ?a ?d ?b) (door_closed ?a ?b))
    :effect (and (not (door_closed ?a ?b)) (not (door_closed ?b ?a))))
  (:action open
    :parameters (?c - container ?l - location)
    :precondition (and (at ?l) (placed ?c ?l) (closed ?c))
    :effect (not (closed ?c)))
  (:action take_from
    :parameters (?i - item ?c - container ?l - location)
    :precondition (and (at ?l) (placed ?c ?l) (in ?i ?c) (not (closed ?c)))
    :effect (and (holding ?i) (not (in ?i ?c))))
  (:action take
    :parameters (?i - item ?l - location)
    :precondition (and (at ?l) (item_at ?i ?l))
    :effect (and (holding ?i) (not (item_at ?i ?l))))
  (:action read
    :parameters (?b - item)
    :precondition (and (holding ?b) (is_cookbook ?b))
    :effect (recipe_read))
  (:action slice
    :parameters (?i - item ?k - item)
    :precondition (and (holding ?i) (holding ?k) (is_knife ?k) (uncut ?i))
    :effect (and (sliced ?i) (not (uncut ?i))))
  (:action dice
    :parameters (?i - item ?k - item)
    :precondition (and (holding ?i) (holding ?k) (is_knife ?k) (uncut ?i))
    :effect (and (diced ?i) (not (uncut ?i))))
  (:action chop
    :parameters (?i - item ?k - item)
    :precondition (and (holding ?i) (holding ?k) (is_knife ?k) (uncut ?i))
    :effect (and (chopped ?i) (not (uncut ?i))))
  (:action fry
    :parameters (?i - item ?v - device ?l - location)
    :precondition (and (at ?l) (device_in ?v ?l) (fries ?v) (holding ?i) (raw ?i))
    :effect (and (fried ?i) (not (raw ?i))))
  (:action roast
    :parameters (?i - item ?v - device ?l - location)
    :precondition (and (at ?l) (device_in ?v ?l) (roasts ?v) (holding ?i) (raw ?i))
    :effect (and (roasted ?i) (not (raw ?i))))
  (:action grill
    :parameters (?i - item ?v - device ?l - location)
    :precondition (and (at ?l) (device_in ?v ?l) (grills ?v) (holding ?i) (raw ?i))
    :effect (and (grilled ?i) (not (raw ?i))))
  (:action prepare_meal
    :parameters (?l - location)
    :precondition (and (at ?l) (is_kitchen ?l) (recipe_read)
      (forall (?i - item) (imply (needs ?i) (and (holding ?i)
        (imply (want_uncut ?i) (uncut ?i)) (imply (want_sliced ?i) (sliced ?i))
        (imply (want_diced ?i) (diced ?i)) (imply (want_chopped ?i) (chopped ?i))
        (imply (want_raw ?i) (raw ?i)) (imply (want_fried ?i) (fried ?i))
        (imply (want_roasted ?i) (roasted ?i)) (imply (want_grilled ?i) (grilled ?i))))))
    :effect (meal_ready))
  (:action eat_meal
    :parameters ()
    :precondition (meal_ready)
    :effect (meal_eaten)))
