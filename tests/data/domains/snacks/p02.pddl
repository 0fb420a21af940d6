; A sandwich is already made and on a tray; one tray is already at a table.
(define (problem three-children) (:domain snacks)
  (:objects amy ben cat - child b1 b2 b3 - bread c1 c2 c3 - content t1 t2 - tray table1 table2 - place
            s1 s2 s3 s4 - sandwich)
  (:init (at t1 kitchen) (at t2 table2) (at-kitchen-bread b1) (at-kitchen-bread b2) (at-kitchen-bread b3)
         (at-kitchen-content c1) (at-kitchen-content c2) (at-kitchen-content c3)
         (no-gluten-bread b2) (no-gluten-content c3)
         (allergic cat) (not-allergic amy) (not-allergic ben)
         (waiting amy table1) (waiting ben table2) (waiting cat table1)
         (ontray s1 t1) (notexist s2) (notexist s3) (notexist s4))
  (:goal (and (served amy) (served ben) (served cat))))
