; Goals with exists and imply; the robot starts holding a cloth.
(define (problem lights-and-cloth) (:domain tidy-kitchen)
  (:objects kitchen hall den - room rob - robot l1 l2 l3 - lamp tv1 - tv k1 - kettle rag - cloth c1 - cup)
  (:init (robot-at rob kitchen) (connected hall kitchen) (connected kitchen hall) (connected hall den)
         (connected den hall) (in l1 hall) (in l2 den) (in l3 kitchen) (in tv1 den) (in k1 kitchen) (in c1 den)
         (holding rob rag) (switched-on l2))
  (:goal (and (clean rag) (exists (?l - lamp) (and (switched-on ?l) (in ?l hall)))
              (imply (switched-on l2) (in rag den)) (tidy den))))
