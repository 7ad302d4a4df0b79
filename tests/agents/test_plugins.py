"""Agents from outside the package: ``--agent package.module:Class``, ``--agent path/to/agent.py:Class`` and installed
plug-ins (entry points of ``spatialact.agents``) through ``spatialact eval``, ``questions score`` and ``spatialact
agents``; ``reset(task, mode=..., seed=...)`` as the protocol says (a ``reset(task)`` still works); ``async def``
agents; spawned workers importing the plug-in by its name; a file plug-in's SHA-256 in the run configuration (an
edited file refuses the resume); Ray refusing a file; and examples/my_agent.py run end to end."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pybullet")

from spatialact.agents import AgentConfigError, canonical_agent_name, make_agent  # noqa: E402
from spatialact.agents.plugins import accepted_keywords, adapt_agent  # noqa: E402
from spatialact.cli.main import main  # noqa: E402
from spatialact.evaluation.episode import EpisodeConfig, episode_seed, run_episode  # noqa: E402
from spatialact.evaluation.runner import AgentSpec, run_eval  # noqa: E402
from spatialact.taskgen import procedural_tasks  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "my_agent.py"
SIZE = ("--size", "32", "--renderer", "tiny", "--no-progress")

PLUGIN = '''
"""Test plug-ins: each writes what it was given to a JSON-lines log (across worker processes)."""

import asyncio
import json
import os
import threading


def _log(path, **rec):
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(dict(rec, pid=os.getpid())) + "\\n")


class Recorder:
    """Logs reset's arguments and answers Stay.

    ``log`` — the file the calls are written to.
    """

    name = "recorder"

    def __init__(self, log: str = ""):
        self.log = log

    def reset(self, task, mode="one-shot", seed=None):
        self.task, self.mode, self.seed, self.turns = task, mode, seed, 0
        _log(self.log, call="reset", task=task.id, mode=mode, seed=seed)

    def act(self, observation):
        _log(self.log, call="act", task=self.task.id, mode=observation["mode"])
        self.turns += 1  # Dolly In by a count drawn from the episode's seed, then (closed-loop) Stay
        return '{"Stay": 1}' if self.turns > 1 else '{"Dolly In": %d}' % (1 + self.seed % 5)

    def answer(self, question):
        _log(self.log, call="answer", keys=sorted(question), shapes=[list(a.shape) for a in question["images"]],
             options=question["options"], format=question["format"])
        return "(B)" if question["options"] else "2.5"


class Legacy:
    """An agent written before reset took mode and seed: reset(task) only, no name, no describe."""

    def __init__(self, log=""):
        self.log = log

    def reset(self, task):
        self.task = task
        _log(self.log, call="reset", task=task.id)

    def act(self, observation):
        return "Dolly In" if observation["mode"] == "one-shot" or observation["step_index"] == 0 else "Stay"


class Async:
    """async reset and act; logs the event loop and thread of every call."""

    name = "async-agent"

    def __init__(self, log=""):
        self.log = log

    async def reset(self, task, **kw):
        await asyncio.sleep(0)
        self.task, self.mode, self.n = task, kw["mode"], 0
        _log(self.log, call="reset", loop=id(asyncio.get_running_loop()), thread=threading.get_ident(), **kw)

    async def act(self, observation):
        await asyncio.sleep(0.001)
        self.n += 1
        _log(self.log, call="act", loop=id(asyncio.get_running_loop()), thread=threading.get_ident())
        return "Dolly In" if self.mode == "one-shot" or self.n <= 2 else "Stay"


class Anything:
    def __init__(self, **options):
        self.options = options

    def act(self, observation):
        return 42


class QuestionsOnly:
    def answer(self, question):
        return "(A)"


NOT_A_CLASS = 3


class NoAct:
    def reset(self, task):
        pass
'''


@pytest.fixture(scope="module")
def plugdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("plugins")
    (d / "recplug.py").write_text(PLUGIN, encoding="utf-8")
    (d / "broken_syntax.py").write_text("class A:\n    def act(self, o)\n        return 1\n", encoding="utf-8")
    (d / "raises.py").write_text("raise RuntimeError('no GPU here')\n", encoding="utf-8")
    (d / "imports_missing.py").write_text("import spatialact_no_such_dependency\n", encoding="utf-8")
    return d


@pytest.fixture
def on_path(plugdir, monkeypatch):
    """The plug-in folder importable, in this process and in spawned workers (PYTHONPATH)."""
    monkeypatch.syspath_prepend(str(plugdir))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugdir), os.environ.get("PYTHONPATH", "")]))
    return plugdir


@pytest.fixture(scope="module")
def tasks():
    return procedural_tasks("nav", 3, seed=0, n_steps=(2, 3))


def _log(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def _records(run_dir) -> list[dict]:
    return [json.loads(x) for x in (Path(run_dir) / "results.jsonl").read_text(encoding="utf-8").splitlines()]


def _cfg(mode: str, **kw) -> EpisodeConfig:
    return EpisodeConfig(mode=mode, renderer="tiny", width=32, height=32, max_steps=6, **kw)


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]


# ----- reset(task, mode=..., seed=...) -------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["one-shot", "closed-loop"])
def test_reset_gets_the_mode_and_the_episode_seed(on_path, tasks, tmp_path, mode):
    log = tmp_path / "log.jsonl"
    run_eval(tasks, AgentSpec("recplug:Recorder", {"log": str(log)}), _cfg(mode, seed=7), tmp_path / "run",
             task_source="t", progress=False, repeats=2)
    resets = [r for r in _log(log) if r["call"] == "reset" and r["pid"] == os.getpid()]
    got = sorted((r["task"], r["mode"], r["seed"]) for r in resets)
    want = sorted((t.id, mode, (episode_seed(7, t.id) + k) & 0x7FFFFFFF) for t in tasks for k in range(2))
    assert got == want  # the run's mode, and the seed the episode's agent was built with (plus the repeat)
    acts = [r for r in _log(log) if r["call"] == "act"]
    assert acts and {r["mode"] for r in acts} == {mode}
    recs = _records(tmp_path / "run")
    assert {r["agent"] for r in recs} == {"recorder"} and all(r["reason"] is None for r in recs)


@pytest.mark.parametrize("mode", ["one-shot", "closed-loop"])
def test_an_agent_whose_reset_takes_only_the_task_still_runs(on_path, tasks, tmp_path, mode):
    log = tmp_path / "log.jsonl"
    run_eval(tasks[:2], AgentSpec("recplug:Legacy", {"log": str(log)}), _cfg(mode), tmp_path / "run",
             task_source="t", progress=False)
    assert [r["task"] for r in _log(log)] == [t.id for t in tasks[:2]]
    recs = _records(tmp_path / "run")
    assert all(r["error"] is None and r["reason"] is None for r in recs), [r["error"] for r in recs]
    assert {r["agent"] for r in recs} == {"recplug:Legacy"}  # no name of its own: the plug-in's
    if mode == "closed-loop":  # it saw the mode in the observation: one step, then Stay
        assert [r["n_executed"] for r in recs] == [1, 1] and all(r["response"] == ["Dolly In", "Stay"] for r in recs)
    else:
        assert all(r["response"] == "Dolly In" and r["n_executed"] == 1 for r in recs)


def test_a_python_object_without_the_protocols_reset_runs_too(on_path, tasks):
    """run_episode wraps an outside agent object (adapt_agent): reset(task) only, an answer given as text."""
    import recplug

    agent = recplug.Legacy()
    rec, _ = run_episode(tasks[0], agent, _cfg("closed-loop"))
    assert rec["error"] is None and rec["n_executed"] == 1 and agent.task is tasks[0]
    assert accepted_keywords(agent.reset) == (frozenset({"task"}), False)
    from spatialact.agents.baselines import OracleAgent

    oracle = OracleAgent()
    assert adapt_agent(oracle) is oracle  # the package's agents are not wrapped


def test_reset_signature_is_read_once_per_function(on_path):
    import recplug

    from spatialact.agents import plugins

    plugins._ACCEPTS.clear()
    a, b = make_agent("recplug:Recorder"), make_agent("recplug:Recorder")
    task = procedural_tasks("nav", 1, seed=1)[0]
    a.reset(task, mode="closed-loop", seed=3)
    b.reset(task, mode="one-shot", seed=4)
    # one inspection of the constructor and one of reset, for two agents and two resets
    assert set(plugins._ACCEPTS) == {recplug.Recorder, recplug.Recorder.reset}
    assert (a.mode, b.mode, a.episode_seed, b.episode_seed) == ("closed-loop", "one-shot", 3, 4)


# ----- async -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["one-shot", "closed-loop"])
def test_an_async_agent_runs_on_one_event_loop_per_thread(on_path, tasks, tmp_path, mode):
    log = tmp_path / "log.jsonl"
    agent = make_agent("recplug:Async", log=str(log))
    recs = [run_episode(t, agent, _cfg(mode))[0] for t in tasks[:2]]
    assert all(r["error"] is None for r in recs), [r["error"] for r in recs]
    if mode == "closed-loop":
        assert [r["n_executed"] for r in recs] == [2, 2]  # two Dolly In turns, then Stay
        assert all(r["response"] == ["Dolly In", "Dolly In", "Stay"] for r in recs)
    else:
        assert all(r["response"] == "Dolly In" for r in recs)
    calls = _log(log)
    assert {c["mode"] for c in calls if c["call"] == "reset"} == {mode}
    assert all(isinstance(c["seed"], int) for c in calls if c["call"] == "reset")
    assert len({c["loop"] for c in calls}) == 1 and len({c["thread"] for c in calls}) == 1  # one loop, kept


def test_an_async_agent_inside_a_running_event_loop(on_path, tasks, tmp_path):
    """Called from inside a running loop (a notebook), the coroutines run on a helper thread's own loop."""
    log = tmp_path / "log.jsonl"
    agent = make_agent("recplug:Async", log=str(log))

    async def main_():
        return run_episode(tasks[0], agent, _cfg("closed-loop"))[0]

    rec = asyncio.run(main_())
    assert rec["error"] is None and rec["n_executed"] == 2
    assert len({c["loop"] for c in _log(log)}) == 1


