; Satellite-like: each satellite powers one instrument at a time; instruments are calibrated
; after switching on and take images in a direction the satellite points to.
(define (domain orbit)
  (:requirements :strips :typing)
  (:types satellite instrument direction mode)
  (:predicates (on_board ?i - instrument ?s - satellite) (supports ?i - instrument ?m - mode)
               (pointing ?s - satellite ?d - direction) (power_avail ?s - satellite)
               (power_on ?i - instrument) (calibrated ?i - instrument)
               (have_image ?d - direction ?m - mode))
  (:action turn_to
    :parameters (?s - satellite ?to - direction ?from - direction)
    :precondition (pointing ?s ?from)
    :effect (and (pointing ?s ?to) (not (pointing ?s ?from))))
  (:action switch_on
    :parameters (?i - instrument ?s - satellite)
    :precondition (and (on_board ?i ?s) (power_avail ?s))
    :effect (and (power_on ?i) (not (calibrated ?i)) (not (power_avail ?s))))
  (:action switch_off
    :parameters (?i - instrument ?s - satellite)
    :precondition (and (on_board ?i ?s) (power_on ?i))
    :effect (and (not (power_on ?i)) (power_avail ?s)))
  (:action calibrate
    :parameters (?s - satellite ?i - instrument)
    :precondition (and (on_board ?i ?s) (power_on ?i))
    :effect (calibrated ?i))
  (:action take_image
    :parameters (?s - satellite ?d - direction ?i - instrument ?m - mode)
    :precondition (and (calibrated ?i) (on_board ?i ?s) (supports ?i ?m) (power_on ?i) (pointing ?s ?d))
    :effect (have_image ?d ?m)))
