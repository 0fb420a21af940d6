"""Tests for mutex-group synthesis with Fast Downward's invariant finder."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from domains.invariants import InvariantPart, MutexGroup, synthesize_invariants

TINY_DOMAIN = """
(define (domain tiny)
  (:requirements :strips :typing)
  (:types room item robot phone)
  (:predicates
    (at ?r - robot ?x - room) (in ?i - item ?x - room) (holding ?r - robot ?i - item)
    (handempty ?r - robot) (broken ?i - item) (lit ?x - room) (ringing ?p - phone))
  (:action move
    :parameters (?r - robot ?from - room ?to - room)
    :precondition (at ?r ?from)
    :effect (and (not (at ?r ?from)) (at ?r ?to)))
  (:action pick
    :parameters (?r - robot ?i - item ?x - room)
    :precondition (and (at ?r ?x) (in ?i ?x) (handempty ?r))
    :effect (and (not (in ?i ?x)) (not (handempty ?r)) (holding ?r ?i)))
  (:action drop
    :parameters (?r - robot ?i - item ?x - room)
    :precondition (and (at ?r ?x) (holding ?r ?i))
    :effect (and (not (holding ?r ?i)) (handempty ?r) (in ?i ?x)))
  (:action smash
    :parameters (?r - robot ?i - item)
    :precondition (holding ?r ?i)
    :effect (and (not (holding ?r ?i)) (handempty ?r) (broken ?i)))
  (:action power_off
    :parameters (?r - robot ?x - room)
    :precondition (at ?r ?x)
    :effect (not (at ?r ?x)))
  (:action switch_on
    :parameters (?x - room)
    :effect (lit ?x))
  (:action answer
    :parameters (?p - phone)
    :precondition (ringing ?p)
    :effect (not (ringing ?p))))
"""

AT = MutexGroup((InvariantPart("at", (0,), 1),), exactly_one=False)
# {holding, in} alone is an invariant too, but implied by this one (which is exactly-one).
ITEM = MutexGroup(
    (
        InvariantPart("broken", (0,), None),
        InvariantPart("holding", (1,), 0),
        InvariantPart("in", (0,), 1),
    ),
    exactly_one=True,
)
HAND = MutexGroup(
    (InvariantPart("handempty", (0,), None), InvariantPart("holding", (0,), 1)), exactly_one=True
)


def _problem(init: str, goal: str = "(:goal (and))") -> str:
    return f"""(define (problem p) (:domain tiny)
      (:objects r - robot a b - item k l - room) (:init {init}) {goal})"""


def test_tiny_domain_groups() -> None:
    assert synthesize_invariants(TINY_DOMAIN) == [AT, ITEM, HAND]


def test_describe() -> None:
    assert AT.describe() == "at most one of at(?x, *) holds for each ?x"
    assert HAND.describe() == "exactly one of handempty(?x), holding(?x, *) holds for each ?x"


def test_problem_initial_state_filters_violated_groups() -> None:
    consistent = _problem("(at r k) (handempty r) (in a k) (in b l)", goal="")
    assert synthesize_invariants(TINY_DOMAIN, consistent) == [AT, ITEM, HAND]
    two_rooms = _problem("(at r k) (at r l) (handempty r) (in a k)")
    assert synthesize_invariants(TINY_DOMAIN, two_rooms) == [ITEM, HAND]


def test_quiet_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    synthesize_invariants(TINY_DOMAIN)
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError):
        synthesize_invariants(TINY_DOMAIN.replace("(at ?r ?to)", "(at ?r ?nowhere)"))


@pytest.mark.dataset
def test_l3mp_household_item_location_group() -> None:
    root = Path(os.environ.get("KGPLAN_L3MP_DIR", ""))
    domains = sorted(root.glob("*/domain.pddl")) if root.name else []
    if not domains:
        pytest.skip("KGPLAN_L3MP_DIR unset or without <seed>/domain.pddl")
    text = re.sub(r"\(either[^()]*\)", "object", domains[0].read_text())
    groups = {frozenset(p.predicate for p in g.parts): g for g in synthesize_invariants(text)}
    places = ["fridge", "laundrybasket", "dryer", "washer", "table", "kitchensink", "shelf"]
    item = frozenset(["in_agent_hand", "in_person_hand", *(f"placed_at_{p}" for p in places)])
    assert item in groups
    assert all(p.key_positions == (0,) and p.counted_position == 1 for p in groups[item].parts)
    assert groups[frozenset(["agent_in_room"])].exactly_one
    assert frozenset(["glass_empty", "glass_has_liquid"]) in groups