def test_what_act_returns_is_checked(on_path, tasks):
    rec, _ = run_episode(tasks[0], make_agent("recplug:Anything", anything="goes"), _cfg("one-shot"))
    assert rec["reason"] == "error" and "act() returned int; expected an AgentTurn, the answer's text" in rec["error"]


# ----- three ways to name one -------------------------------------------------------------------------------------
def test_module_file_and_entry_point_plugins(on_path, tmp_path, monkeypatch, capsys):
    file_spec = f"{on_path / 'recplug.py'}:Recorder"
    assert canonical_agent_name("recplug:Recorder") == "recplug:Recorder"
    assert canonical_agent_name(os.path.relpath(on_path / "recplug.py") + ":Recorder") == file_spec
    dist = tmp_path / "site"
    info = dist / "recplug_dist-1.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: recplug-dist\nVersion: 1.2\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[spatialact.agents]\nrec-ep = recplug:Recorder\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(dist))
    assert canonical_agent_name("rec-ep") == "rec-ep"
    agent = make_agent("rec-ep", log="")
    assert agent.name == "recorder" and agent.describe()["plugin"] == "rec-ep"
    assert main(["agents"]) == 0  # listed after the built-in agents, with its options and their meanings
    out = capsys.readouterr().out
    assert "rec-ep (plug-in: entry point recplug:Recorder of recplug-dist 1.2)" in out
    assert out.index("rec-ep") > out.index("plan-execute")
    assert "the file the calls are written to" in out
    run = tmp_path / "run"
    assert main(["eval", "--suite", "nav:1", "--agent", "rec-ep", *SIZE, "--out", str(run)]) == 0
    assert json.loads((run / "config.json").read_text())["config"]["agent"] == {"name": "rec-ep", "kwargs": {}}


