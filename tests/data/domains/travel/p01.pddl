; The direct road home -> office costs 10; the way round through a, b, c costs 4.
(define (problem detour) (:domain courier)
  (:objects home a b c office - place me - courier mail - letter)
  (:init (courier-at me home) (letter-at mail home)
         (road home office) (road office home) (road home a) (road a b) (road b c) (road c office)
         (= (travel-cost home office) 10) (= (travel-cost office home) 10) (= (travel-cost home a) 1)
         (= (travel-cost a b) 1) (= (travel-cost b c) 1) (= (travel-cost c office) 1))
  (:goal (letter-at mail office))
  (:metric minimize (total-cost)))
