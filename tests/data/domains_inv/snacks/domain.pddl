; Childsnack-like: sandwiches are made in the kitchen from one bread and one filling each,
; put on a tray and served to a waiting child.
(define (domain snacks)
  (:requirements :strips :typing)
  (:types bread filling sandwich tray child)
  (:predicates (bread_in_kitchen ?b - bread) (filling_in_kitchen ?f - filling)
               (sandwich_in_kitchen ?s - sandwich) (unmade ?s - sandwich)
               (on_tray ?s - sandwich ?t - tray) (served ?c - child) (waiting ?c - child))
  (:action make
    :parameters (?s - sandwich ?b - bread ?f - filling)
    :precondition (and (unmade ?s) (bread_in_kitchen ?b) (filling_in_kitchen ?f))
    :effect (and (not (unmade ?s)) (sandwich_in_kitchen ?s) (not (bread_in_kitchen ?b))
                 (not (filling_in_kitchen ?f))))
  (:action put_on_tray
    :parameters (?s - sandwich ?t - tray)
    :precondition (sandwich_in_kitchen ?s)
    :effect (and (not (sandwich_in_kitchen ?s)) (on_tray ?s ?t)))
  (:action serve
    :parameters (?s - sandwich ?t - tray ?c - child)
    :precondition (and (on_tray ?s ?t) (waiting ?c))
    :effect (and (not (on_tray ?s ?t)) (not (waiting ?c)) (served ?c))))
