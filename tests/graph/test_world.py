"""Conformance suite: every WorldGraph backend must pass these (sqlite file and real Bolt)."""

from __future__ import annotations

import threading

import pytest

from kgplan.domains.model import Domain, Problem
from kgplan.domains.verify import ChangeRefused, IssueKind
from kgplan.errors import InputError, NotFound, StoreError
from kgplan.graph.model import PREVIEW, Change, Delta, Entity, Fact, Unknown
from kgplan.graph.store import Store
from kgplan.graph.world import WorldGraph

F = Fact.parse


def kinds(exc: pytest.ExceptionInfo[ChangeRefused]) -> set[IssueKind]:
    return {i.kind for i in exc.value.issues}


def test_load_and_export_round_trip(graph: WorldGraph, world_problem: Problem) -> None:
    assert {f.atom for f in graph.facts()} == set(world_problem.init)
    assert {e.name: e.type for e in graph.entities()} == world_problem.objects
    again = Problem.parse(graph.to_problem())
    assert set(again.init) == set(world_problem.init) and again.objects == world_problem.objects


def test_snapshot_is_the_state_as_plain_data(graph: WorldGraph, world_problem: Problem) -> None:
    types, atoms, values = graph.snapshot()
    assert types == world_problem.objects and values == {}
    assert sorted(atoms) == sorted((a.predicate, a.args) for a in world_problem.init) and len(set(atoms)) == len(atoms)
    graph.apply(Delta(remove=[F("(on apple kitchen_counter)")], add=[F("(on apple kitchen_table)")]))
    types, atoms, values = graph.snapshot()
    generic = Store.snapshot(graph.store)  # the backend's reading agrees with the generic one
    assert (types, sorted(atoms), values) == (generic[0], sorted(generic[1]), generic[2])
    assert ("on", ("apple", "kitchen_table")) in atoms and ("on", ("apple", "kitchen_counter")) not in atoms


def test_uninitialised_store_says_so(empty_graph: WorldGraph) -> None:
    """Every backend: reads find nothing, what needs the domain is a StoreError, writes included."""
    g = empty_graph
    assert (g.count(), g.entities(), g.facts(), g.history(), g.changes()) == ((0, 0), [], [], [], [])
    for call in (lambda: empty_graph.domain, lambda: empty_graph.to_problem(),
                 lambda: empty_graph.check(Delta(add=[F("(clean apple)")])),
                 lambda: empty_graph.apply(Delta(add=[F("(clean apple)")])),
                 lambda: empty_graph.apply(Delta(add=[F("(clean apple)")]), verified=False)):
        with pytest.raises(StoreError, match="not initialised"):
            call()
    assert empty_graph.count() == (0, 0) and empty_graph.history() == []


def test_init_twice_needs_force(graph: WorldGraph, household: Domain) -> None:
    with pytest.raises(StoreError, match="already initialised"):
        graph.init(household)
    graph.init(household, force=True)
    assert graph.count() == (0, 0) and graph.history() == []


def test_queries(graph: WorldGraph) -> None:
    assert graph.facts("agent_at") == [F("(agent_at robot hallway)")]
    on_sofa = graph.facts(entity="living_room_sofa")
    assert F("(on sandra_phone living_room_sofa)") in on_sofa
    assert all("living_room_sofa" in f.args for f in on_sofa)
    assert graph.facts("on", "living_room_sofa") == sorted(
        [F("(on sandra_phone living_room_sofa)"), F("(on tv_remote living_room_sofa)")],
        key=lambda f: f.args)
    ents, facts = graph.neighborhood(["robot"], depth=1)
    assert {e.name for e in ents} == {"robot", "hallway"}
    ents2, facts2 = graph.neighborhood(["robot"], depth=2)
    assert {"kitchen", "hallway_light"} <= {e.name for e in ents2} and len(facts2) > len(facts)
    assert F("(connected hallway kitchen)") in facts2
    assert graph.entities(["robot", "nosuch"]) == [Entity(name="robot", type="agent")]


def test_apply_move_and_history(graph: WorldGraph) -> None:
    d = Delta(remove=[F("(on apple kitchen_counter)")], add=[F("(on apple kitchen_table)")],
              source="sensor", text="camera")
    c = graph.apply(d)
    assert F("(on apple kitchen_table)") in graph.facts("on")
    assert F("(on apple kitchen_counter)") not in graph.facts("on")
    last = graph.history()[-1]
    assert last.id == c.id and last.delta.source == "sensor" and last.delta.text == "camera"
    assert last.delta.add == d.add and last.time.tzinfo is not None


