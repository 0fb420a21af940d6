(define (problem two-balls) (:domain two-hands)
  (:objects rooma roomb - room b1 b2 - ball)
  (:init (robot-at rooma) (at b1 rooma) (at b2 rooma))
  (:goal (and (at b1 roomb) (at b2 roomb))))
