; Several sandwiches do not exist yet at the start (notexist holds for many at once).
(define (problem two-children) (:domain snacks)
  (:objects amy ben - child b1 b2 - bread c1 c2 - content tray1 - tray table1 table2 - place s1 s2 s3 - sandwich)
  (:init (at tray1 kitchen) (at-kitchen-bread b1) (at-kitchen-bread b2) (at-kitchen-content c1)
         (at-kitchen-content c2) (no-gluten-bread b1) (no-gluten-content c2)
         (allergic amy) (not-allergic ben) (waiting amy table1) (waiting ben table2)
         (notexist s1) (notexist s2) (notexist s3))
  (:goal (and (served amy) (served ben))))