def test_the_listing_reads_options_from_the_constructor(on_path, capsys):
    assert main(["agents", str(EXAMPLE) + ":DollyAgent", "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js == {f"{EXAMPLE}:DollyAgent": [{"name": "count", "type": "int", "default": 1, "required": False,
                                             "meaning": "units moved forward per step (1…10)"}]}
    with pytest.raises(AgentConfigError, match=r"bad parameters: no option 'cnt' \(its options: count"):
        make_agent(f"{EXAMPLE}:DollyAgent", cnt=2)
    assert make_agent("recplug:Anything", whatever=1, other="x").options == {"whatever": 1, "other": "x"}


BAD = [
    ("spatialact_nosuch_mod:Agent", "cannot import module spatialact_nosuch_mod: no module named "
                                    "'spatialact_nosuch_mod'"),
    ("{d}/missing.py:Agent", "missing.py: no such file"),
    ("{d}/broken_syntax.py:A", "importing file {d}/broken_syntax.py failed: SyntaxError: expected ':'"),
    ("{d}/raises.py:A", "failed: RuntimeError: no GPU here"),
    ("{d}/imports_missing.py:A", "no module named 'spatialact_no_such_dependency'"),
    ("recplug:Nope", "module recplug has no 'Nope' (its classes: Anything, Async, Legacy, NoAct, QuestionsOnly, "
                     "Recorder)"),
    ("recplug:NOT_A_CLASS", "NOT_A_CLASS is no class (nor a function that makes an agent): it is int"),
    ("recplug:9x", "'9x' after the ':' is not a class name"),
    ("{d}:Recorder", "is a folder, not a regular file"),
    ("spatialact_no_such_plugin", "unknown agent 'spatialact_no_such_plugin'"),
]


