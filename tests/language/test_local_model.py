"""Opt-in smoke test against a real OpenAI-compatible model (see benchmarks/local_model.py).

Runs only with KGPLAN_SMOKE_LLM=1 and KGPLAN_LLM_BASE_URL set (e.g. the local llama.cpp server); CI
does not set them. It checks the real path end to end: request formats the server accepts, usage
recorded, replies parsed against the enum schemas, verification, and a plan from a written goal.
"""

from __future__ import annotations

import os

import pytest

from kgplan.graph.world import WorldGraph
from kgplan.language.llm import LLMConfig, OpenAIClient
from kgplan.language.update import select_entities, update, write_goal
from kgplan.planners.pipeline import plan

pytestmark = [pytest.mark.local_llm, pytest.mark.skipif(
    not (os.environ.get("KGPLAN_SMOKE_LLM") == "1" and os.environ.get("KGPLAN_LLM_BASE_URL")),
    reason="opt-in: set KGPLAN_SMOKE_LLM=1 and KGPLAN_LLM_BASE_URL (python -m kgplan.language.local_model --serve)")]


@pytest.fixture
def llm() -> OpenAIClient:
    return OpenAIClient(LLMConfig.from_env(timeout_s=600.0, temperature=0.0))


def test_a_told_change_is_parsed_verified_and_applied_or_refused(llm: OpenAIClient, world: WorldGraph) -> None:
    """The pipeline, not the model's skill: replies fit the schema, usage is recorded, and the graph changes
    only by a verified change (a small model may still fail to fix its change within the rounds)."""
    before = world.facts()
    text = "Omar took the apple off the kitchen counter and put it on the kitchen table."
    out = update(llm, world, text, select_entities(llm, world, text), max_rounds=3)
    assert out.calls and all(c.prompt_tokens > 0 and c.completion_tokens > 0 for c in out.calls), out.calls
    if out.change is None:
        assert out.error and world.facts() == before, out.error
    else:
        delta = out.change.delta  # applied through verification, exactly as proposed
        assert set(world.facts()) == (set(before) - set(delta.remove)) | set(delta.add)
    print(f"applied: {out.change.delta if out.change else None}; refused replies: {out.rounds}")


def test_a_task_becomes_a_goal_and_a_plan(llm: OpenAIClient, world: WorldGraph) -> None:
    text = "Please switch off the kitchen light."
    goal, out = write_goal(llm, world, text, select_entities(llm, world, text), max_rounds=3)
    assert goal is not None, f"no valid goal: {out.error}; issues: {out.rounds}"
    report = plan(world, out.goal or "")
    assert report.solved, report.message
    assert any("kitchen_light" in step for step in report.plan), report.plan
