; Childsnack-like: make sandwiches (gluten-free for allergic children), put them on trays, carry
; the trays to the tables and serve. Sandwiches that do not exist yet are objects too.
(define (domain snacks)
  (:requirements :typing)
  (:types child bread content sandwich tray place)
  (:constants kitchen - place)
  (:predicates (at-kitchen-bread ?b - bread) (at-kitchen-content ?c - content)
               (at-kitchen-sandwich ?s - sandwich) (no-gluten-bread ?b - bread)
               (no-gluten-content ?c - content) (ontray ?s - sandwich ?t - tray)
               (no-gluten-sandwich ?s - sandwich) (allergic ?c - child) (not-allergic ?c - child)
               (served ?c - child) (waiting ?c - child ?p - place) (at ?t - tray ?p - place)
               (notexist ?s - sandwich))
  (:action make-sandwich-no-gluten
    :parameters (?s - sandwich ?b - bread ?c - content)
    :precondition (and (at-kitchen-bread ?b) (at-kitchen-content ?c) (no-gluten-bread ?b)
                       (no-gluten-content ?c) (notexist ?s))
    :effect (and (not (at-kitchen-bread ?b)) (not (at-kitchen-content ?c)) (at-kitchen-sandwich ?s)
                 (no-gluten-sandwich ?s) (not (notexist ?s))))
  (:action make-sandwich
    :parameters (?s - sandwich ?b - bread ?c - content)
    :precondition (and (at-kitchen-bread ?b) (at-kitchen-content ?c) (notexist ?s))
    :effect (and (not (at-kitchen-bread ?b)) (not (at-kitchen-content ?c)) (at-kitchen-sandwich ?s)
                 (not (notexist ?s))))
  (:action put-on-tray
    :parameters (?s - sandwich ?t - tray)
    :precondition (and (at-kitchen-sandwich ?s) (at ?t kitchen))
    :effect (and (not (at-kitchen-sandwich ?s)) (ontray ?s ?t)))
  (:action serve-no-gluten
    :parameters (?s - sandwich ?c - child ?t - tray ?p - place)
    :precondition (and (allergic ?c) (ontray ?s ?t) (waiting ?c ?p) (no-gluten-sandwich ?s) (at ?t ?p))
    :effect (and (not (ontray ?s ?t)) (served ?c)))
  (:action serve
    :parameters (?s - sandwich ?c - child ?t - tray ?p - place)
    :precondition (and (not-allergic ?c) (waiting ?c ?p) (ontray ?s ?t) (at ?t ?p))
    :effect (and (not (ontray ?s ?t)) (served ?c)))
  (:action move-tray
    :parameters (?t - tray ?from ?to - place)
    :precondition (at ?t ?from)
    :effect (and (not (at ?t ?from)) (at ?t ?to))))
