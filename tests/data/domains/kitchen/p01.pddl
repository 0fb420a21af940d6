(define (problem wash-a-cup) (:domain tidy-kitchen)
  (:objects kitchen hall - room rob - robot lamp1 - lamp tv1 - tv kettle1 - kettle mug - cup dish1 - plate
            novel - book)
  (:init (robot-at rob hall) (connected hall kitchen) (connected kitchen hall)
         (in lamp1 kitchen) (in tv1 hall) (in kettle1 kitchen) (in mug kitchen) (in dish1 kitchen)
         (clean dish1) (in novel hall) (switched-on tv1))
  (:goal (and (clean mug) (tidy kitchen) (not (switched-on tv1)))))
