"""Domain model: parsing, the type hierarchy, `either` compiled away, clear errors."""

from __future__ import annotations

import pytest
from unified_planning.io import PDDLReader

from kgplan.domains.formula import And, Atom, GroundAtom, Or, Param, Quantified
from kgplan.domains.model import Domain, Problem, resolve_domain
from kgplan.domains.sexpr import PDDLError
from kgplan.errors import NotFound
from tests.conftest import HOUSEHOLD, l3mp_runs


def test_household_model(household: Domain) -> None:
    assert household.name == "household"
    assert household.is_subtype("cup", "item") and not household.is_subtype("cup", "furniture")
    assert household.accepts(("furniture", "container", "device", "window"), "fridge")
    assert not household.accepts(("furniture", "container"), "light")
    assert household.predicates["in_room"].params[0].types == ("furniture", "container", "device",
                                                                "window")
    assert "connected" in household.static_predicates()
    assert household.gloss("switched_on") == "{0} is switched on"
    assert len(household.actions) == 19


def test_either_compiled_away(household: Domain) -> None:
    text = household.compiled_pddl()
    assert "either" not in text
    again = Domain.parse(text)
    # in_room's first argument is widened to the common supertype, guarded in actions
    assert again.predicates["in_room"].params[0].types == ("fixture",)
    open_ = again.actions["open"]
    assert open_.params[1].types == ("container",)
    guard = "is_cabinet_or_drawer_or_dryer_or_fridge_or_washer"
    assert Atom(guard, ("?c",)) in open_.precondition.args  # type: ignore[union-attr]
    facts = household.type_facts({"fridge": "fridge", "sink": "sink", "dryer": "dryer"})
    assert {a.args[0] for a in facts if a.predicate == guard} == {"fridge", "dryer"}


def test_either_quantifiers_split_by_member_type() -> None:
    """forall/exists over (either ...) become one quantifier per member type, in actions,
    conditional effects and goals; no type predicate is needed for them."""
    dom = Domain.parse("""(define (domain q) (:requirements :typing :adl)
      (:types a b c - object d - a) (:predicates (p ?x - (either a b)) (done))
      (:action go :parameters ()
        :precondition (forall (?x - (either a b d)) (p ?x))
        :effect (and (done) (forall (?y - (either a b)) (when (p ?y) (not (p ?y)))))))""")
    pre = dom.compile_formula(dom.actions["go"].precondition)
    assert pre == And((Quantified("forall", (Param("?x", ("a",)),), Atom("p", ("?x",))),
                       Quantified("forall", (Param("?x", ("b",)),), Atom("p", ("?x",)))))
    goal = dom.compile_formula(Quantified("exists", (Param("?x", ("a", "b")),), Atom("p", ("?x",))))
    assert isinstance(goal, Or) and [q.params[0].types for q in goal.args] == [("a",), ("b",)]
    text = dom.compiled_pddl()
    assert "either" not in text and not dom.either_sets
    assert "(forall (?y - a) (when (p ?y) (not (p ?y)))) (forall (?y - b) (when (p ?y) (not (p ?y))))" in text


def test_compiled_domain_accepted_by_unified_planning(household: Domain, world_problem: Problem,
                                                      tmp_path) -> None:
    (tmp_path / "d.pddl").write_text(household.compiled_pddl())
    objs = " ".join(f"{o} - {t}" for o, t in world_problem.objects.items())
    init = " ".join(map(str, world_problem.init + household.type_facts(world_problem.objects)))
    (tmp_path / "p.pddl").write_text(f"(define (problem p) (:domain household) (:objects {objs}) "
                                     f"(:init {init}) (:goal (switched_on hallway_light)))")
    problem = PDDLReader().parse_problem(str(tmp_path / "d.pddl"), str(tmp_path / "p.pddl"))
    assert len(problem.actions) == 19


@pytest.mark.parametrize(("text", "line", "col", "words"), [
    ("(define (domain x)\n  (:predicates (p ?a)\n", 2, 3, "unclosed"),
    ("(define (domain x))\n)", 2, 1, "unexpected ')'"),
    ("(define (domain x)\n (:types a - b))", 2, 14, "unknown type 'b' in type 'a'"),
    ("(define (domain x)\n (:predicates (p ?a - nosuch)))", 2, 23, "unknown type 'nosuch'"),
    ("(define (domain x) (:predicates (p ?a))\n (:action go :parameters (?a)\n"
     " :precondition (q ?a) :effect (p ?a)))", 3, 16, "unknown predicate 'q'"),
    ("(define (domain x) (:predicates (p ?a))\n (:action go :parameters (?a)\n"
     " :precondition (p ?a ?a) :effect (p ?a)))", 3, 16, "takes 1 argument"),
    ("(define (domain x)\n  (:derived (f) (and)))", 2, 3, "unsupported domain section"),
])
def test_malformed_pddl_has_line_and_column(text: str, line: int, col: int, words: str) -> None:
    with pytest.raises(PDDLError) as exc:
        Domain.parse(text, "bad.pddl")
    assert (exc.value.line, exc.value.col) == (line, col)
    assert words in str(exc.value) and f"bad.pddl:{line}:{col}" in str(exc.value)