def test_history_summaries_and_paged_diffs(graph: WorldGraph) -> None:
    things = [Entity(name=f"thing{i:03d}", type="item") for i in range(PREVIEW + 30)]
    made = graph.apply(Delta(new_entities=things, add=[F(f"(on {t.name} kitchen_table)") for t in things],
                             source="sensor", text="a delivery", tokens={"prompt": 3}))
    moved = graph.apply(Delta(remove=[F("(on apple kitchen_counter)")], add=[F("(on apple kitchen_table)")]))
    whole = {c.id: c for c in graph.history()}
    newest = graph.changes(limit=2)
    assert [c.id for c in newest] == [moved.id, made.id]
    small, big = newest
    assert small.delta == whole[moved.id].delta and small.time == whole[moved.id].time
    assert big.sizes == {"add": len(things), "remove": 0, "new_entities": len(things), "removed_entities": 0}
    assert big.delta.new_entities == things[:PREVIEW] and big.delta.add == whole[made.id].delta.add[:PREVIEW]
    assert (big.delta.text, big.delta.source, big.delta.tokens) == ("a delivery", "sensor", {"prompt": 3})
    older = graph.changes(limit=None, before=made.id)
    assert [c.id for c in older] == sorted((i for i in whole if i < made.id), reverse=True)
    assert [c.id for c in graph.changes(limit=None)] == sorted(whole, reverse=True)
    pages = [graph.change_slice(made.id, offset, 7) for offset in range(0, len(things), 7)]
    assert [f for p in pages if p for f in p.delta.add] == whole[made.id].delta.add
    assert all(p and p.sizes == big.sizes for p in pages) and pages[1] and pages[1].offset == 7
    assert graph.change_slice(made.id, len(things), 5).delta.add == []  # type: ignore[union-attr]
    assert graph.change_slice(10**6) is None


def test_sqlite_closes_the_readers_of_ended_threads(world: WorldGraph) -> None:
    for _ in range(5):  # the API starts a thread per job: each reads through a connection of its own
        t = threading.Thread(target=world.entities)
        t.start()
        t.join()
    world.entities()
    assert len(world.store._readers) <= 2  # type: ignore[attr-defined]  # the last thread's, if not yet closed, and ours


def test_unary_binary_and_new_entities(graph: WorldGraph) -> None:
    graph.apply(Delta(
        new_entities=[Entity(name="green_mug", type="cup", attrs={"colour": "green"})],
        add=[F("(on green_mug kitchen_counter)"), F("(cup_empty green_mug)"), F("(clean green_mug)")],
    ))
    assert graph.entities(["green_mug"])[0].attrs == {"colour": "green"}
    assert {str(f) for f in graph.facts(entity="green_mug")} == {
        "(on green_mug kitchen_counter)", "(cup_empty green_mug)", "(clean green_mug)"}


@pytest.mark.parametrize(("delta", "kind"), [
    (Delta(add=[F("(light_on kitchen_light)")]), IssueKind.UNKNOWN_PREDICATE),
    (Delta(add=[F("(switched_on)")]), IssueKind.WRONG_ARITY),
    (Delta(add=[F("(switched_on nosuch_light)")]), IssueKind.UNKNOWN_ENTITY),
    (Delta(add=[F("(switched_on kitchen)")]), IssueKind.WRONG_TYPE),
    (Delta(add=[F("(in_room apple kitchen)")]), IssueKind.WRONG_TYPE),  # either: fixtures only
    (Delta(remove=[F("(switched_on hallway_light)")]), IssueKind.ABSENT_FACT),
    (Delta(add=[F("(switched_on kitchen_light)")]), IssueKind.PRESENT_FACT),
    (Delta(add=[F("(on apple kitchen_table)")]), IssueKind.INVARIANT),  # apple in two places
    (Delta(remove=[F("(agent_at robot hallway)")]), IssueKind.INVARIANT),  # robot nowhere
    (Delta(add=[F("(agent_at robot kitchen)")]), IssueKind.INVARIANT),  # robot in two rooms
    (Delta(remove=[F("(person_at omar kitchen)")]), IssueKind.INVARIANT),  # declared in toml
    (Delta(add=[F("(switched_on hallway_light)")], remove=[F("(switched_on hallway_light)")]),
     IssueKind.CONTRADICTION),
    (Delta(new_entities=[Entity(name="Bad Name", type="cup")]), IssueKind.BAD_NAME),
    (Delta(new_entities=[Entity(name="vase", type="vase")]), IssueKind.UNKNOWN_TYPE),
    (Delta(new_entities=[Entity(name="apple", type="cup")]), IssueKind.DUPLICATE_ENTITY),
])
def test_refused_changes_leave_graph_unchanged(graph: WorldGraph, delta: Delta,
                                               kind: IssueKind) -> None:
    before, n_hist = graph.facts(), len(graph.history())
    with pytest.raises(ChangeRefused) as exc:
        graph.apply(delta)
    assert kind in kinds(exc)
    assert all(i.message for i in exc.value.issues)
    assert graph.facts() == before and len(graph.history()) == n_hist


