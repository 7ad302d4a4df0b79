"""The shared vocabularies (spatialact.vocab) are defined once: their old homes re-export the same objects, the copies
still left in other modules hold the same values, and the vocabulary and the record owner import no other part of
spatialact (every layer may import them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from spatialact import records, vocab

SRC = str(Path(__file__).parents[1] / "src")


def test_old_homes_re_export_the_one_definition():
    import spatialact.cli.demo as demo
    import spatialact.diagnostics.mirror as mirror
    import spatialact.diagnostics.summaries as summaries
    import spatialact.evaluation.episode as episode
    import spatialact.evaluation.results as results
    import spatialact.evaluation.runner as runner
    import spatialact.questions.run as qrun
    import spatialact.questions.scoring as qscoring
    import spatialact.tasks as tasks
    import spatialact.tasks.task as task

    assert tasks.KINDS is task.KINDS is summaries.KINDS is vocab.KINDS
    assert tasks.ANSWER_FORMATS is vocab.ANSWER_FORMATS
    assert episode.MODES is vocab.MODES and episode.ENVS is vocab.ENVS
    assert summaries.LEVELS is vocab.LEVELS and mirror.VARIANTS is vocab.VARIANTS
    assert demo.BASELINES is vocab.BASELINE_AGENTS and runner.BACKENDS is vocab.RUN_BACKENDS
    for name in ("episode_key", "record_key", "is_failure", "FAILURE_REASONS", "RETRIED_ON_RESUME"):
        assert getattr(episode, name) is getattr(records, name), name
    assert results.episode_key is records.episode_key and results.record_key is records.record_key
    assert qrun.question_key is records.question_key and qscoring.FAILURE_REASONS is records.FAILURE_REASONS
    from spatialact.evaluation import is_failure, record_key

    assert is_failure is records.is_failure and record_key is records.record_key


def test_copies_in_other_modules_hold_the_same_values():
    """Modules outside this change still spell some vocabularies themselves; until they import them, they agree."""
    from spatialact.agents import AGENT_NAMES
    from spatialact.agents.base import ERROR_KINDS, MODES
    from spatialact.scorers.step import KINDS, PROFILES
    from spatialact.tasks.tags import LEVELS

    assert MODES == vocab.MODES and ERROR_KINDS == vocab.ERROR_KINDS
    assert KINDS == vocab.KINDS and PROFILES == vocab.PROFILES and LEVELS == vocab.LEVELS
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
