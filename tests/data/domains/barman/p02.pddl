; A shot glass is already full of rum (not clean, not empty) and one hand is busy.
(define (problem cocktail-and-shot) (:domain bar)
  (:objects shaker1 - shaker left right - hand shot1 shot2 shot3 - shot rum lime mint - ingredient
            mojito - cocktail d1 d2 d3 - dispenser l0 l1 l2 - level)
  (:init (ontable shaker1) (holding right shot3) (ontable shot1) (ontable shot2)
         (dispenses d1 rum) (dispenses d2 lime) (dispenses d3 mint)
         (clean shaker1) (clean shot1) (clean shot2) (empty shaker1) (empty shot1) (empty shot2)
         (contains shot3 rum) (used shot3 rum)
         (handempty left) (shaker-empty-level shaker1 l0) (shaker-level shaker1 l0)
         (next l0 l1) (next l1 l2) (part1 mojito rum) (part2 mojito lime))
  (:goal (and (contains shot1 mojito) (contains shot2 mint) (ontable shot3))))
