; One ball is already in the right hand.
(define (problem five-balls) (:domain two-hands)
  (:objects r1 r2 r3 - room b1 b2 b3 b4 b5 - ball)
  (:init (robot-at r2) (at b1 r1) (at b2 r1) (at b3 r2) (at b4 r3) (carry b5 right) (busy right))
  (:goal (and (at b1 r3) (at b2 r3) (at b4 r1) (at b5 r1) (carry b3 left))))