def test_refusal_is_whole(graph: WorldGraph) -> None:
    """One bad fact refuses the whole delta, good facts included."""
    before = graph.facts()
    with pytest.raises(ChangeRefused):
        graph.apply(Delta(add=[F("(switched_on hallway_light)"), F("(switched_on nosuch)")]))
    assert graph.facts() == before


def test_issue_messages_are_feedback(graph: WorldGraph) -> None:
    with pytest.raises(ChangeRefused) as exc:
        graph.apply(Delta(add=[F("(switched_onn hallway_light)"), F("(on apple kitchen)")]))
    text = str(exc.value)
    assert "did you mean 'switched_on'" in text
    assert "'kitchen' is a room, but on expects a furniture" in text


def test_undo_applies_inverse_as_new_change(graph: WorldGraph) -> None:
    c = graph.apply(Delta(add=[F("(switched_on hallway_light)")]))
    u = graph.undo(c.id)
    assert u.id > c.id and u.undo_of == c.id and u.delta.remove == [F("(switched_on hallway_light)")]
    assert F("(switched_on hallway_light)") not in graph.facts()
    assert [h.id for h in graph.history()][-2:] == [c.id, u.id]  # history is never rewritten
    with pytest.raises(ChangeRefused):  # undoing twice would remove an absent fact
        graph.undo(c.id)
    with pytest.raises(NotFound, match="no change with id"):
        graph.undo(999999)
    assert graph.change_slice(999999) is None and graph.in_transaction(lambda tx: tx.change(999999)) is None


def test_check_is_a_dry_run(graph: WorldGraph) -> None:
    assert graph.check(Delta(add=[F("(switched_on hallway_light)")])) == []
    assert F("(switched_on hallway_light)") not in graph.facts()


HOSTILE = ["x'}) DETACH DELETE n //", 'a"b`c', "$param", "); DROP TABLE facts; --", "ü\n\t"]


def test_hostile_text_is_inert_data(graph: WorldGraph) -> None:
    """Quotes and Cypher/SQL syntax in attributes and provenance are stored as plain data."""
    attrs = {f"k{i}": s for i, s in enumerate(HOSTILE)}
    graph.apply(Delta(new_entities=[Entity(name="odd_mug", type="cup", attrs=attrs)],
                      add=[F("(cup_empty odd_mug)")], text=HOSTILE[0]))
    assert graph.entities(["odd_mug"])[0].attrs == attrs
    assert graph.history()[-1].delta.text == HOSTILE[0]
    assert len(graph.facts()) > 70


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_refused_by_verification(graph: WorldGraph, name: str) -> None:
    with pytest.raises(ChangeRefused) as exc:
        graph.apply(Delta(new_entities=[Entity(name=name, type="cup")]))
    assert IssueKind.BAD_NAME in kinds(exc)


@pytest.mark.parametrize(("delta", "message"), [
    (Delta(add=[F("(light_on kitchen_light)")]), "does not match a predicate"),  # no such predicate
    (Delta(add=[F("(switched_on)")]), "does not match a predicate"),  # wrong arity
    (Delta(remove=[F("(on apple)")]), "does not match a predicate"),
    (Delta(add=[Fact(predicate="clean", args=("apple",), value=2)]), "does not match a predicate"),  # no value
    (Delta(add=[F("(switched_on nosuch_light)")]), "do not exist: nosuch_light"),
    (Delta(removed_entities=["apple"], add=[F("(on apple kitchen_table)")]), "do not exist: apple"),
    (Delta(unknown=[Unknown(entity="nosuch", predicate="on")]), "do not exist: nosuch"),
])
def test_unverified_writes_must_fit_the_store(graph: WorldGraph, delta: Delta, message: str) -> None:
    """Below verification every backend refuses, alike, what it cannot store as given."""
    before, n_hist = snapshot(graph), len(graph.history())
    with pytest.raises(InputError, match=message) as exc:
        graph.apply(delta, verified=False)
    assert not isinstance(exc.value, ChangeRefused)
    assert snapshot(graph) == before and len(graph.history()) == n_hist and graph.unknowns(["nosuch"]) == []


