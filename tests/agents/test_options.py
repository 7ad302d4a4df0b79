"""Each agent's options, listed and checked from one source: names, types and defaults from the
agent's constructor, meanings from ``spatialact.agents.options``; an unknown or mistyped ``--agent-arg`` is one line
naming the agent, the option and the valid ones (exit 2); a missing API key is found before the suite is built or
the question file read; swapped ``score`` arguments are named as such."""

from __future__ import annotations

import argparse
import inspect
import json
import os

import pytest

from _fabricate import make_task
from spatialact.agents import AGENT_ALIASES, AGENT_NAMES, AgentConfigError, make_agent
from spatialact.agents.options import NOT_LISTED, agent_class, agent_options, parse_meanings
from spatialact.cli.main import main
from spatialact.tasks import save_tasks


def _constructor_names(cls) -> set[str]:
    names = set()
    for c in cls.__mro__:
        init = c.__dict__.get("__init__")
        if init is None or c is object:
            continue
        params = list(inspect.signature(init).parameters.values())[1:]
        names |= {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return names - set(NOT_LISTED)


@pytest.mark.parametrize("name", AGENT_NAMES)
def test_every_option_of_every_agent_is_listed_with_a_meaning(name):
    opts = agent_options(name)
    assert {o.name for o in opts} == _constructor_names(agent_class(name))
    assert all(o.meaning for o in opts), [o.name for o in opts if not o.meaning]
    import spatialact.agents.options as mod

    documented = parse_meanings(mod.__doc__)[name]
    assert set(documented) <= _constructor_names(agent_class(name))  # no meaning of an option that does not exist


def test_types_and_defaults_are_the_constructors():
    from spatialact.agents.baselines import RandomAgent
    from spatialact.agents.tool_agent import ReActAgent

    sig = inspect.signature(RandomAgent.__init__).parameters
    by = {o.name: o for o in agent_options("random")}
    assert (by["p_move"].type, by["p_move"].default) == ("float", sig["p_move"].default) == ("float", 0.5)
    react = {o.name: o for o in agent_options("react")}
    assert react["max_tokens"].default == inspect.signature(ReActAgent.__init__).parameters["max_tokens"].default
    assert react["timeout"].default == 600.0 and react["model"].required and not react["timeout"].required


def test_parse_meanings_reads_inheritance_and_own_lines():
    doc = """
    * ``a``:
      ``x`` — the x;
      ``y`` — the y.

    * ``b``, ``c``: those of ``a``, and
      ``y`` — b's y;
    """
    assert parse_meanings(doc) == {"a": {"x": "the x", "y": "the y"}, "b": {"x": "the x", "y": "b's y"},
                                   "c": {"x": "the x", "y": "b's y"}}


# ----- refusals ----------------------------------------------------------------------------------------------------
def _eval(capsys, tmp_path, *argv) -> tuple[int, str]:
    out = tmp_path / "run"
    code = main(["eval", "--no-progress", "--suite", "nav:1", "--out", str(out), *argv])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert "Traceback" not in err and len(lines) == 1 and not out.exists(), err
    return code, lines[0]


def test_an_unknown_option_names_the_agent_the_option_and_the_valid_ones(tmp_path, capsys):
    code, line = _eval(capsys, tmp_path, "--agent", "random", "--agent-arg", "p_mvoe=0.3")
    assert code == 2
    assert line.endswith("agent 'random': bad parameters: no option 'p_mvoe' (its options: p_move, max_count; "
                         "`spatialact agents random` says what each means)")
    with pytest.raises(AgentConfigError, match=r"agent 'oracle': bad parameters: no option 'model' \(it takes no "
                                               r"options\)"):
        make_agent("oracle", model="x")


@pytest.mark.parametrize("agent,arg,expect", [
    ("random", "p_move=abc", "agent 'random': option 'p_move' must be a number (float, default 0.5), got 'abc'"),
    ("noisy-oracle", "noise=[1]", "agent 'noisy-oracle': option 'noise' must be a number (float, default 1.0), "
                                  "got '[1]'"),
    ("geometric", "ratio=abc", "agent 'geometric': option 'ratio' must be a number (float, default 0.8), got 'abc'"),
])
def test_a_value_that_is_no_number_names_the_option(tmp_path, capsys, agent, arg, expect):
    code, line = _eval(capsys, tmp_path, "--agent", agent, "--agent-arg", arg)
    assert code == 2 and line.endswith(expect)


def test_a_yes_no_option_takes_true_or_false_only():
    # "no" would have read as yes: trust_remote_code="no" runs the repository's code
    with pytest.raises(AgentConfigError, match="agent 'hf': option 'trust_remote_code' must be true or false"):
        make_agent("hf", model="some/model", trust_remote_code="no")
    with pytest.raises(AgentConfigError, match="option 'retry_on_timeout' must be true or false"):
        make_agent("openai", model="m", base_url="http://127.0.0.1:9/v1", retry_on_timeout="yes")


# ----- the listing -------------------------------------------------------------------------------------------------
def test_the_agents_listing_shows_every_option_type_default_and_meaning(capsys):
    from spatialact.cli.agents import run

    assert run(argparse.Namespace(agent=None, json=False)) == 0
    text = capsys.readouterr().out
    for name in AGENT_NAMES:
        assert name in text
        for o in agent_options(name):
            assert o.name in text and o.meaning in text
    assert "stay: no options" in text and "openai (also: mllm, api)" in text
    assert run(argparse.Namespace(agent="MLLM", json=True)) == 0  # an alias, any capitalisation
    js = json.loads(capsys.readouterr().out)
    assert list(js) == ["openai"] and [o["name"] for o in js["openai"]] == [o.name for o in agent_options("openai")]
    timeout = next(o for o in js["openai"] if o["name"] == "timeout")
    assert timeout["type"] == "float" and timeout["default"] == 600.0 and not timeout["required"]
    assert set(AGENT_ALIASES.values()) <= set(AGENT_NAMES)


# ----- credentials before the suite ----------------------------------------------------------------------------------
def test_eval_checks_the_api_key_before_building_the_suite(tmp_path, capsys, monkeypatch):
    import spatialact.taskgen.suites as suites

    built = []
    monkeypatch.setattr(suites, "builtin_suite", lambda *a, **k: built.append(a) or [])
    monkeypatch.delenv("SPATIALACT_NO_SUCH_KEY", raising=False)
    code, line = _eval(capsys, tmp_path, "--agent", "openai", "--agent-arg", "model=m", "--agent-arg",
                       "api_key_env=SPATIALACT_NO_SUCH_KEY")
    assert code == 2 and "SPATIALACT_NO_SUCH_KEY" in line
    assert built == []  # refused before the suite was built


def test_questions_score_checks_the_api_key_before_reading_the_question_file(tmp_path, capsys, monkeypatch):
    import spatialact.questions as questions

    read = []
    monkeypatch.setattr(questions, "load_question_file", lambda *a, **k: read.append(a))
    monkeypatch.delenv("SPATIALACT_NO_SUCH_KEY", raising=False)
    out = tmp_path / "run"
    code = main(["questions", "score", str(tmp_path / "q.jsonl"), "--agent", "openai", "--agent-arg", "model=m",
                 "--agent-arg", "api_key_env=SPATIALACT_NO_SUCH_KEY", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "SPATIALACT_NO_SUCH_KEY" in err and len(err.strip().splitlines()) == 1
    assert read == [] and not out.exists()


# ----- score: which file is which ------------------------------------------------------------------------------------
@pytest.fixture
def score_files(tmp_path):
    tasks = save_tasks([make_task("t0"), make_task("t1")], tmp_path / "tasks.jsonl")
    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n" + json.dumps({"task_id": "t0", "response": "[]"}) + "\n")
    return tasks, answers


def _score(capsys, *argv) -> tuple[int, str]:
    code = main(["score", "--no-progress", *map(str, argv)])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert "Traceback" not in err and len(lines) == 1, err
    return code, lines[0]


def test_swapped_score_arguments_say_which_file_is_which(score_files, capsys):
    tasks, answers = score_files
    code, line = _score(capsys, tasks, answers)
    assert code == 2 and line.endswith(f"the arguments are swapped: {tasks} is a task file and {answers} an answers "
                                       f"file; the order is ANSWERS TASKS: spatialact score {answers} {tasks}")
    assert not list(tasks.parent.glob("*.scores.jsonl"))  # nothing written
    code, line = _score(capsys, tasks, tasks)
    assert code == 2 and line.endswith(f"{tasks} is a task file, not an answers file: the order is ANSWERS TASKS")
    code, line = _score(capsys, answers, answers)
    assert code == 2 and line.endswith(f"{answers} is an answers file, not a task file: the order is ANSWERS TASKS")


def test_the_right_order_still_scores(score_files, capsys):
    tasks, answers = score_files
    assert main(["score", "--no-progress", "--json", str(answers), str(tasks)]) == 0
    assert json.loads(capsys.readouterr().out)["counts"]["scored"] == 1


def test_telling_the_files_apart_reads_at_most_a_line_and_survives_any_first_line(tmp_path, score_files, capsys):
    from spatialact.cli.score import check_argument_order, file_kind

    tasks, answers = score_files
    deep = tmp_path / "deep.jsonl"
    deep.write_text("{\"a\": " + "[" * 5000 + "]" * 5000 + "}\n")  # deeper than json decodes
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + tasks.read_bytes())
    long = tmp_path / "long.jsonl"
    long.write_text(json.dumps({"task_id": "t0", "response": "x" * (2 << 20)}) + "\n")  # past the 1 MiB read
    assert [file_kind(p) for p in (tasks, answers, deep, bom, long, tmp_path / "gone")] == \
        ["tasks", "answers", None, "tasks", None, None]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert file_kind(fifo) is None  # a pipe is never read here (it would block, and its lines are the answers)
    assert check_argument_order(str(answers), str(tasks)) is None


def test_spatialact_agents_is_a_command(capsys):
    assert main(["agents", "noisy"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("noisy-oracle (also: noisy, noisyoracle)") and "grip_flip" in out and "seed" not in out
    assert main(["agents", "gpt-magic"]) == 2
    assert "unknown agent 'gpt-magic'" in capsys.readouterr().err
