(define (problem stack-three) (:domain stack-blocks)
  (:objects red green blue)
  (:init (clear red) (on red green) (ontable green) (clear blue) (ontable blue) (handempty))
  (:goal (and (on green blue) (on blue red))))