def test_unverified_writes_store_what_verification_would_refuse(graph: WorldGraph) -> None:
    """Wrong types and broken invariants are stored as given (`kgplan check` finds them)."""
    odd = [F("(switched_on kitchen)"), F("(on apple kitchen_table)")]
    graph.apply(Delta(new_entities=[Entity(name="vase1", type="vase")], add=[*odd, F("(clean vase1)")]),
                verified=False)
    assert {*odd, F("(clean vase1)")} <= set(graph.facts()) and graph.entities(["vase1"])[0].type == "vase"


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_inert_below_verification(graph: WorldGraph, name: str) -> None:
    """Even unverified writes keep hostile names as data: nothing else in the graph changes."""
    n = len(graph.facts())
    graph.apply(Delta(new_entities=[Entity(name=name, type="cup")],
                      add=[Fact(predicate="cup_empty", args=(name,))]), verified=False)
    assert Fact(predicate="cup_empty", args=(name,)) in graph.facts(entity=name)
    assert len(graph.facts()) == n + 1


def snapshot(g: WorldGraph) -> tuple[list[Entity], list[Fact]]:
    """Everything undo must restore: entities with types and attrs, and facts."""
    return g.entities(), g.facts()


@pytest.mark.parametrize("new", [
    [Entity(name="thing", type="cup"), Entity(name="thing", type="room")],  # the issue's repro
    [Entity(name="thing", type="cup"), Entity(name="thing", type="cup")],
    [Entity(name="apple", type="food")],  # exists already, same type
    [Entity(name="apple", type="room")],  # exists already, another type
])
def test_an_entity_is_declared_new_once(graph: WorldGraph, new: list[Entity]) -> None:
    before = snapshot(graph)
    with pytest.raises(ChangeRefused) as exc:
        graph.apply(Delta(new_entities=new, add=[F(f"(connected {new[0].name} {new[0].name})")]))
    assert IssueKind.DUPLICATE_ENTITY in kinds(exc)
    assert new[0].name in str(exc.value)
    assert snapshot(graph) == before


def test_remove_entity_with_its_facts_and_undo(graph: WorldGraph) -> None:
    graph.apply(Delta(new_entities=[Entity(name="green_mug", type="cup", attrs={"colour": "green"})],
                      add=[F("(on green_mug kitchen_counter)"), F("(cup_empty green_mug)")]))
    before = snapshot(graph)
    c = graph.apply(Delta(removed_entities=["green_mug"], text="the mug broke"))
    assert graph.entities(["green_mug"]) == [] and graph.facts(entity="green_mug") == []
    assert c.delta.removed_entities == [Entity(name="green_mug", type="cup", attrs={"colour": "green"})]
    assert sorted(map(str, c.delta.remove)) == ["(cup_empty green_mug)", "(on green_mug kitchen_counter)"]
    assert graph.history()[-1].delta == c.delta
    u = graph.undo(c.id)
    assert snapshot(graph) == before
    graph.undo(u.id)  # undoing the undo removes it again
    assert graph.entities(["green_mug"]) == [] and graph.facts(entity="green_mug") == []


def test_undo_removes_the_entities_a_change_created(graph: WorldGraph) -> None:
    before = snapshot(graph)
    c = graph.apply(Delta(new_entities=[Entity(name="green_mug", type="cup", attrs={"colour": "green"})],
                          add=[F("(on green_mug kitchen_counter)"), F("(cup_empty green_mug)")]))
    graph.apply(Delta(remove=[F("(on green_mug kitchen_counter)")], add=[F("(on green_mug kitchen_table)")]))
    graph.apply(Delta(add=[F("(clean green_mug)")]))
    u = graph.undo(c.id)  # the mug goes, with the facts it has now
    assert u.delta.removed_entities == [Entity(name="green_mug", type="cup", attrs={"colour": "green"})]
    assert snapshot(graph) == before


