"""The shared vocabularies (spatialact.vocab) are defined once (no other module re-exports them:
tests/docs/test_layering.py), the agents and the shipped schema agree with them, and the vocabulary and the record owner
import no other part of spatialact (every layer may import them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from spatialact import vocab

SRC = str(Path(__file__).parents[2] / "src")


def test_the_baselines_and_the_schema_agree_with_the_vocabularies():
    from spatialact.agents import AGENT_NAMES

    assert set(vocab.BASELINE_AGENTS) <= set(AGENT_NAMES)
    schema = json.loads((Path(SRC) / "spatialact" / "schemas" / "task.schema.json").read_text())
    assert tuple(schema["properties"]["kind"]["enum"]) == vocab.KINDS
    assert tuple(schema["properties"]["answer_format"]["enum"]) == vocab.ANSWER_FORMATS


def test_the_cli_choices_are_the_vocabularies():
    import argparse

    from spatialact.cli import demo, eval as eval_cmd

    p = argparse.ArgumentParser()
    eval_cmd.add_arguments(p)
    choices = {a.dest: tuple(a.choices) for a in p._actions if a.choices}
    assert choices["mode"] == vocab.MODES and choices["env"] == vocab.ENVS
    assert choices["profile"] == vocab.PROFILES and choices["backend"] == vocab.RUN_BACKENDS
    p = argparse.ArgumentParser()
    demo.add_arguments(p)
    assert next(a for a in p._actions if a.dest == "agents").default == ",".join(vocab.BASELINE_AGENTS)


def test_vocab_and_records_import_nothing_else_of_spatialact():
    code = ("import sys, json\n"
            "import spatialact.records as r, spatialact.vocab\n"
            "r.is_failure({}); r.record_key({'key': 'k'})\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('spatialact'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
    assert json.loads(out.stdout) == ["spatialact", "spatialact.records", "spatialact.vocab"]
