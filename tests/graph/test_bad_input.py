"""Input that must never get into a store (issue 21: 4, 5, 10), on every backend: refused with an InputError,
the graph unchanged, and what a store already holds reported by the whole-graph check."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgplan.domains.model import NAME_RE, Domain, Problem
from kgplan.domains.sexpr import PDDLError
from kgplan.domains.verify import ChangeRefused, IssueKind
from kgplan.errors import InputError, NotFound
from kgplan.graph.check import check_graph
from kgplan.graph.model import Delta, Entity, Fact
from kgplan.graph.world import WorldGraph
from tests.conftest import DATA

FIXTURE = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def state(g: WorldGraph) -> tuple:
    return g.entities(), g.facts(), len(g.history())


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_non_finite_values_are_refused(empty_graph: WorldGraph, value: float) -> None:
    """`(= (travel-cost a b) 1e999)` was stored as infinity; then facts, check and export crashed."""
    travel = DATA / "domains" / "travel"
    empty_graph.init(Domain.load(travel), problem=Problem.parse((travel / "p01.pddl").read_text()))
    before = state(empty_graph)
    fact = Fact(predicate="travel-cost", args=("a", "home"), value=value)
    for verified in (True, False):
        with pytest.raises(ChangeRefused, match="must be a finite number") as exc:
            empty_graph.apply(Delta(add=[fact]), verified=verified)
        assert {i.kind for i in exc.value.issues} == {IssueKind.WRONG_VALUE}
    with pytest.raises(PDDLError, match="finite"):
        Fact.parse("(= (travel-cost a home) 1e999)")
    assert state(empty_graph) == before and check_graph(empty_graph) == [] and "1e999" not in empty_graph.to_problem()


@given(name=st.from_regex(NAME_RE, fullmatch=True), tail=st.sampled_from(["\n", "\r\n", " ", "\t", "\n\n", "\x00"]))
@FIXTURE
def test_names_with_anything_after_them_are_refused(graph: WorldGraph, name: str, tail: str) -> None:
    """`kitchen\\n` passed the name pattern (`$` matches before a final newline) on both backends."""
    before = state(graph)
    with pytest.raises(ChangeRefused, match="is not a valid name") as exc:
        graph.apply(Delta(new_entities=[Entity(name=name + tail, type="room")]))
    assert {i.kind for i in exc.value.issues} == {IssueKind.BAD_NAME}
    assert state(graph) == before


def test_check_reports_a_stored_name_with_a_newline(graph: WorldGraph) -> None:
    """A name that got in before (or past kgplan) is reported, not planned with as `duplicate objects`."""
    graph.in_transaction(lambda tx: tx.write(Delta(new_entities=[Entity(name="kitchen\n", type="room")]), None))
    issues = check_graph(graph)
    assert [i.kind for i in issues] == [IssueKind.BAD_NAME] and "'kitchen\\n'" in issues[0].message


@pytest.mark.parametrize("big", [2**63 - 1, 2**63, 2**64, 10**30])
def test_ids_beyond_any_store_name_no_change(graph: WorldGraph, big: int) -> None:
    """Ids and `before` of 2^63 and more raised OverflowError (sqlite) instead of naming no change."""
    with pytest.raises(NotFound, match=f"no change with id {big}"):
        graph.undo(big)
    with pytest.raises(NotFound):
        graph.undo(-big)
    assert graph.change_slice(big) is None and graph.change_slice(-big) is None
    newest = graph.changes(None)
    assert graph.changes(None, before=big) == newest and graph.changes(big) == newest
    assert graph.changes(1, before=-big) == [] and len(graph.history(big)) == len(newest)
    assert graph.change_slice(1, offset=big).sizes == graph.change_slice(1, limit=big).sizes


@pytest.mark.parametrize(("call", "what"), [
    (lambda g: g.changes(-1), "limit"), (lambda g: g.change_slice(1, -1), "offset"),
    (lambda g: g.change_slice(1, 0, -5), "limit"), (lambda g: g.history(-2), "limit")])
def test_negative_limits_and_offsets_are_refused(graph: WorldGraph, call, what: str) -> None:
    with pytest.raises(InputError, match=f"{what} must be 0 or more"):
        call(graph)


@pytest.mark.parametrize("delta", [
    Delta(add=[Fact.parse("(clean apple)")], text="note \udc80"),
    Delta(new_entities=[Entity(name="mug", type="cup", attrs={"colour": "r\ud800d"})]),
    Delta(new_entities=[Entity(name="mug\udc80", type="cup")]),
    Delta(add=[Fact(predicate="clean", args=("\udc80",))]),
    Delta(remove=[Fact(predicate="clean\udc80", args=("apple",))]),
], ids=["note", "attrs", "name", "fact", "predicate"])
def test_lone_surrogates_are_refused(graph: WorldGraph, delta: Delta) -> None:
    """A lone surrogate in a fact or a note was a 500 (UnicodeEncodeError in the store)."""
    before = state(graph)
    for verified in (True, False):
        with pytest.raises(InputError, match="not valid Unicode"):
            graph.apply(delta, verified=verified)
    assert state(graph) == before


@pytest.mark.parametrize("text", ['{}', '[{"add": ["(clean apple)"]}, {"text": "nothing seen"}]', '[{"add": []}]'])
def test_an_observation_that_changes_nothing_is_refused(tmp_path, text: str) -> None:
    """Issue 21.6: an empty observation `{}` was recorded as an empty change."""
    from kgplan.agent.agent import load_observations

    (tmp_path / "obs.json").write_text(text)
    with pytest.raises(InputError, match=r"observation \d changes nothing"):
        load_observations(tmp_path / "obs.json")


def test_check_reports_a_stored_value_that_is_not_finite(empty_graph: WorldGraph) -> None:
    """One that got in before (or past kgplan) is reported; showing it no longer crashes `facts` and `export`."""
    travel = DATA / "domains" / "travel"
    empty_graph.init(Domain.load(travel), problem=Problem.parse((travel / "p01.pddl").read_text()))
    inf = Fact(predicate="travel-cost", args=("a", "home"), value=math.inf)
    empty_graph.in_transaction(lambda tx: tx.write(Delta(add=[inf]), None))
    issues = check_graph(empty_graph)
    assert [(i.kind, i.message) for i in issues] == [
        (IssueKind.WRONG_VALUE, "(= (travel-cost a home) inf): a value must be a finite number")]
    assert "(= (travel-cost a home) inf)" in empty_graph.to_problem()


@pytest.mark.parametrize(("text", "words"), [
    ("[" * 100_000 + "]" * 100_000, "is not JSON"),
    ("{nope", "is not JSON"),
    ('{"add": null, "new_entities": [{"name": "mug"}]}', r"observation 1 is malformed"),
    ('{"add": null, "remove": null, "text": "x"}', r"observation 1 changes nothing"),
])
def test_observation_files_that_do_not_fit_are_input_errors(tmp_path, text: str, words: str) -> None:
    """Issue 21.11: deep JSON (RecursionError), `{"add": null}` (TypeError), an entity without a type
    (ValidationError) were tracebacks."""
    from kgplan.agent.agent import load_observations

    (tmp_path / "obs.json").write_text(text)
    with pytest.raises(InputError, match=words):
        load_observations(tmp_path / "obs.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe{\x00}\x00")
    with pytest.raises(InputError, match="is not UTF-8 text"):
        load_observations(tmp_path / "bin.json")
    with pytest.raises(InputError, match="is a folder"):
        load_observations(tmp_path)


@pytest.mark.parametrize("read", [
    lambda g: g.entities(["mug\udc80"]), lambda g: g.facts(entity="\udc80"), lambda g: g.facts("\ud800"),
    lambda g: g.facts_about(["apple", "\udc80"]), lambda g: g.unknowns(["\udc80"]),
    lambda g: g.neighborhood(["\udc80"])])
def test_reads_of_names_that_are_no_text_are_input_errors(graph: WorldGraph, read) -> None:
    """A lone surrogate in a name looked up (JSON and MCP strings may hold one) was a UnicodeEncodeError."""
    with pytest.raises(InputError, match="not valid Unicode"):
        read(graph)
