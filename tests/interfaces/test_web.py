"""The web page in headless Debian Chromium driven by Playwright (no browser download): select an entity, correct
a fact, see a refused correction's message, undo, tell a change through the scripted LLM, see the graph (drawn by
Cytoscape.js, read back through its `cy` object) update, plan; make one change of facts, entities and marks; follow
changes made by another client; on an open-world graph, see placeholders and unknown facts marked. Screenshots go
to a temporary folder (its path is printed)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgplan.agent.agent import Agent
from kgplan.interfaces.api import Limits, serving
from kgplan.language.llm import ScriptedLLM
from tests.conftest import ROOT
from tests.support.fake_llm import mentions, pick

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is absent: apt-get install -y chromium")]


GRAPH = """() => ({zoom: cy.zoom(), width: cy.width(), height: cy.height(),
  nodes: cy.nodes().map((n) => ({id: n.id(), classes: n.classes(), colour: n.style("background-color"),
    label: n.data("label"), x: n.renderedPosition("x"), y: n.renderedPosition("y"), size: n.renderedWidth(),
    font: parseFloat(n.style("font-size")) * cy.zoom()})),
  edges: cy.edges().map((e) => ({fact: e.data("fact"), classes: e.classes(),
    font: parseFloat(e.style("font-size")) * cy.zoom()}))})"""


def graph(page: object) -> dict:
    """What Cytoscape.js draws: nodes (rendered positions, sizes, colours, classes) and edges, by fact."""
    return page.evaluate(GRAPH)  # type: ignore[attr-defined]


def node(page: object, name: str) -> dict:
    return next(n for n in graph(page)["nodes"] if n["id"] == name)


def drawn(page: object, name: str, cls: str = "center") -> None:
    """Wait until the node `name` is drawn with class `cls`."""
    page.wait_for_function(f"cy.$id({name!r}).hasClass({cls!r})")  # type: ignore[attr-defined]


def other_client(url: str, body: dict) -> dict:
    """POST /api/changes from another client than the page."""
    req = urllib.request.Request(url + "/api/changes", json.dumps(body).encode(), method="POST", headers={
        "Content-Type": "application/json", "X-Requested-With": "kgplan"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


@pytest.fixture
def browser() -> Iterator:
    """Headless Debian Chromium through Playwright."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def test_page_inspect_correct_undo_tell_plan(agent: Agent, live_server: str,
                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    shots = tmp_path_factory.mktemp("screenshots")
    print(f"screenshots in {shots}")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(live_server)
        page.wait_for_selector("body[data-ready='1']")
        assert "household" in page.text_content("#settings")

        # select an entity: the graph centres on it, the fact table lists its facts
        page.fill("#entity-search", "kitchen_light")
        page.click("#entity-list li[data-name='kitchen_light']")
        drawn(page, "kitchen_light")
        assert "kitchen" in {n["id"] for n in graph(page)["nodes"]}
        assert "switched_on" in node(page, "kitchen_light")["label"]
        page.wait_for_selector("#facts tr[data-fact='(switched_on kitchen_light)']")
        page.screenshot(path=shots / "1-selected.png")

        # the history shows the first few facts of the large load change; "more" pages through the rest
        load = page.locator("#history li").last
        shown = load.locator(".diff div").count()
        load.locator("button.more").click()
        page.wait_for_function(f"document.querySelectorAll('#history li:last-child .diff div').length > {shown}")
        loaded = agent.graph.history()[0].delta
        assert load.locator(".diff div").count() == len(loaded.add) + len(loaded.new_entities)
        assert load.locator("button.more").is_hidden()

        # a refused correction shows the verifier's message, and changes nothing
        row = "#facts tr[data-fact='(switched_on kitchen_light)']"
        page.click(f"{row} button.edit")
        page.fill(f"{row} input.fact-edit", "(switched_on nowhere_lamp)")
        page.click(f"{row} button.save")
        page.wait_for_function("document.querySelector('.issues') && document.querySelector('.issues').textContent")
        message = page.text_content(f"{row} .issues")
        assert "refused" in message and "nowhere_lamp" in message
        page.screenshot(path=shots / "2-refused.png")
        assert "(switched_on kitchen_light)" in {str(f) for f in agent.facts("switched_on")}

        # an accepted correction: the light that is on is the hallway's, not the kitchen's
        page.fill(f"{row} input.fact-edit", "(switched_on hallway_light)")
        page.click(f"{row} button.save")
        page.wait_for_selector(row, state="detached")
        on = {str(f) for f in agent.facts("switched_on")}
        assert "(switched_on hallway_light)" in on and "(switched_on kitchen_light)" not in on
        page.wait_for_selector("#history li:first-child:has-text('corrected in the web page')")
        newest = page.locator("#history li").first
        assert "+ (switched_on hallway_light)" in newest.text_content()

        # one-click undo
        newest.locator("button.undo").click()
        page.wait_for_selector(row)
        page.wait_for_selector("#history li:first-child:has-text('undoes')")
        assert "(switched_on kitchen_light)" in {str(f) for f in agent.facts("switched_on")}
        page.screenshot(path=shots / "3-undone.png")

        # tell a change through the scripted LLM: the graph updates
        agent._llm = ScriptedLLM([mentions("Omar", "the kitchen light"),
                                  lambda m: pick(m, switched_on="no longer: kitchen light is switched on")])
        page.fill("#ask", "Omar switched the kitchen light off")
        page.click("#tell-btn")
        page.wait_for_selector("#outcome .ok")
        page.wait_for_function("!cy.$id('kitchen_light').data('label').includes('switched_on')")
        page.wait_for_selector("#history li:first-child:has-text('Omar switched the kitchen light off')")
        assert page.locator("#progress li").count() >= 1
        page.screenshot(path=shots / "4-told.png")

        # a sentence that does not tell which mug: the options as buttons, a click completes the change
        agent._llm = ScriptedLLM([mentions("Sandra", "the mug"), json.dumps({"answer": "unclear"}),
                                  mentions("Sandra", "the mug"),
                                  *[lambda m: pick(m, held_by="now: item blue mug is held by person sandra")] * 2])
        page.fill("#ask", "Sandra picked up the mug")
        page.click("#tell-btn")
        page.wait_for_selector("#options button")
        assert page.text_content("#outcome .question") == "Which one does 'the mug' mean: red mug, blue mug?"
        assert page.locator("#options button").all_text_contents() == ["red mug", "blue mug"]
        assert agent.history(1)[0].delta.text == "Omar switched the kitchen light off"  # nothing changed yet
        page.screenshot(path=shots / "4-asked.png")
        page.click("#options button:has-text('blue mug')")
        page.wait_for_selector("#outcome .ok")
        assert "(held_by blue_mug sandra)" in {str(f) for f in agent.facts("held_by")}
        told = page.locator("#history li:first-child")
        told.wait_for()
        page.wait_for_selector("#history li:first-child:has-text('Sandra picked up the mug')")
        added = told.locator(".add:has-text('(held_by blue_mug sandra)') .how").text_content()
        assert "chosen by scripted among 1 candidate; the user said 'the mug' means blue_mug" in added
        assert "removed by the invariant" in told.locator(".remove .how").text_content()  # its old place

        # plan for a PDDL goal: the steps with their effects, highlighted in the graph
        page.fill("#ask", "(switched_on kitchen_light)")
        page.click("#goal-btn")
        page.wait_for_selector("#plan-steps li")
        assert "solved" in page.text_content("#outcome")
        steps = page.locator("#plan-steps li")
        steps.last.click()
        assert "+ (switched_on kitchen_light)" in steps.last.text_content()
        drawn(page, "kitchen_light", "added")
        steps.first.click()  # the robot's move: the robot is further than the depth from the light, drawn anyway
        assert steps.first.text_content().startswith("(move robot hallway kitchen)")
        page.wait_for_function("['robot', 'hallway', 'kitchen'].every((n) => cy.$id(n).hasClass('added'))")
        assert {n["id"] for n in graph(page)["nodes"] if "plan" in n["classes"]} >= {"robot", "hallway", "kitchen"}
        edges = {e["fact"]: e["classes"] for e in graph(page)["edges"]}
        assert "added" in edges["(agent_at robot kitchen)"] and "removed" in edges["(agent_at robot hallway)"]
        page.fill("#entity-search", "hallway")
        page.click("#entity-list li[data-name='hallway']")  # where the step's removed fact is one of the graph's
        drawn(page, "hallway")
        edges = {e["fact"]: e["classes"] for e in graph(page)["edges"]}
        assert "removed" in edges["(agent_at robot hallway)"] and "added" in edges["(agent_at robot kitchen)"]
        page.screenshot(path=shots / "5-plan.png")

        # the wheel zooms
        before = page.evaluate("cy.zoom()")
        box = page.locator("#graph").bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.wheel(0, -300)
        page.wait_for_function(f"cy.zoom() !== {before}")
        browser.close()
    assert not errors, errors
    assert sorted(x.name for x in Path(shots).iterdir()) == [
        "1-selected.png", "2-refused.png", "3-undone.png", "4-asked.png", "4-told.png", "5-plan.png"]


