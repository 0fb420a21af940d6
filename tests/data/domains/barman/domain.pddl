; Barman-like: two hands, shot glasses, one shaker with fill levels, dispensers, cocktails of two parts.
(define (domain bar)
  (:requirements :strips :typing :negative-preconditions)
  (:types hand level beverage dispenser container - object
          ingredient cocktail - beverage
          shot shaker - container)
  (:predicates (ontable ?c - container) (holding ?h - hand ?c - container) (handempty ?h - hand)
               (empty ?c - container) (contains ?c - container ?b - beverage) (clean ?c - container)
               (used ?c - container ?b - beverage) (dispenses ?d - dispenser ?i - ingredient)
               (shaker-empty-level ?s - shaker ?l - level) (shaker-level ?s - shaker ?l - level)
               (next ?l1 ?l2 - level) (unshaken ?s - shaker) (shaken ?s - shaker)
               (part1 ?c - cocktail ?i - ingredient) (part2 ?c - cocktail ?i - ingredient))
  (:action grasp
    :parameters (?h - hand ?c - container)
    :precondition (and (ontable ?c) (handempty ?h))
    :effect (and (not (ontable ?c)) (not (handempty ?h)) (holding ?h ?c)))
  (:action leave
    :parameters (?h - hand ?c - container)
    :precondition (holding ?h ?c)
    :effect (and (not (holding ?h ?c)) (handempty ?h) (ontable ?c)))
  (:action fill-shot
    :parameters (?s - shot ?i - ingredient ?h1 ?h2 - hand ?d - dispenser)
    :precondition (and (holding ?h1 ?s) (handempty ?h2) (dispenses ?d ?i) (empty ?s) (clean ?s))
    :effect (and (not (empty ?s)) (contains ?s ?i) (not (clean ?s)) (used ?s ?i)))
  (:action empty-shot
    :parameters (?h - hand ?s - shot ?b - beverage)
    :precondition (and (holding ?h ?s) (contains ?s ?b))
    :effect (and (not (contains ?s ?b)) (empty ?s)))
  (:action clean-shot
    :parameters (?s - shot ?b - beverage ?h1 ?h2 - hand)
    :precondition (and (holding ?h1 ?s) (handempty ?h2) (empty ?s) (used ?s ?b))
    :effect (and (clean ?s) (not (used ?s ?b))))
  (:action pour-shot-to-clean-shaker
    :parameters (?s - shot ?i - ingredient ?k - shaker ?h - hand ?l1 ?l2 - level)
    :precondition (and (holding ?h ?s) (contains ?s ?i) (empty ?k) (clean ?k)
                       (shaker-level ?k ?l1) (next ?l1 ?l2))
    :effect (and (not (contains ?s ?i)) (empty ?s) (contains ?k ?i) (not (empty ?k)) (not (clean ?k))
                 (unshaken ?k) (not (shaker-level ?k ?l1)) (shaker-level ?k ?l2)))
  (:action pour-shot-to-used-shaker
    :parameters (?s - shot ?i - ingredient ?k - shaker ?h - hand ?l1 ?l2 - level)
    :precondition (and (holding ?h ?s) (contains ?s ?i) (unshaken ?k) (shaker-level ?k ?l1) (next ?l1 ?l2))
    :effect (and (not (contains ?s ?i)) (contains ?k ?i) (empty ?s)
                 (not (shaker-level ?k ?l1)) (shaker-level ?k ?l2)))
  (:action shake
    :parameters (?c - cocktail ?i1 ?i2 - ingredient ?k - shaker ?h1 ?h2 - hand)
    :precondition (and (holding ?h1 ?k) (handempty ?h2) (contains ?k ?i1) (contains ?k ?i2)
                       (part1 ?c ?i1) (part2 ?c ?i2) (unshaken ?k))
    :effect (and (not (unshaken ?k)) (not (contains ?k ?i1)) (not (contains ?k ?i2))
                 (shaken ?k) (contains ?k ?c)))
  (:action pour-shaker-to-shot
    :parameters (?b - cocktail ?s - shot ?h - hand ?k - shaker ?l1 ?l2 - level)
    :precondition (and (holding ?h ?k) (shaken ?k) (empty ?s) (clean ?s) (contains ?k ?b)
                       (shaker-level ?k ?l1) (next ?l2 ?l1))
    :effect (and (not (clean ?s)) (not (empty ?s)) (contains ?s ?b) (used ?s ?b)
                 (shaker-level ?k ?l2) (not (shaker-level ?k ?l1))))
  (:action empty-shaker
    :parameters (?h - hand ?k - shaker ?b - cocktail ?l1 ?l2 - level)
    :precondition (and (holding ?h ?k) (contains ?k ?b) (shaken ?k) (shaker-level ?k ?l1)
                       (shaker-empty-level ?k ?l2))
    :effect (and (not (shaken ?k)) (not (shaker-level ?k ?l1)) (shaker-level ?k ?l2)
                 (not (contains ?k ?b)) (empty ?k)))
  (:action clean-shaker
    :parameters (?h1 ?h2 - hand ?k - shaker)
    :precondition (and (holding ?h1 ?k) (handempty ?h2) (empty ?k) (not (clean ?k)))
    :effect (clean ?k)))
