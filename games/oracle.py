"""A check device for the LLM mode of exploration, not a model: `SensorOracleLLM` answers the true edits,
read by the game's sensor from the environment's structured outputs, so the LLM path can be shown to lose
nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

from kgplan.errors import LLMError
from kgplan.games.base import Environment, Observation, Sensor
from kgplan.graph.model import Fact, Unknown
from kgplan.language.llm import LLM, CallRecord
from kgplan.language.pddl_edit import Edits, InitEdits, ObjectEdits, UnknownEdits
from kgplan.language.prompts import CurrentProblem, EditPrompt

M = TypeVar("M", bound=BaseModel)


def edits_between(shown: CurrentProblem, entities: dict[str, str], facts: set[Fact], marks: set[Unknown]) -> Edits:
    """The edits that turn the problem and unknowns a prompt shows into the given state (facts about deleted
    objects go with them, unsaid)."""
    objects = shown.problem.objects
    have = {str(a): a for a in shown.problem.init}
    want = {str(f) for f in facts}
    gone = objects.keys() - entities.keys()
    shown_marks = set(shown.unknowns)
    return Edits(
        objects=ObjectEdits(add=[f"{n} - {t}" for n, t in sorted(entities.items()) if n not in objects],
                            delete=sorted(gone)),
        init=InitEdits(add=sorted(want - have.keys()),
                       delete=sorted(t for t, a in have.items() if t not in want and gone.isdisjoint(a.args))),
        unknown=UnknownEdits(add=[str(u) for u in sorted(marks - shown_marks, key=str)],
                             delete=[str(u) for u in sorted(shown_marks - marks, key=str)
                                     if u.entity not in gone]))


class SensorOracleLLM(LLM):
    """A test and benchmark device, not a model: it answers the true edits. The game's sensor reads them from the
    environment's structured outputs (what sensor mode reads), and the answer is the difference between the
    sensor's state and the problem the prompt shows (`EditPrompt.shown`, not its text). It sees the environment
    through `watch(env)`."""

    def __init__(self, make_sensor: Callable[[], Sensor]) -> None:
        super().__init__()
        self.make_sensor = make_sensor
        self.pending: list[tuple[str | None, Observation]] = []

    def watch(self, env: Environment) -> Environment:
        """The environment, its observations also passed to the oracle."""
        return _Watched(env, self)

    def reset(self, obs: Observation) -> None:
        self.sensor = self.make_sensor()
        self.entities: dict[str, str] = dict(self.sensor.objects)
        self.facts: set[Fact] = set(self.sensor.facts)
        self.marks: set[Unknown] = set()
        self.pending = [(None, obs)]

    def complete(self, messages: list[dict], schema: type[M]) -> tuple[M, CallRecord]:
        if not isinstance(messages, EditPrompt):
            raise LLMError("the sensor oracle answers only the edit prompt (kgplan.language.prompts.edit_messages)")
        for action, obs in self.pending:  # the sensor reads each observation once, in order
            d = self.sensor.delta(self.facts, set(self.entities), action, obs)
            gone = set(d.removed_names())
            self.entities = {n: t for n, t in self.entities.items() if n not in gone}
            self.entities.update({e.name: e.type for e in d.new_entities})
            self.facts = {f for f in self.facts if gone.isdisjoint(f.args)} - set(d.remove) | set(d.add)
            self.marks = {u for u in self.marks if u.entity not in gone} - set(d.known) | set(d.unknown)
        self.pending = []
        edits = edits_between(messages.shown, self.entities, self.facts, self.marks)
        record = CallRecord("sensor-oracle", "json_schema", 0, 0, 0.0, 1)
        self.records.append(record)
        return schema.model_validate(edits.model_dump()), record


class _Watched:
    """An environment whose observations also go to a SensorOracleLLM."""

    def __init__(self, env: Environment, oracle: SensorOracleLLM) -> None:
        self.env, self.oracle = env, oracle

    @property
    def budget(self) -> int:
        return self.env.budget

    @property
    def commands(self) -> str:
        return self.env.commands

    def reset(self, seed: int) -> Observation:
        obs = self.env.reset(seed)
        self.oracle.reset(obs)
        return obs

    def step(self, action: str) -> Observation:
        obs = self.env.step(action)
        self.oracle.pending.append((action, obs))
        return obs

    def optimum(self, seed: int) -> int:
        return self.env.optimum(seed)

    def close(self) -> None:
        self.env.close()