BROKEN = """(define (domain broken) (:requirements :typing :adl)
  (:types room item - object cup plate - item)
  (:constants hall - room)
  (:predicates (at ?i - item ?r - room) (clean ?x - (either cup plate)) (free))
  (:action act :parameters (?i - item ?r - room)
    :precondition (and (free) PRE)
    :effect (and (not (free)) EFF)))"""


@pytest.mark.parametrize(("pre", "eff", "bad", "words"), [
    ("(at ?i ?r)", "(at ?j ?r)", "(at ?j ?r)", "undeclared variable '?j'"),
    ("(forall (?c - cup) (clean ?k))", "(free)", "(clean ?k)", "undeclared variable '?k'"),
    ("(at ?i ?r)", "(when (clean ?i) (at ?i ?r ?r))", "(at ?i ?r ?r)", "'at' takes 2 argument(s)"),
    ("(at ?r ?i)", "(free)", "(at ?r ?i)", "argument 1 '?r' is a room, but at expects a item"),
    ("(at ?i hall)", "(at ?i kitchen)", "(at ?i kitchen)", "unknown constant 'kitchen'"),
    ("(at ?i ?r)", "(clean hall)", "(clean hall)", "'hall' is a room, but clean expects a cup or plate"),
    ("(exists (?x - (either room cup)) (clean ?x))", "(free)", "(clean ?x)", "'?x' is a room or cup"),
    ("(at ?i ?r)", "(forall (?c - cup) (dirty ?c))", "(dirty ?c)", "unknown predicate 'dirty'"),
    ("(= ?i ?z)", "(free)", "(= ?i ?z)", "undeclared variable '?z'"),
])
def test_broken_actions_are_refused_where_they_are_wrong(pre: str, eff: str, bad: str, words: str) -> None:
    """Errors in action bodies point at the offending expression (line and column)."""
    text = BROKEN.replace("PRE", pre).replace("EFF", eff)
    offset = text.index(bad, text.index(":action"))
    line, col = text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)
    with pytest.raises(PDDLError) as exc:
        Domain.parse(text, "d.pddl")
    assert words in exc.value.message and (exc.value.line, exc.value.col) == (line, col), str(exc.value)
    Domain.parse(BROKEN.replace("PRE", "(at ?i ?r)").replace("EFF", "(forall (?c - cup) (clean ?c))"))


def test_problem_parse(world_problem: Problem) -> None:
    assert world_problem.objects["robot"] == "agent"
    assert GroundAtom("agent_at", ("robot", "hallway")) in world_problem.init
    goal = Problem.parse("(define (problem p) (:domain d) (:objects a - t) (:init)"
                         " (:goal (and (p a) (not (q a)))))").goal
    assert isinstance(goal, And) and len(goal.args) == 2


def test_resolve_domain_errors(tmp_path) -> None:
    with pytest.raises(NotFound, match="bundled domains are"):
        resolve_domain("nosuch")
    assert resolve_domain(HOUSEHOLD / "domain.pddl").name == "household"


@pytest.mark.dataset
def test_l3mp_domain_loads_as_published() -> None:
    for run in l3mp_runs():
        dom = Domain.load(run / "domain.pddl")
        assert len(dom.predicates) == 25 and "either" not in dom.compiled_pddl()
        assert dom.predicates["in_person_hand"].params[0].types[0] == "liquidcontainer"
        assert dom.accepts(dom.predicates["placed_at_table"].params[0].types, "liquidcontainer")
        assert not dom.accepts(dom.predicates["placed_at_table"].params[0].types, "tv")
        groups = [{p.predicate for p in g.parts} for g in dom.invariants]
        assert {"agent_in_room"} in groups
        assert any({"in_agent_hand", "in_person_hand", "placed_at_table"} <= g for g in groups)