def test_page_marks_placeholders_and_unknown_facts(open_agent: Agent, browser: object,
                                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    """A Coin Collector graph with a placeholder room east of the kitchen and a coin whose room is unknown."""
    shots = tmp_path_factory.mktemp("screenshots")
    print(f"screenshots in {shots}")
    with serving(open_agent) as url:
        page = browser.new_page(viewport={"width": 1500, "height": 1000})  # type: ignore[attr-defined]
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        page.wait_for_selector("body[data-ready='1']")
        # the entity list flags both
        assert page.locator("#entity-list li.placeholder[data-name='room_east'] .mark").count() == 1
        assert page.locator("#entity-list li.has-unknown[data-name='coin'] .mark").count() == 1
        assert page.locator("#entity-list li.placeholder, #entity-list li.has-unknown").count() == 2
        assert "unknown (coin_in coin ?)" in page.text_content("#history li[data-change='2']")  # what marked them

        # the graph view draws the placeholder room distinctly, and the exit to it dashed; the legend says so
        page.click("#entity-list li[data-name='kitchen']")
        drawn(page, "kitchen")
        g = graph(page)
        assert [n["id"] for n in g["nodes"] if "placeholder" in n["classes"]] == ["room_east"]
        assert node(page, "room_east")["label"].startswith("? ")
        unknown = [e["fact"] for e in g["edges"] if "unknown" in e["classes"]]
        assert unknown and set(unknown) == {"(connected kitchen east room_east)"}  # one per other argument
        assert "placeholder (not yet identified)" in page.text_content("#legend")
        # the fact table marks the fact that names it; the kitchen itself has no marks
        page.wait_for_selector("#facts tr.unknown[data-fact='(connected kitchen east room_east)'] .mark")
        assert page.locator("#facts tr.unknown").count() == 1
        assert page.text_content("#entity-marks") == ""
        page.screenshot(path=shots / "open-1-kitchen.png")

        # the coin: ringed, and its panel says where it is not known
        page.click("#entity-list li[data-name='coin']")
        drawn(page, "coin")
        assert "has-unknown" in node(page, "coin")["classes"] and "coin_in ?" in node(page, "coin")["label"]
        assert "unknown: (coin_in coin ?)" in page.text_content("#entity-marks")
        page.click("#entity-list li[data-name='room_east']")
        drawn(page, "room_east")
        assert "placeholder" in node(page, "room_east")["classes"]
        assert "placeholder: not yet identified" in page.text_content("#entity-marks")
        page.screenshot(path=shots / "open-2-placeholder.png")
    assert not errors, errors
    assert sorted(x.name for x in Path(shots).iterdir()) == ["open-1-kitchen.png", "open-2-placeholder.png"]


def test_page_draws_readably_changes_at_once_and_follows_other_clients(agent: Agent, live_server: str,
                                                                        browser: object) -> None:
    """Cytoscape.js draws the neighbourhood at the default depth without overlaps, legible labels and distinct
    colours for room, food and phone, fitted again when the depth changes; one change carries a move (remove and
    add), and another new and removed entities and an unknown mark; a change by another client appears without
    a reload, and the page survives its selected entity being removed elsewhere."""
    page = browser.new_page(viewport={"width": 1500, "height": 1000})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(live_server)
    page.wait_for_selector("body[data-ready='1']")
    assert page.evaluate("typeof cytoscape") == "function"
    page.click("#entity-list li[data-name='kitchen']")
    drawn(page, "kitchen")
    g = graph(page)
    nodes = {n["id"]: n for n in g["nodes"]}
    assert len(nodes) > 20 and {"omar_phone", "milk_carton", "kitchen_fridge"} <= set(nodes)  # depth 2
    assert len({nodes[n]["colour"] for n in ("kitchen", "milk_carton", "omar_phone")}) == 3  # room, food, phone
    assert min(n["font"] for n in g["nodes"]) >= 10 and min(e["font"] for e in g["edges"]) >= 9
    for a in nodes.values():  # inside the view, and no two nodes on each other
        assert 0 <= a["x"] <= g["width"] and 0 <= a["y"] <= g["height"], a
        for b in nodes.values():
            if a["id"] < b["id"]:
                assert (a["x"] - b["x"]) ** 2 + (a["y"] - b["y"]) ** 2 >= ((a["size"] + b["size"]) / 2) ** 2, (a, b)
    page.select_option("#depth", "3")
    page.wait_for_function(f"cy.nodes().length > {len(nodes)}")
    g = graph(page)
    assert all(0 <= n["x"] <= g["width"] and 0 <= n["y"] <= g["height"] for n in g["nodes"])  # fitted again

    # the refusal's advice followed: the apple's move is one change, removing its old place and adding the new
    page.fill("#change-add", "(on apple kitchen_table)")
    page.click("#apply-btn")
    page.wait_for_selector("#change-msg .issues")
    assert "refused" in page.text_content("#change-msg") and "apple" in page.text_content("#change-msg")
    page.fill("#change-remove", "(on apple kitchen_counter)")
    page.click("#check-btn")
    page.wait_for_selector("#change-msg .ok:has-text('checked')")
    assert "(on apple kitchen_counter)" in {str(f) for f in agent.facts("on")}
    page.click("#apply-btn")
    page.wait_for_selector("#change-msg .ok:has-text('applied')")
    on = {str(f) for f in agent.facts("on")}
    assert "(on apple kitchen_table)" in on and "(on apple kitchen_counter)" not in on
    page.wait_for_selector("#history li:first-child:has-text('+ (on apple kitchen_table)')")
    assert page.input_value("#change-add") == ""  # the form is cleared once applied
    page.click("#fit-btn")  # the next action clears the message
    assert page.text_content("#change-msg") == ""

    # new and removed entities and an unknown mark, with facts, in one change
    page.fill("#change-new", "teal_mug:cup")
    page.fill("#change-add", "(on teal_mug kitchen_table)")
    page.fill("#change-remove", "(on apple kitchen_table)")
    page.fill("#change-gone", "plate")
    page.fill("#change-unknown", "(on apple ?)")
    page.fill("#change-note", "tidied up")
    page.click("#apply-btn")
    page.wait_for_selector("#change-msg .ok:has-text('applied')")
    newest = agent.graph.history()[-1].delta
    assert [e.name for e in newest.new_entities] == ["teal_mug"] and newest.removed_names() == ["plate"]
    assert [(u.entity, u.predicate) for u in newest.unknown] == [("apple", "on")] and newest.text == "tidied up"
    page.wait_for_function("cy.$id('teal_mug').length === 1")  # drawn beside the kitchen table

    # another client removes the selected entity: the page says so, deselects, and goes on following the server
    page.click("#entity-list li[data-name='bowl']")
    drawn(page, "bowl")
    other_client(live_server, {"removed_entities": ["bowl"], "note": "someone else"})
    page.wait_for_selector("#graph-msg:has-text('bowl no longer exists')")
    assert page.text_content("#selected") == "(select an entity)" and page.evaluate("cy.nodes().length") == 0
    assert page.locator("#entity-list li[data-name='bowl']").count() == 0
    other_client(live_server, {"add": ["(switched_on hallway_light)"], "note": "from elsewhere"})
    page.wait_for_selector("#history li:first-child:has-text('from elsewhere')")
    page.wait_for_selector("#facts tr[data-fact='(switched_on hallway_light)']")

    # lists capped at 500 say so
    assert page.text_content("#entity-count") == f"{len(agent.entities())} entities"
    other_client(live_server, {"new_entities": [{"name": f"mug_{i}", "type": "cup"} for i in range(460)]})
    page.wait_for_selector(f"#entity-count:has-text('showing 500 of {len(agent.entities())} entities')")
    assert page.locator("#entity-list li").count() == 500
    assert not errors, errors


def test_page_shows_why_a_plan_failed_and_plans_the_closest_goal(live_server: str, browser: object) -> None:
    """Issue 25 item 3: under a failed plan, each cause; a click on the closest goal that can be reached plans it."""
    page = browser.new_page(viewport={"width": 1500, "height": 1000})  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(live_server)
    page.wait_for_selector("body[data-ready='1']")
    page.fill("#ask", "(and (switched_on hallway_light) (person_at omar bedroom))")
    page.click("#goal-btn")
    page.wait_for_selector("#outcome .why")
    assert "unsolvable" in page.text_content("#outcome")
    whys = page.locator("#outcome .why").all_text_contents()
    assert whys == ['why not: [unreachable] (person_at omar bedroom) ("person omar is in room bedroom") cannot be '
                    "reached from this state: no action makes it true",
                    "the closest goal that can be reached: (switched_on hallway_light)"], whys
    page.click("#alternative")
    page.wait_for_selector("#plan-steps li")
    assert "solved" in page.text_content("#outcome") and page.input_value("#ask") == "(switched_on hallway_light)"
    assert page.locator("#plan-steps li").last.text_content().startswith("(switch_on robot hallway_light hallway)")
    assert not errors, errors


SEEN = """() => {  // when each history entry first appears on the page, by the browser's clock
  window.seen = {};
  const note = () => document.querySelectorAll("#history li[data-change]").forEach((li) => {
    window.seen[li.dataset.change] ??= Date.now();
  });
  note();
  new MutationObserver(note).observe(document.querySelector("#history"), { childList: true });
}"""


def cli(store: str, *args: str) -> None:
    """The CLI in a process of its own, on the same store."""
    subprocess.run([sys.executable, "-c", "from kgplan.interfaces.cli import app; app()", "-s", store, *args],
                   cwd=ROOT, check=True, capture_output=True)


def test_page_follows_the_change_feed_within_a_second_of_a_cli_change(agent: Agent, live_server: str,
                                                                      browser: object) -> None:
    """The page follows the server's change feed (no polling): a change made through the CLI, another process on
    the same store, is on the page within a second of its commit (from the change's time to the moment its history
    entry appears, on one clock), and the selected entity's facts follow."""
    page = browser.new_page()  # type: ignore[attr-defined]
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    polls: list[str] = []
    page.on("request", lambda r: polls.append(r.url) if "/api/history?limit=1" in r.url else None)
    page.goto(live_server)
    page.wait_for_selector("body[data-ready='1'][data-feed='live']")
    page.click("#entity-list li[data-name='kitchen_light']")
    page.wait_for_selector("#facts tr[data-fact='(switched_on kitchen_light)']")
    page.evaluate(SEEN)
    for args in (["remove", "(switched_on kitchen_light)", "--note", "off, said the CLI"],
                 ["add", "(switched_on kitchen_light)"], ["remove", "(switched_on kitchen_light)"]):
        cli(agent.graph.url, *args)
        (change,) = agent.history(1)
        page.wait_for_function(f"window.seen[{change.id}] !== undefined")
        latency = page.evaluate(f"window.seen[{change.id}]") / 1000 - change.time.timestamp()
        print(f"change {change.id} on the page {latency:.3f} s after its commit")
        assert latency < 1.0
    assert "off, said the CLI" in page.text_content("#history")
    page.wait_for_function("!document.querySelector(\"#facts tr[data-fact='(switched_on kitchen_light)']\")")
    assert not polls and not errors, (polls, errors)


def test_page_polls_where_the_change_feed_is_refused(agent: Agent, browser: object) -> None:
    """A server that opens no event stream (429): the page says so and follows the server by polling instead."""
    with serving(agent, limits=Limits(streams=0)) as url:
        page = browser.new_page()  # type: ignore[attr-defined]
        page.goto(url)
        page.wait_for_selector("body[data-ready='1'][data-feed='polling']")
        assert "live updates are unavailable" in page.text_content("#graph-msg")
        other_client(url, {"add": ["(switched_on hallway_light)"], "note": "from elsewhere"})
        page.wait_for_selector("#history li:first-child:has-text('from elsewhere')")
