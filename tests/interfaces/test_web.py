"""The web page in headless Debian Chromium driven by Playwright (no browser download): select an entity, correct
a fact, see a refused correction's message, undo, tell a change through the scripted LLM, see the graph update,
plan; on an open-world graph, see placeholders and unknown facts marked. Screenshots go to a temporary folder (its
path is printed)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgplan.agent.agent import Agent
from kgplan.interfaces.api import serving
from kgplan.language.llm import ScriptedLLM

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is absent: apt-get install -y chromium")]


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
        page.wait_for_selector("#graph .node.center[data-name='kitchen_light']")
        assert page.locator("#graph .node[data-name='kitchen']").count() == 1
        assert "switched_on" in page.text_content("#graph .node[data-name='kitchen_light'] .unary")
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
        agent._llm = ScriptedLLM([json.dumps({"entities": ["kitchen_light"]}), json.dumps(
            {"add": [], "remove": [{"predicate": "switched_on", "args": ["kitchen_light"]}]})])
        page.fill("#ask", "Omar switched the kitchen light off")
        page.click("#tell-btn")
        page.wait_for_selector("#outcome .ok")
        page.wait_for_function("!document.querySelector(\"#graph .node[data-name='kitchen_light'] .unary\")"
                               ".textContent.includes('switched_on')")
        page.wait_for_selector("#history li:first-child:has-text('Omar switched the kitchen light off')")
        assert page.locator("#progress li").count() >= 1
        page.screenshot(path=shots / "4-told.png")

        # plan for a PDDL goal: the steps with their effects, highlighted in the graph
        page.fill("#ask", "(switched_on kitchen_light)")
        page.click("#goal-btn")
        page.wait_for_selector("#plan-steps li")
        assert "solved" in page.text_content("#outcome")
        steps = page.locator("#plan-steps li")
        steps.last.click()
        assert "+ (switched_on kitchen_light)" in steps.last.text_content()
        page.wait_for_selector("#graph .node.added[data-name='kitchen_light']")
        page.screenshot(path=shots / "5-plan.png")

        # pan and zoom change the view's transform
        before = page.get_attribute("#viewport", "transform")
        page.mouse.move(700, 300)
        page.mouse.wheel(0, -300)
        page.wait_for_function(f"document.querySelector('#viewport').getAttribute('transform') !== {before!r}")
        browser.close()
    assert not errors, errors
    assert sorted(x.name for x in Path(shots).iterdir()) == [
        "1-selected.png", "2-refused.png", "3-undone.png", "4-told.png", "5-plan.png"]


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
        page.wait_for_selector("#graph .node.center[data-name='kitchen']")
        assert page.locator("#graph .node.placeholder[data-name='room_east'] .qmark").count() == 1
        assert page.locator("#graph .node.placeholder").count() == 1
        exit_east = page.locator("#graph .edge.unknown[data-fact='(connected kitchen east room_east)']").count()
        assert exit_east >= 1 and page.locator("#graph .edge.unknown").count() == exit_east  # one per other argument
        assert "placeholder (not yet identified)" in page.text_content("#legend")
        # the fact table marks the fact that names it; the kitchen itself has no marks
        page.wait_for_selector("#facts tr.unknown[data-fact='(connected kitchen east room_east)'] .mark")
        assert page.locator("#facts tr.unknown").count() == 1
        assert page.text_content("#entity-marks") == ""
        page.screenshot(path=shots / "open-1-kitchen.png")

        # the coin: ringed, and its panel says where it is not known
        page.click("#entity-list li[data-name='coin']")
        page.wait_for_selector("#graph .node.center.has-unknown[data-name='coin'] .unknown-ring")
        assert "unknown: (coin_in coin ?)" in page.text_content("#entity-marks")
        page.click("#entity-list li[data-name='room_east']")
        page.wait_for_selector("#graph .node.center.placeholder[data-name='room_east']")
        assert "placeholder: not yet identified" in page.text_content("#entity-marks")
        page.screenshot(path=shots / "open-2-placeholder.png")
    assert not errors, errors
    assert sorted(x.name for x in Path(shots).iterdir()) == ["open-1-kitchen.png", "open-2-placeholder.png"]