@pytest.mark.parametrize("spec,why", BAD)
def test_a_plugin_that_cannot_load_is_refused_in_one_line_before_anything_is_written(on_path, tmp_path, capsys,
                                                                                       spec, why):
    spec, why = spec.format(d=on_path), why.format(d=on_path)
    out = tmp_path / "run"
    assert main(["eval", "--suite", "nav:1", "--agent", spec, *SIZE, "--out", str(out)]) == 2
    line = _one_line(capsys)
    assert why in line and not out.exists(), line
    if spec != "spatialact_no_such_plugin":
        assert f"agent {spec!r}" in line  # the string as given
    assert main(["questions", "score", str(tmp_path / "q.jsonl"), "--agent", spec, "--out", str(out)]) == 2
    assert why in _one_line(capsys) and not out.exists()
    assert main(["agents", spec]) == 2 and why in _one_line(capsys)


def test_a_class_without_act_cannot_run_episodes(on_path, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["eval", "--suite", "nav:1", "--agent", "recplug:NoAct", *SIZE, "--out", str(out)]) == 2
    assert "has no act(observation) method" in _one_line(capsys) and not out.exists()
    assert main(["eval", "--suite", "nav:1", "--agent", "recplug:QuestionsOnly", *SIZE, "--out", str(out)]) == 2
    assert "has no act(observation) method: it cannot run episodes" in _one_line(capsys) and not out.exists()


# ----- workers, the run configuration, Ray -----------------------------------------------------------------------
def test_spawned_workers_import_the_plugin_by_its_name(on_path, tmp_path):
    local = tmp_path / "recplug_copy.py"
    shutil.copy(on_path / "recplug.py", local)
    for i, spec in enumerate(("recplug:Recorder", f"{local}:Recorder")):
        runs = {}
        for workers in (1, 2):
            log = tmp_path / f"log{i}-{workers}.jsonl"
            out = tmp_path / f"run{i}-{workers}"
            assert main(["eval", "--suite", "nav:4", "--agent", spec, "--agent-arg", f"log={log}", *SIZE,
                         "--workers", str(workers), "--out", str(out)]) == 0
            runs[workers] = {r["key"]: (r["response"], r["score"], r["pred"]) for r in _records(out)}
            pids = {r["pid"] for r in _log(log) if r["call"] == "act"}
            assert len(pids) >= 1 and (os.getpid() in pids) == (workers == 1)  # spawned workers imported it
        assert runs[1] == runs[2] and len(runs[1]) == 4
        assert len({json.dumps(v[0]) for v in runs[1].values()}) > 1  # answers that depend on each episode's seed


def test_a_file_plugin_is_recorded_with_its_sha256_and_an_edit_refuses_the_resume(tmp_path, capsys):
    plug = tmp_path / "a" / "my_agent.py"
    plug.parent.mkdir()
    shutil.copy(EXAMPLE, plug)
    run = tmp_path / "run"
    args = ["eval", "--suite", "nav:2", *SIZE, "--out", str(run), "--json"]
    assert main([*args, "--agent", f"{plug}:DollyAgent"]) == 0
    capsys.readouterr()
    agent = json.loads((run / "config.json").read_text())["config"]["agent"]
    assert agent == {"name": f"{plug}:DollyAgent", "kwargs": {},
                     "name_sha256": hashlib.sha256(plug.read_bytes()).hexdigest()}
    prov = _records(run)[0]["provenance"]["agent"]
    assert prov["plugin_sha256"] == agent["name_sha256"] and prov["agent"] == "dolly"
    moved = tmp_path / "b" / "my_agent.py"  # the same file elsewhere: the same run
    moved.parent.mkdir()
    shutil.copy(plug, moved)
    assert main([*args, "--agent", f"{moved}:DollyAgent"]) == 0
    assert json.loads(capsys.readouterr().out)["new"] == 0
    before = (run / "results.jsonl").read_bytes()
    plug.write_text(plug.read_text() + "\n# tuned\n", encoding="utf-8")
    assert main([*args, "--agent", f"{plug}:DollyAgent"]) == 2
    line = _one_line(capsys)
    assert f"the agent plug-in {plug}:DollyAgent changed since this run was made (its SHA-256 " \
           f"{agent['name_sha256'][:12]}… → " in line and "restore the file" in line
    assert (run / "results.jsonl").read_bytes() == before


