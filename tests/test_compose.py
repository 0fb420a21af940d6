"""docker-compose.yml: validated by `docker compose config` (or `docker-compose config`) where one works, and its
structure checked in any case: Neo4j 5 plus the agent's web service using it, the local model server optional."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import yaml

from tests.conftest import ROOT

COMPOSE = ROOT / "docker-compose.yml"
ENV = {**os.environ, "NEO4J_PASSWORD": "test-password"}


def compose_command() -> list[str] | None:
    """The docker compose CLI here, if there is one (the plugin or the standalone tool)."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


def test_compose_config_validates() -> None:
    cmd = compose_command()
    if cmd is None:
        pytest.skip("no docker compose CLI here (test_compose_structure checks the file)")
    r = subprocess.run([*cmd, "-f", str(COMPOSE), "--profile", "llm", "config"], capture_output=True, text=True,
                       env=ENV, timeout=60)
    assert r.returncode == 0, r.stderr
    services = yaml.safe_load(r.stdout)["services"]
    assert {"neo4j", "agent", "llm"} <= set(services)


def test_compose_structure() -> None:
    spec = yaml.safe_load(COMPOSE.read_text())
    services = spec["services"]
    assert services["neo4j"]["image"].startswith("neo4j:5")
    agent = services["agent"]
    assert (ROOT / "Dockerfile").is_file() and agent["build"] == "."
    assert agent["environment"]["KGPLAN_STORE"] == "neo4j://neo4j:7687"
    assert agent["depends_on"]["neo4j"]["condition"] == "service_healthy"
    assert agent["command"][:2] == ["kgplan", "serve"] and "0.0.0.0" in agent["command"]
    assert "--domain" in agent["command"]
    problem = agent["command"][agent["command"].index("--problem") + 1]
    assert (ROOT / problem).is_file()
    assert services["llm"]["profiles"] == ["llm"]
    for s in services.values():  # nothing published beyond this machine
        assert all(str(p).startswith("127.0.0.1:") for p in s.get("ports", [])), s["ports"]
    assert set(spec["volumes"]) == {"neo4j-data"}
    json.dumps(spec)  # plain data, no YAML-only constructs
