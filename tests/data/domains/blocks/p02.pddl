; The hand starts holding a block: (handempty) is false at the start.
(define (problem reverse-tower) (:domain stack-blocks)
  (:objects a b c d)
  (:init (holding d) (clear a) (on a b) (on b c) (ontable c))
  (:goal (and (on c b) (on b a) (on a d) (ontable d))))