def test_ray_refuses_a_file_plugin(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["eval", "--suite", "nav:1", "--agent", f"{EXAMPLE}:DollyAgent", "--backend", "ray", *SIZE,
                 "--out", str(out)])
    line = _one_line(capsys)
    assert code == 2 and not out.exists()
    assert "--backend ray needs an agent its workers can import by module" in line and "is a file" in line


# ----- the example, end to end ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def qfile(tmp_path_factory):
    from spatialact.questions import build_questions

    d = tmp_path_factory.mktemp("qs")
    return build_questions(d / "q.jsonl", n=1, seed=0, size=32, types=["relative_pose", "depth"]).path


def test_the_example_runs_one_shot_and_closed_loop(tmp_path, capsys):
    spec = "examples/my_agent.py:DollyAgent"
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for mode in ("one-shot", "closed-loop"):
            out = tmp_path / mode
            assert main(["eval", "--suite", "nav:3", "--agent", spec, "--agent-arg", "count=2", "--mode", mode,
                         *SIZE, "--out", str(out)]) == 0
    finally:
        os.chdir(cwd)
    capsys.readouterr()
    for r in _records(tmp_path / "one-shot"):  # one Dolly In step per ground-truth step, all at once
        n = len(r["gt"]["steps"])
        assert r["agent"] == "dolly" and r["response"] == json.dumps([{"Dolly In": 2}] * n)
        assert r["n_executed"] == n and r["reason"] is None
    for r in _records(tmp_path / "closed-loop"):  # one step a turn, as many as the ground truth, then Stay
        n = len(r["gt"]["steps"])
        assert r["response"] == [json.dumps({"Dolly In": 2})] * n + [json.dumps({"Stay": 1})]
        assert r["n_executed"] == n and len(r["pred"]["steps"]) == n


def test_the_example_and_a_recorder_answer_questions(on_path, qfile, tmp_path, capsys):
    out = tmp_path / "q"
    assert main(["questions", "score", str(qfile), "--agent", f"{EXAMPLE}:DollyAgent", "--out", str(out),
                 "--no-progress"]) == 0
    capsys.readouterr()
    recs = _records(out)
    assert recs and {r["agent"] for r in recs} == {"dolly"}
    assert {r["format"] for r in recs} >= {"numeric", "multiple_choice"}
    assert {r["response"] for r in recs if r["format"] == "numeric"} <= {"1.0"}
    assert {r["response"] for r in recs if r["format"] != "numeric"} <= {"(A)"}
    cfg = json.loads((out / "config.json").read_text())["config"]
    assert cfg["agent_plugin"] == f"{EXAMPLE}:DollyAgent"
    assert cfg["agent_plugin_sha256"] == hashlib.sha256(EXAMPLE.read_bytes()).hexdigest()
    log = tmp_path / "log.jsonl"
    assert main(["questions", "score", str(qfile), "--agent", "recplug:Recorder", "--agent-arg", f"log={log}",
                 "--out", str(tmp_path / "q2"), "--no-progress"]) == 0
    calls = _log(log)
    assert calls and all(c["keys"] == ["format", "id", "images", "messages", "options", "question", "type", "unit"]
                         for c in calls)  # never the answer, the points or the poses
    assert all(len(c["shapes"]) >= 1 and all(s[2] == 3 for s in c["shapes"]) for c in calls)
    shown = [c["options"] for c in calls if c["format"] == "multiple_choice"]
    assert len(shown) > 1 and all(len(o) > 1 for o in shown) and shown[0] != shown[1]  # rotated as the prompt
    recs = _records(tmp_path / "q2")
    assert all(r["correct"] == (r["answer"] == "B") for r in recs if r["format"] == "multiple_choice")
    assert main(["questions", "score", str(qfile), "--agent", "recplug:Legacy", "--out", str(tmp_path / "q3")]) == 2
    assert "does not answer questions: it has no answer(question) method" in _one_line(capsys)


def test_demo_names_a_file_plugins_run_folder_inside_out(tmp_path, capsys):
    from spatialact.cli.main import main

    out = tmp_path / "demo"
    assert main(["demo", "--agents", f"{EXAMPLE}:DollyAgent", "--suite", "nav:1", "--no-diagnostics",
                 "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert [p.name for p in (out / "runs").iterdir()] == ["my_agent.py_DollyAgent-one-shot"]
    assert not list(EXAMPLE.parent.glob("*DollyAgent*"))  # nothing written beside the plug-in
