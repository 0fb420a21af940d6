(define (problem two-cities) (:domain parcels)
  (:objects north south - city n-depot s-depot - depot n-port s-port - airport
            n-truck s-truck - truck jet - plane box1 box2 - parcel)
  (:init (in-city n-depot north) (in-city n-port north) (in-city s-depot south) (in-city s-port south)
         (at n-truck n-depot) (at s-truck s-port) (at jet n-port)
         (at box1 n-depot) (at box2 s-port))
  (:goal (and (at box1 s-depot) (at box2 n-port))))
