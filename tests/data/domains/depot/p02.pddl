; A crate already in the truck, one hoist already lifting a crate.
(define (problem loaded-truck) (:domain crates)
  (:objects d1 - depot s1 s2 - distributor t1 - truck h1 h2 h3 - hoist p1 p2 p3 - pallet c1 c2 c3 - crate)
  (:init (at p1 d1) (at p2 s1) (at p3 s2) (clear p2) (clear p3) (clear c1)
         (at t1 d1) (at h1 d1) (available h1) (at h2 s1) (at h3 s2) (available h3)
         (at c1 d1) (on c1 p1) (in c2 t1) (lifting h2 c3))
  (:goal (and (on c1 p3) (on c2 p2) (on c3 c2))))
