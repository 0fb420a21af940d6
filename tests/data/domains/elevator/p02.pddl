; A VIP waits upstairs; one passenger is already boarded, one already served.
(define (problem vip-first) (:domain lift)
  (:objects f0 f1 f2 f3 - floor ann bob cy dee - passenger)
  (:init (above f0 f1) (above f0 f2) (above f0 f3) (above f1 f2) (above f1 f3) (above f2 f3) (lift-at f1)
         (origin ann f1) (destin ann f0) (origin bob f3) (destin bob f0) (vip bob)
         (origin cy f2) (destin cy f3) (boarded cy) (origin dee f0) (destin dee f1) (served dee))
  (:goal (and (forall (?p - passenger) (imply (vip ?p) (served ?p)))
              (exists (?p - passenger) (and (served ?p) (destin ?p f3)))
              (served ann))))