@pytest.mark.parametrize(("text", "words"), [
    ("(define (problem p) (:domain d) (:objects a - cup a - dish) (:init))",
     "object 'a' is declared as a cup and a dish"),
    ("(define (problem p) (:domain d) (:objects a b a - cup) (:init))", "object 'a' is declared twice"),
    ("(define (problem))", "must give one problem name"),
    ("(define (problem p) (:domain))", "must give one domain name"),
    ("(define (problem p) (:domain d) (:objects 1a - cup) (:init))", "object name '1a' is not a name"),
])
def test_problems_declare_each_object_once_by_a_name(text: str, words: str) -> None:
    """Issue 21.6/11: `a - cup a - dish` made `a` a dish silently; `(define (problem))` was an IndexError."""
    with pytest.raises(PDDLError, match=words):
        Problem.parse(text, "p.pddl")


@pytest.mark.parametrize(("section", "words"), [
    ("(:predicates (= ?a ?b))", "predicate name '=' is not a name"),
    ("(:predicates (p)) (:action :effect :parameters () :effect (p))", "action name ':effect' is not a name"),
    ("(:predicates (p)) (:action go :parameters () :effect (p)) (:action :parameters ())",
     "action name ':parameters' is not a name"),
    ("(:functions (:cost) - number)", "function name ':cost' is not a name"),
    ("(:types room - object room - item)", "type 'room' is declared as a object and a item"),
    ("(:types room) (:constants hall - room hall - room)", "constant 'hall' is declared twice"),
    ("(:types :room)", "type name ':room' is not a name"),
])
def test_domains_refuse_keywords_and_symbols_as_names(section: str, words: str) -> None:
    """Issue 21.6: a predicate named `=` and an action named `:effect` were accepted."""
    with pytest.raises(PDDLError, match=words):
        Domain.parse(f"(define (domain x) {section})", "d.pddl")
    with pytest.raises(PDDLError, match="must give one domain name"):
        Domain.parse("(define (domain))")


@pytest.mark.parametrize("number", ["1e999", "-1e999", "inf", "nan", "-1"])
def test_numbers_are_finite(number: str) -> None:
    """Issue 21.4: `(= (travel-cost a b) 1e999)` was read as infinity."""
    with pytest.raises(PDDLError, match="finite non-negative number"):
        Problem.parse(f"(define (problem p) (:domain d) (:objects a - t) (:init (= (cost a) {number})))")
    with pytest.raises(PDDLError, match="finite non-negative number"):
        Domain.parse("(define (domain x) (:requirements :action-costs) (:predicates (p)) (:functions (total-cost) "
                     f"- number) (:action go :parameters () :effect (and (p) (increase (total-cost) {number}))))")


def test_deep_nesting_is_a_pddl_error_not_a_recursion_error() -> None:
    """Issue 21.10/11: a deeply nested goal or domain raised RecursionError in the formula parser."""
    from kgplan.domains.sexpr import MAX_DEPTH

    goal = "(not " * (MAX_DEPTH - 3) + "(p a)" + ")" * (MAX_DEPTH - 3)
    Problem.parse(f"(define (problem p) (:domain d) (:objects a - t) (:init) (:goal {goal}))")  # deep enough
    deep = "(not " * 100_000 + "(p a)" + ")" * 100_000
    with pytest.raises(PDDLError, match=f"nested more than {MAX_DEPTH} deep"):
        Problem.parse(f"(define (problem p) (:domain d) (:objects a - t) (:init) (:goal {deep}))")
    with pytest.raises(PDDLError, match="nested more than"):
        Domain.parse(f"(define (domain x) (:predicates (p ?a)) (:action go :parameters (?a) :precondition {deep}))")


@pytest.mark.parametrize(("content", "words"), [
    (None, "is a folder: give the domain file itself"),
    ("(define (domain x))".encode("utf-16"), "is not UTF-8 text"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "is not UTF-8 text"),
])
def test_a_domain_file_that_is_no_text_is_an_input_error(tmp_path, content: bytes | None, words: str) -> None:
    """Issue 21.11: a folder, a binary or a UTF-16 file was an IsADirectoryError or UnicodeDecodeError."""
    from kgplan.errors import InputError
    from kgplan.files import read_text

    path = tmp_path / "domain.pddl"
    if content is None:
        path.mkdir()
        with pytest.raises(InputError, match=words):
            read_text(path, "domain file")
    else:
        path.write_bytes(content)
        with pytest.raises(InputError, match=words):
            Domain.load(path)
    (tmp_path / "domain.toml").write_text("[predicates\n")
    if content is None:
        return
    path.write_text("(define (domain x))")
    with pytest.raises(InputError, match=r"domain\.toml: not TOML"):
        Domain.load(tmp_path)
