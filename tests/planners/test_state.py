"""What a change implies by the actions that make it so (`implied`): (removed, added)."""

from __future__ import annotations

from kgplan.domains.formula import GroundAtom
from kgplan.domains.model import Domain
from kgplan.planners.state import State, Step, implied

RADIOS = """(define (domain radios) (:requirements :typing :negative-preconditions)
  (:types radio station)
  (:predicates (radio_on ?r - radio) (tuned_to ?r - radio ?s - station))
  (:action switch_on :parameters (?r - radio ?s - station) :precondition (not (radio_on ?r))
    :effect (and (radio_on ?r) (tuned_to ?r ?s)))
  (:action retune :parameters (?r - radio ?s ?t - station) :precondition (tuned_to ?r ?s)
    :effect (and (tuned_to ?r ?t) (not (tuned_to ?r ?s)))))"""
OBJECTS = {"radio": "radio", "jazz": "station", "news": "station"}
ON, JAZZ, NEWS = GroundAtom("radio_on", ("radio",)), GroundAtom("tuned_to", ("radio", "jazz")), \
    GroundAtom("tuned_to", ("radio", "news"))


def test_a_fact_every_applicable_action_making_the_change_removes_is_implied() -> None:
    domain = Domain.parse(RADIOS)
    after = State(domain, OBJECTS, {ON, JAZZ, NEWS})  # retuned to news, jazz left over
    assert set(State(domain, OBJECTS, {ON, JAZZ}).makers(NEWS, True)) == {Step("retune", ("radio", "jazz", "news"))}
    assert implied(after, [NEWS], []) == ({JAZZ: NEWS}, {})
    assert State(domain, OBJECTS, {ON, JAZZ}).makers(NEWS, True, limit=0) is None  # too many bindings to tell
    # switched on and tuned (it was off): the one action that does so removes nothing
    assert implied(State(domain, OBJECTS, {ON, NEWS}), [ON, NEWS], []) == ({}, {})


def test_actions_that_disagree_imply_nothing() -> None:
    """A second way to tune a playing radio that keeps the old station: nothing is common to both."""
    domain = Domain.parse(RADIOS.replace("(:action retune", """(:action add_station :parameters (?r - radio ?s ?t -
    station) :precondition (tuned_to ?r ?s) :effect (tuned_to ?r ?t))
  (:action retune"""))
    assert implied(State(domain, OBJECTS, {ON, JAZZ, NEWS}), [NEWS], []) == ({}, {})


def test_what_every_action_making_the_change_with_the_named_things_adds_is_implied() -> None:
    """Switched on, and the sentence names the news station: the one way to switch it on with it tunes to it."""
    domain = Domain.parse(RADIOS)
    after = State(domain, OBJECTS, {ON})
    assert implied(after, [ON], [], named={"radio", "news"}) == ({}, {NEWS: ON})
    assert implied(after, [ON], []) == ({}, {})  # no station named: switched on to either
    assert implied(after, [ON], [], named={"radio"}) == ({}, {})
    # a station named beside the radio tuned to it already: nothing more to add
    assert implied(State(domain, OBJECTS, {ON, NEWS}), [ON, NEWS], [], named={"radio", "news"}) == ({}, {})
