(define (problem three-cities) (:domain parcels)
  (:objects c1 c2 c3 - city d1 d2 d3 - depot a1 a2 a3 - airport t1 t2 t3 - truck p1 - plane
            k1 k2 k3 - parcel)
  (:init (in-city d1 c1) (in-city a1 c1) (in-city d2 c2) (in-city a2 c2) (in-city d3 c3) (in-city a3 c3)
         (at t1 d1) (at t2 a2) (at t3 d3) (at p1 a3)
         (at k1 d1) (in k2 t2) (at k3 a3))
  (:goal (and (at k1 d3) (at k2 d1) (at k3 d2))))
