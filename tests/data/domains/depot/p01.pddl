; Two crates are clear at once (and two pallets): a legal start for the "clear" groups per surface.
(define (problem two-stacks) (:domain crates)
  (:objects dep - depot dist - distributor lorry - truck h0 h1 - hoist pal0 pal1 - pallet crate0 crate1 - crate)
  (:init (at pal0 dep) (at pal1 dist) (clear crate0) (clear crate1)
         (at lorry dist) (at h0 dep) (available h0) (at h1 dist) (available h1)
         (at crate0 dep) (on crate0 pal0) (at crate1 dist) (on crate1 pal1))
  (:goal (and (on crate0 pal1) (on crate1 crate0))))