@pytest.mark.parametrize(("delta", "kind"), [
    (Delta(removed_entities=["nosuch"]), IssueKind.UNKNOWN_ENTITY),
    (Delta(removed_entities=["hallway"]), IssueKind.INVARIANT),  # the robot would be nowhere
    (Delta(removed_entities=["kitchen_counter"]), IssueKind.INVARIANT),  # the apple would be nowhere
    (Delta(removed_entities=["apple"], add=[F("(on apple kitchen_table)")]), IssueKind.UNKNOWN_ENTITY),
    (Delta(removed_entities=["apple"], new_entities=[Entity(name="apple", type="food")]),
     IssueKind.DUPLICATE_ENTITY),
])
def test_refused_entity_removals(graph: WorldGraph, delta: Delta, kind: IssueKind) -> None:
    before = snapshot(graph)
    with pytest.raises(ChangeRefused) as exc:
        graph.apply(delta)
    assert kind in kinds(exc)
    assert snapshot(graph) == before


def test_removing_an_entity_keeps_other_invariants(graph: WorldGraph) -> None:
    """Removing the apple drops its location, which is its own: nothing else loses one."""
    graph.apply(Delta(removed_entities=["apple"]))
    assert graph.facts(entity="apple") == [] and graph.check(Delta(add=[F("(on apple kitchen_table)")]))


CONST_DOMAIN = """(define (domain lamps) (:requirements :typing) (:types lamp room)
  (:constants hall - room)
  (:predicates (lit ?l - lamp) (lamp_in ?l - lamp ?r - room))
  (:action light :parameters (?l - lamp) :precondition (not (lit ?l)) :effect (lit ?l)))"""


def test_constants_cannot_be_removed_or_redeclared(empty_graph: WorldGraph) -> None:
    empty_graph.init(Domain.parse(CONST_DOMAIN, "lamps"))
    empty_graph.apply(Delta(new_entities=[Entity(name="lamp1", type="lamp")], add=[F("(lamp_in lamp1 hall)")]))
    with pytest.raises(ChangeRefused) as exc:
        empty_graph.apply(Delta(removed_entities=["hall"]))
    assert kinds(exc) == {IssueKind.CONSTANT}
    with pytest.raises(ChangeRefused) as exc:
        empty_graph.apply(Delta(new_entities=[Entity(name="hall", type="room")]))
    assert kinds(exc) == {IssueKind.DUPLICATE_ENTITY}
    empty_graph.apply(Delta(removed_entities=["lamp1"]))
    assert empty_graph.facts() == [] and empty_graph.entities() == []


def test_constants_are_no_entities_on_every_backend(empty_graph: WorldGraph) -> None:
    """Facts and marks about constants are kept and read alike, but constants are never listed or counted."""
    g = empty_graph
    g.init(Domain.parse(CONST_DOMAIN, "lamps"))
    g.apply(Delta(unknown=[Unknown(entity="hall", predicate="lamp_in")]))  # before any fact mentions hall
    g.apply(Delta(new_entities=[Entity(name="lamp1", type="lamp")], add=[F("(lamp_in lamp1 hall)")]))
    g.apply(Delta(new_entities=[Entity(name="lamp2", type="lamp")], add=[F("(lamp_in lamp2 hall)")]), verified=False)
    lamps = [Entity(name="lamp1", type="lamp"), Entity(name="lamp2", type="lamp")]
    facts = [F("(lamp_in lamp1 hall)"), F("(lamp_in lamp2 hall)")]
    assert g.entities() == lamps and g.entities(["hall", "lamp1"]) == lamps[:1] and g.count() == (2, 2)
    assert g.facts(entity="hall") == facts and sorted(g.facts_about(["hall"]), key=str) == facts
    assert g.unknowns() == [Unknown(entity="hall", predicate="lamp_in")]
    assert g.snapshot()[0] == {"lamp1": "lamp", "lamp2": "lamp"}
    assert g.in_transaction(lambda tx: (tx.entity_types(["hall", "lamp1"]), tx.entities())) == (
        {"lamp1": "lamp"}, lamps)
    assert g.neighborhood(["lamp1"], 2) == (lamps, facts)
    exported = Problem.parse(g.to_problem())
    assert exported.objects == {"lamp1": "lamp", "lamp2": "lamp"} and len(exported.init) == 2
    g.apply(Delta(removed_entities=["lamp1", "lamp2"]))
    assert (g.count(), g.entities(), g.facts()) == ((0, 0), [], [])


