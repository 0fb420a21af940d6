; Either types, negative preconditions and ADL: a robot switches devices, washes dishes and tidies
; a room (a forall effect with a condition) before it may leave it tidy.
(define (domain tidy-kitchen)
  (:requirements :typing :negative-preconditions :conditional-effects :universal-preconditions
                 :existential-preconditions :disjunctive-preconditions)
  (:types room robot - object
          device item - object
          lamp tv kettle - device
          cup plate cloth book - item)
  (:predicates (robot-at ?r - robot ?x - room) (connected ?a ?b - room)
               (in ?x - (either device item) ?r - room)
               (switched-on ?d - (either lamp tv))
               (boiling ?k - kettle)
               (clean ?x - (either cup plate cloth))
               (holding ?r - robot ?i - item)
               (put-away ?i - item) (tidy ?x - room))
  (:action move
    :parameters (?r - robot ?from ?to - room)
    :precondition (and (robot-at ?r ?from) (connected ?from ?to) (not (robot-at ?r ?to)))
    :effect (and (not (robot-at ?r ?from)) (robot-at ?r ?to)))
  (:action switch-on
    :parameters (?r - robot ?d - (either lamp tv) ?x - room)
    :precondition (and (robot-at ?r ?x) (in ?d ?x) (not (switched-on ?d)))
    :effect (switched-on ?d))
  (:action switch-off
    :parameters (?r - robot ?d - (either lamp tv) ?x - room)
    :precondition (and (robot-at ?r ?x) (in ?d ?x) (switched-on ?d))
    :effect (not (switched-on ?d)))
  (:action boil
    :parameters (?r - robot ?k - kettle ?x - room)
    :precondition (and (robot-at ?r ?x) (in ?k ?x)
                       (or (exists (?l - lamp) (and (in ?l ?x) (switched-on ?l)))
                           (exists (?t - tv) (and (in ?t ?x) (switched-on ?t)))))
    :effect (boiling ?k))
  (:action pick
    :parameters (?r - robot ?i - item ?x - room)
    :precondition (and (robot-at ?r ?x) (in ?i ?x) (forall (?j - item) (not (holding ?r ?j))))
    :effect (and (holding ?r ?i) (not (in ?i ?x)) (not (put-away ?i))))
  (:action drop
    :parameters (?r - robot ?i - item ?x - room)
    :precondition (and (robot-at ?r ?x) (holding ?r ?i))
    :effect (and (not (holding ?r ?i)) (in ?i ?x) (not (tidy ?x))))
  (:action wash
    :parameters (?r - robot ?d - (either cup plate cloth) ?k - kettle ?x - room)
    :precondition (and (holding ?r ?d) (robot-at ?r ?x) (in ?k ?x) (boiling ?k))
    :effect (clean ?d))
  (:action tidy-up
    :parameters (?r - robot ?x - room)
    :precondition (and (robot-at ?r ?x)
                       (forall (?d - (either cup plate)) (imply (in ?d ?x) (clean ?d))))
    :effect (and (tidy ?x)
                 (forall (?i - item) (when (in ?i ?x) (put-away ?i)))
                 (forall (?t - tv) (when (and (in ?t ?x) (switched-on ?t)) (not (switched-on ?t)))))))
