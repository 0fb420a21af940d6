(define (problem one-cocktail) (:domain bar)
  (:objects shaker1 - shaker left right - hand shot1 shot2 - shot gin tonic - ingredient
            gt - cocktail d1 d2 - dispenser l0 l1 l2 - level)
  (:init (ontable shaker1) (ontable shot1) (ontable shot2) (dispenses d1 gin) (dispenses d2 tonic)
         (clean shaker1) (clean shot1) (clean shot2) (empty shaker1) (empty shot1) (empty shot2)
         (handempty left) (handempty right) (shaker-empty-level shaker1 l0) (shaker-level shaker1 l0)
         (next l0 l1) (next l1 l2) (part1 gt gin) (part2 gt tonic))
  (:goal (contains shot1 gt)))
