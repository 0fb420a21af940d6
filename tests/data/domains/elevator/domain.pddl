; Miconic-ADL-like: stopping at a floor boards and drops off every passenger there (conditional
; effects over all passengers); VIPs are served before anyone else may board.
(define (domain lift)
  (:requirements :typing :adl)
  (:types passenger floor)
  (:predicates (origin ?p - passenger ?f - floor) (destin ?p - passenger ?f - floor)
               (above ?f1 ?f2 - floor) (boarded ?p - passenger) (served ?p - passenger)
               (lift-at ?f - floor) (vip ?p - passenger))
  (:action up
    :parameters (?f1 ?f2 - floor)
    :precondition (and (lift-at ?f1) (above ?f1 ?f2))
    :effect (and (lift-at ?f2) (not (lift-at ?f1))))
  (:action down
    :parameters (?f1 ?f2 - floor)
    :precondition (and (lift-at ?f1) (above ?f2 ?f1))
    :effect (and (lift-at ?f2) (not (lift-at ?f1))))
  (:action stop
    :parameters (?f - floor)
    :precondition (and (lift-at ?f)
                       (exists (?p - passenger) (or (and (boarded ?p) (destin ?p ?f))
                                                    (and (origin ?p ?f) (not (served ?p)) (not (boarded ?p)))))
                       (forall (?p - passenger)
                         (imply (and (origin ?p ?f) (not (vip ?p)) (not (served ?p)))
                                (forall (?q - passenger) (imply (vip ?q) (served ?q))))))
    :effect (and (forall (?p - passenger)
                   (when (and (boarded ?p) (destin ?p ?f)) (and (not (boarded ?p)) (served ?p))))
                 (forall (?p - passenger)
                   (when (and (origin ?p ?f) (not (served ?p))) (boarded ?p))))))