def test_undo_gives_back_a_state_without_a_location(graph: WorldGraph) -> None:
    """An entity made without a location and then placed: undoing the placing is exact, though
    a plain removal of its only location stays refused."""
    graph.apply(Delta(new_entities=[Entity(name="green_mug", type="cup")]))
    before = snapshot(graph)
    c = graph.apply(Delta(add=[F("(on green_mug kitchen_table)")]))
    graph.undo(c.id)
    assert snapshot(graph) == before
    graph.apply(Delta(add=[F("(on green_mug kitchen_table)")]))
    with pytest.raises(ChangeRefused) as exc:
        graph.apply(Delta(remove=[F("(on green_mug kitchen_table)")]))
    assert kinds(exc) == {IssueKind.INVARIANT}


def test_undoing_a_creation_cannot_strand_another_entity(graph: WorldGraph) -> None:
    made = graph.apply(Delta(new_entities=[Entity(name="shelf2", type="shelf")],
                             add=[F("(in_room shelf2 kitchen)")]))
    graph.apply(Delta(remove=[F("(on apple kitchen_counter)")], add=[F("(on apple shelf2)")]))
    with pytest.raises(ChangeRefused) as exc:  # the apple would be nowhere
        graph.undo(made.id)
    assert kinds(exc) == {IssueKind.INVARIANT} and "apple" in str(exc.value)


def test_two_writers_at_once(graph: WorldGraph, store_url: str) -> None:
    """Two connections racing to create the same entities and move the same thing: each change
    is applied whole or refused by verification, never failed by the race."""
    from kgplan.graph.backends import open_graph
    from kgplan.graph.check import check_graph

    start = len(graph.history())
    results: dict[str, list[Change | ChangeRefused]] = {"ann": [], "bob": []}
    errors: list[BaseException] = []

    def writer(tag: str) -> None:
        try:
            with open_graph(store_url) as g:
                for k in range(25):
                    kind = "cup" if tag == "ann" else "dish"
                    spot = "kitchen_table" if (k + (tag == "bob")) % 2 else "kitchen_counter"
                    delta = Delta(new_entities=[Entity(name=f"thing{k}", type=kind)],
                                  add=[F(f"(on thing{k} {spot})")], text=tag)
                    try:
                        results[tag].append(g.apply(delta))
                    except ChangeRefused as e:
                        results[tag].append(e)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    applied = [c for rs in results.values() for c in rs if isinstance(c, Change)]
    for k in range(25):  # exactly one of the two made each thing; the other was told it exists
        made = [c for c in applied if c.delta.new_entities[0].name == f"thing{k}"]
        assert len(made) == 1
        (refusal,) = [r for rs in results.values() for r in rs if isinstance(r, ChangeRefused)
                      and f"'thing{k}'" in str(r)]
        assert {i.kind for i in refusal.issues} >= {IssueKind.DUPLICATE_ENTITY}
        assert graph.entities([f"thing{k}"])[0].type == made[0].delta.new_entities[0].type
    assert len(graph.history()) == start + len(applied) == start + 25
    assert check_graph(graph) == []


def test_one_graph_shared_by_threads_that_write_and_read(graph: WorldGraph) -> None:
    """The API's worker threads share one graph: writes are serialised, reads run beside them."""
    errors: list[BaseException] = []
    start = len(graph.history())

    def write(n: int) -> None:
        try:
            for k in range(10):
                graph.apply(Delta(new_entities=[Entity(name=f"cup{n}_{k}", type="cup")],
                                  add=[F(f"(on cup{n}_{k} kitchen_table)")]))
                graph.set_meta({f"note{n}": str(k)})
                types, atoms, _ = graph.snapshot()
                assert f"cup{n}_{k}" in types and ("on", (f"cup{n}_{k}", "kitchen_table")) in atoms
        except BaseException as e:
            errors.append(e)

    def read() -> None:
        try:
            for _ in range(10):
                assert graph.changes(1) and graph.facts(entity="kitchen_table") and graph.entities()
                graph.snapshot()
        except BaseException as e:
            errors.append(e)

    writers = 2  # through one sqlite connection; on Bolt racing on the change counter (retried until applied)
    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    threads += [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(graph.history()) == start + 10 * writers and graph.get_meta(f"note{writers - 1}") == "9"


def test_undoing_the_load_empties_the_graph_and_its_undo_restores_it(graph: WorldGraph) -> None:
    before = snapshot(graph)
    (load,) = graph.history()
    u = graph.undo(load.id)
    assert graph.entities() == [] and graph.facts() == []
    graph.undo(u.id)
    assert snapshot(graph) == before
