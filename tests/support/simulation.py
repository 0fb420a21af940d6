"""A stand-in of the L3M+P simulator domain (domain `simulation`; generated per run, so not bundled) with the types
and predicates that domains/l3mp/domain.toml's worked examples use, and that domain.toml beside it."""

from __future__ import annotations

import shutil
from pathlib import Path

from kgplan.domains.model import BUNDLED, Domain, Problem
from kgplan.graph.world import WorldGraph

SIMULATION = """(define (domain simulation) (:requirements :typing :negative-preconditions)
  (:types room person light window cloth table shelf shelf_level phone kitchenware liquid pen sink tv book
    remote agent channel laundrybasket - object kitchensink - sink liquidcontainer - kitchenware)
  (:predicates (person_in_room ?a - person ?b - room)
    (room_has ?a - room ?b - (either light window table shelf tv laundrybasket))
    (light_on ?a - light) (tv_on ?a - tv) (tv_playing_channel ?a - tv ?b - channel)
    (faucet_on ?a - sink) (window_open ?a - window) (phone_ringing ?a - phone)
    (cloth_is_clean ?a - cloth)
    (cloth_is_dry ?a - cloth) (dish_is_clean ?a - kitchenware)
    (in_person_hand ?a - (either pen cloth phone kitchenware book remote) ?b - person)
    (in_agent_hand ?a - (either pen cloth phone kitchenware book) ?b - agent)
    (placed_at_table ?a - (either cloth phone kitchenware book remote) ?b - table)
    (placed_at_shelf ?a - (either cloth phone kitchenware book) ?b - shelf)
    (placed_at_laundrybasket ?a - cloth ?b - laundrybasket)
    (shelf_has_level ?a - shelf ?b - shelf_level)
    (on_shelf_level ?a - (either cloth kitchenware) ?b - shelf_level)
    (placed_at_kitchensink ?a - kitchenware ?b - kitchensink)
    (glass_empty ?a - liquidcontainer) (glass_has_liquid ?a - liquidcontainer ?b - liquid))
  (:action pick :parameters (?a - cloth ?b - person ?t - table ?s - shelf ?l - light ?w - window ?p - phone
                             ?k - kitchenware ?lb - laundrybasket)
    :effect (and (in_person_hand ?a ?b) (not (placed_at_table ?a ?t)) (not (placed_at_shelf ?a ?s))
                 (not (placed_at_laundrybasket ?a ?lb)) (light_on ?l)
                 (window_open ?w) (phone_ringing ?p) (not (cloth_is_clean ?a)) (not (cloth_is_dry ?a))
                 (dish_is_clean ?k)))
  (:action act :parameters (?c - cloth ?s - shelf ?v - shelf_level ?l - light ?w - window ?k - kitchenware
                            ?n - kitchensink ?p - pen ?h - person ?t - tv ?r - agent ?ch - channel)
    :effect (and (placed_at_shelf ?c ?s) (on_shelf_level ?c ?v) (not (light_on ?l)) (window_open ?w)
                 (cloth_is_clean ?c) (cloth_is_dry ?c) (dish_is_clean ?k) (placed_at_kitchensink ?k ?n)
                 (in_person_hand ?p ?h) (light_on ?l) (tv_on ?t) (tv_playing_channel ?t ?ch) (faucet_on ?n)
                 (in_agent_hand ?p ?r)))
  (:action stop :parameters (?w - window ?t - tv ?n - sink ?p - phone ?b - book ?d - table)
    :effect (and (not (window_open ?w)) (not (tv_on ?t)) (not (faucet_on ?n)) (not (phone_ringing ?p))
                 (placed_at_table ?b ?d)))
  (:action empty_glass :parameters (?g - liquidcontainer ?q - liquid) :precondition (glass_has_liquid ?g ?q)
    :effect (and (glass_empty ?g) (not (glass_has_liquid ?g ?q))))
  (:action fill_glass :parameters (?g - liquidcontainer ?q - liquid) :precondition (glass_empty ?g)
    :effect (and (glass_has_liquid ?g ?q) (not (glass_empty ?g)))))"""


def simulation(folder: Path) -> Domain:
    """The stand-in with the bundled l3mp domain.toml, written into `folder` and loaded."""
    (folder / "domain.pddl").write_text(SIMULATION)
    shutil.copy(BUNDLED / "l3mp" / "domain.toml", folder / "domain.toml")
    return Domain.load(folder / "domain.pddl")


def small_world(folder: Path, problem: str) -> WorldGraph:
    """A sqlite graph in `folder` of the stand-in (with its domain.toml) holding `problem` (PDDL text)."""
    from kgplan.graph.backends import open_graph

    g = open_graph(f"sqlite:{folder / 'g.db'}")
    g.init(simulation(folder))
    g.load_problem(Problem.parse(problem, "small"))
    return g

