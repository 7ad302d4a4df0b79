"""Evaluation-run integrity: failures are not results, validation before writing, canonical resume keys,
costs and cache hits, the key scrubbed from model text, workers that die with their parent, one-line refusals,
the one-shot execution limit, folders of runs.

Real runs only: `spatialact eval` / `run_eval` with real agents — the baselines, and the OpenAI agent talking
through the real `openai` client to a chat-completions server on loopback (tests/_chat_server.py).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _chat_server import SECRET, closed_port_url
from _fabricate import image_tasks, make_task
from spatialact.cli.main import main
from spatialact.evaluation.episode import EpisodeConfig
from spatialact.records import episode_key, record_key
from spatialact.evaluation.results import load_run, read_records
from spatialact.evaluation.runner import AgentSpec, run_eval
from spatialact.tasks import save_tasks

pytest.importorskip("openai")

SRC = str(Path(__file__).parents[2] / "src")


# ----- helpers ---------------------------------------------------------------------------------------------------
def _image_tasks(folder: Path, n: int = 3, **kw):
    """``n`` scene-less navigation tasks with start/goal image files, and their task file."""
    tasks = image_tasks(folder, n, **kw)
    path = folder / "tasks.jsonl"
    save_tasks(tasks, path)
    return tasks, path


def _api_args(url, *extra):
    args = ["--agent", "openai", "--agent-arg", "model=test-vlm", "--agent-arg", f"base_url={url}",
            "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY", "--agent-arg", "backoff=0"]
    for e in extra:
        args += ["--agent-arg", e]
    return args


def _eval(capsys, *argv):
    """`spatialact eval ...` in this process: (exit status, stdout, stderr)."""
    code = main(["eval", "--no-progress", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line_error(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


# ----- canonical resume keys -------------------------------------------------------------------------------------
def test_agent_aliases_resume_the_same_run(tmp_path):
    tasks, _ = _image_tasks(tmp_path / "tasks", 2)
    cfg = EpisodeConfig(env="none")
    out = tmp_path / "run"
    s1 = run_eval(tasks, AgentSpec("Oracle"), cfg, out, task_source="x", progress=False)
    assert (s1.n_new, s1.n_skipped) == (2, 0)
    for alias in ("oracle", "ORACLE", " oracle "):
        s = run_eval(tasks, AgentSpec(alias), cfg, out, task_source="x", progress=False)
        assert (s.n_new, s.n_skipped) == (0, 2), alias
    recs = read_records(out)
    assert [r["key"] for r in recs] == ["t0|oracle|none|one-shot|0", "t1|oracle|none|one-shot|0"]
    assert all(r["variant"] == "" and record_key(dict(r, key=None)) == r["key"] for r in recs)
    out2 = tmp_path / "noisy"
    run_eval(tasks, AgentSpec("noisy"), cfg, out2, task_source="x", progress=False)
    s = run_eval(tasks, AgentSpec("Noisy_Oracle"), cfg, out2, task_source="x", progress=False)
    assert s.n_new == 0 and AgentSpec("mllm", {"model": "m"}).name == "openai"
    assert json.loads((out2 / "config.json").read_text())["config"]["agent"]["name"] == "noisy-oracle"


def test_variant_is_part_of_the_key_and_the_record(tmp_path):
    assert episode_key("t", "oracle", "none", "one-shot", 0) == "t|oracle|none|one-shot|0"
    assert episode_key("t", "oracle", "none", "one-shot", 0, "mirror") == "t|oracle|none|one-shot|0|mirror"
    tasks, _ = _image_tasks(tmp_path / "tasks", 1)
    out = tmp_path / "run"
    run_eval(tasks, AgentSpec("oracle"), EpisodeConfig(env="none", variant="mirror"), out, task_source="x",
             progress=False)
    (rec,) = read_records(out)
    assert rec["key"] == "t0|oracle|none|one-shot|0|mirror" and rec["variant"] == "mirror"
    assert record_key(dict(rec, key=None)) == rec["key"]
    assert json.loads((out / "config.json").read_text())["config"]["variant"] == "mirror"
    with pytest.raises(ValueError, match="variant"):
        EpisodeConfig(variant="a|b")
    # the default variant leaves the configuration as it was before variants existed
    assert "variant" not in EpisodeConfig().to_dict()


# ----- validation before writing ---------------------------------------------------------------------------------
def test_mistyped_agent_or_missing_model_never_blocks_the_corrected_command(tmp_path, capsys, server, api_key):
    _, tf = _image_tasks(tmp_path / "tasks", 2)
    out = tmp_path / "run"
    base = ["--tasks", str(tf), "--env", "none", "--out", str(out)]
    code, _, err = _eval(capsys, *base, "--agent", "orcale")
    assert code == 2 and "unknown agent 'orcale'" in _one_line_error(err)
    assert not out.exists()
    code, _, err = _eval(capsys, *base, "--agent", "openai", "--agent-arg", f"base_url={server.url}")
    assert code == 2 and "model name is required" in _one_line_error(err)
    assert not out.exists()
    code, _, err = _eval(capsys, *base, "--agent", "openai", "--agent-arg", "model=gpt 4o",
                         "--agent-arg", f"base_url={server.url}")
    assert code == 2 and "is not a model name" in _one_line_error(err)
    code, _, err = _eval(capsys, *base, "--agent", "openai", "--agent-arg", "model=m",
                         "--agent-arg", "base_url=localhost:8000/v1")
    assert code == 2 and "base_url must be an http(s) URL" in _one_line_error(err)
    assert not out.exists()
    code, _, _ = _eval(capsys, *base, *_api_args(server.url))
    assert code == 0 and len(read_records(out)) == 2 and len(server.requests) == 2


@pytest.mark.parametrize("arg", [f"api_key={SECRET}", f"token={SECRET}", f"OPENAI_API_KEY={SECRET}",
                                 f"apiKey={SECRET}", 'params={"user": "%s"}' % SECRET,
                                 'params={"extra_headers": {"Authorization": "Bearer %s"}}' % SECRET,
                                 f"base_url=http://user:{SECRET}@127.0.0.1:9/v1",
                                 f"base_url=http://127.0.0.1:9/v1?api_key={SECRET}"])
def test_a_secret_passed_as_an_agent_argument_is_refused_and_written_nowhere(tmp_path, capsys, arg):
    _, tf = _image_tasks(tmp_path / "tasks", 1)
    out = tmp_path / "run"
    code, stdout, err = _eval(capsys, "--tasks", str(tf), "--env", "none", "--out", str(out), "--agent", "openai",
                              "--agent-arg", "model=m", "--agent-arg", arg)
    line = _one_line_error(err)
    assert code == 2 and ("secret" in line or "API key" in line or "password" in line), line
    assert SECRET not in stdout + err
    assert not out.exists()
    # a value without '=' is not echoed either (it may be a pasted key)
    code, stdout, err = _eval(capsys, "--tasks", str(tf), "--out", str(out), "--agent", "openai",
                              "--agent-arg", SECRET)
    assert code == 2 and SECRET not in stdout + err and not out.exists()


def test_tasks_that_cannot_run_in_the_mode_are_refused_before_writing(tmp_path, capsys):
    _, tf = _image_tasks(tmp_path / "tasks", 2)
    out = tmp_path / "run"
    code, _, err = _eval(capsys, "--tasks", str(tf), "--mode", "closed-loop", "--out", str(out))
    line = _one_line_error(err)
    assert code == 2 and "task 't0' has no scene (scene: null)" in line and "(2 of 2 tasks cannot run)" in line
    code, _, err = _eval(capsys, "--suite", "nav:1", "--env", "none", "--out", str(out))
    assert code == 2 and "start_image is missing" in _one_line_error(err)
    code, _, err = _eval(capsys, "--suite", "nav:1", "--env", "none", "--mode", "closed-loop", "--out", str(out))
    assert code == 2 and "--env none scores one-shot answers only" in _one_line_error(err)
    (tmp_path / "tasks" / "goal1.png").unlink()
    code, _, err = _eval(capsys, "--tasks", str(tf), "--out", str(out))
    assert code == 2 and f"task 't1': goal_image {tmp_path / 'tasks' / 'goal1.png'}: no such file" in \
        _one_line_error(err)
    (tmp_path / "tasks" / "start0.png").write_bytes(b"these bytes are not an image")
    code, _, err = _eval(capsys, "--tasks", str(tf), "--out", str(out))
    assert code == 2 and "start_image" in _one_line_error(err) and "not an image Pillow can read" in err
    assert not out.exists()


def test_check_runnable_answers_for_each_mode_and_environment(tmp_path):
    from spatialact.evaluation.episode import check_runnable

    (with_images,), _ = _image_tasks(tmp_path / "tasks", 1)
    room = make_task("r0", scene={"generator": "room", "seed": 3})
    replay = make_task("p0", scene={"type": "replay", "source": "camera_path", "format": "tum",
                                    "trajectory": str(tmp_path / "gone.txt"), "keyframes": [0, 1]})
    manip = make_task("m0", kind="manip", grippers=[0], scene={"generator": "tabletop", "seed": 0})
    missing_mesh = make_task("x0", scene={"generator": "mesh", "mesh": str(tmp_path / "nope.glb")})
    one, closed = EpisodeConfig(), EpisodeConfig(mode="closed-loop")
    assert check_runnable(with_images, one) is None and check_runnable(with_images, EpisodeConfig(env="none")) is None
    assert "cannot run closed-loop" in check_runnable(with_images, closed)
    assert check_runnable(room, one) is None and check_runnable(room, closed) is None
    assert "start_image is missing" in check_runnable(room, EpisodeConfig(env="none"))
    assert check_runnable(replay, one) == (f"task 'p0': scene.trajectory {tmp_path / 'gone.txt'}: no such file or "
                                           "folder (the replay scene's recording)")
    assert "navigation tasks only" in check_runnable(manip, EpisodeConfig(env="habitat"))
    assert check_runnable(missing_mesh, one) == f"task 'x0': scene.mesh {tmp_path / 'nope.glb'}: no such file"


def test_an_image_damaged_past_its_header_is_refused_before_the_run_in_one_line(tmp_path, capsys):
    tasks, tf = _image_tasks(tmp_path / "tasks", 2)
    png = (tmp_path / "tasks" / "start1.png")
    png.write_bytes(png.read_bytes()[:80])  # header intact, pixel data cut off
    out = tmp_path / "run"
    code, _, err = _eval(capsys, "--tasks", str(tf), "--env", "none", "--out", str(out))
    line = _one_line_error(err)
    assert code == 2 and f"task 't1': start_image {png}: cannot be decoded" in line
    assert not out.exists()  # the pre-run check decodes every image the run will read


# ----- failures are not results ----------------------------------------------------------------------------------
def test_api_errors_are_failures_reported_and_retried_on_rerun(tmp_path, capsys, server, api_key):
    _, tf = _image_tasks(tmp_path / "tasks", 3)
    out = tmp_path / "run"
    argv = ["--tasks", str(tf), "--env", "none", "--out", str(out), *_api_args(server.url, "max_retries=1")]
    server.script = [("status", 500), ("status", 503),                        # t0: 5xx after its retry
                     ("ok", "I would rather not say."),                        # t1: an answer that does not parse
                     ("ok", '{"step_1": {"actions": ["D"], "step_nums": [3]}}')]  # t2: an answer
    code, _, err = _eval(capsys, *argv)
    assert code == 1
    assert "spatialact: episode failed: t0: api_error (http): HTTP 503" in err
    assert err.strip().splitlines()[-1] == ("spatialact eval: 1 episode failed (api_error 1): no score recorded; "
                                            "rerun the same command to retry the api_error episodes")
    recs = {r["task_id"]: r for r in read_records(out)}
    assert recs["t0"]["reason"] == "api_error" and recs["t0"]["error_kind"] == "http"
    assert recs["t0"]["score"] is None and recs["t0"]["ok"] is None and recs["t0"]["error"].startswith("HTTP 503")
    assert recs["t1"]["reason"] == "parse_error" and recs["t1"]["score"] == 0.0 and recs["t1"]["error"] is None
    assert recs["t2"]["reason"] is None and recs["t2"]["score"] is not None
    assert len(server.requests) == 4
    # Rerunning the same command retries t0 only; the parse_error is a result and stays.
    code, stdout, err = _eval(capsys, *argv, "--json")
    assert code == 0 and json.loads(stdout)["new"] == 1 and json.loads(stdout)["failures"] == {}
    assert len(server.requests) == 5
    after = {r["task_id"]: r for r in read_records(out)}
    assert after["t0"]["reason"] is None and after["t0"]["error"] is None
    assert after["t1"] == recs["t1"]


@pytest.mark.parametrize("script,kind,n_requests", [
    ([("raw", b"<html>502 bad gateway</html>"), ("raw", b'{"choices": []}')], "malformed", 2),
    ([("sleep", 2.0, "{}")], "timeout", 1),
    ([("status", 401)], "http", 1),
])
def test_each_kind_of_agent_failure_is_an_api_error(tmp_path, capsys, server, api_key, script, kind, n_requests):
    _, tf = _image_tasks(tmp_path / "tasks", 1)
    out = tmp_path / "run"
    server.script = list(script)
    code, _, err = _eval(capsys, "--tasks", str(tf), "--env", "none", "--out", str(out),
                         *_api_args(server.url, "max_retries=1", "timeout=0.5"))
    (rec,) = read_records(out)
    assert code == 1 and rec["reason"] == "api_error" and rec["error_kind"] == kind and rec["score"] is None
    assert f"t0: api_error ({kind})" in err and len(server.requests) == n_requests


def test_an_endpoint_nobody_listens_on_is_refused_before_anything_is_written(tmp_path, capsys, api_key):
    """eval checks the endpoint before the run folder is made: one line naming the URL, exit 2, no folder. (A
    server that dies after the check still stops the run after 3 connection failures: test_eval_endpoint_check.)"""
    _, tf = _image_tasks(tmp_path / "tasks", 6)
    out = tmp_path / "run"
    url = closed_port_url()
    code, _, err = _eval(capsys, "--tasks", str(tf), "--env", "none", "--out", str(out),
                         *_api_args(url, "max_retries=0"))
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and "Traceback" not in err and len(lines) == 1
    assert lines[0].startswith(f"spatialact eval: error: cannot reach {url}") and "nothing was written" in lines[0]
    assert not out.exists()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_run_stopped_early_kills_its_workers(tmp_path, server, api_key):
    # The first answer comes at once and the run is stopped there (Ctrl-C while its record is handled), while the
    # other worker waits 30 s for the server; the workers are killed, not waited for. (A damaged task image used to
    # be the trigger; it is refused before the run now.)
    tasks, _ = _image_tasks(tmp_path / "tasks", 6)
    server.script = [("ok", "{}")] + [("sleep", 30.0, "{}")] * 5
    before = _descendants(os.getpid())
    agent = AgentSpec("openai", {"model": "test-vlm", "base_url": server.url, "api_key_env": "SPATIALACT_TEST_KEY",
                                 "backoff": 0, "timeout": 60})

    def stop(record):
        raise KeyboardInterrupt

    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        run_eval(tasks, agent, EpisodeConfig(env="none"), tmp_path / "run", task_source="t", workers=2,
                 progress=False, on_record=stop)

    def workers():  # multiprocessing's resource tracker belongs to this process and lives as long as it does
        return [k for k in _descendants(os.getpid()) - before
                if _alive(k) and b"resource_tracker" not in _cmdline(k)]

    deadline = time.time() + 5
    while time.time() < deadline and workers():
        time.sleep(0.05)
    assert not workers()
    assert time.perf_counter() - t0 < 25  # nobody waited for the 30-second answers
    assert len(read_records(tmp_path / "run")) == 1  # the record that was being handled is kept


def test_retry_errors_retries_episodes_that_failed_inside_the_simulator(tmp_path, capsys):
    """The replay scene's recording is moved 1 m after the task file was built (it still loads, so the pre-run check
    passes; the episode finds the task's poses off the recording): an `error` episode; repaired, --retry-errors
    runs it again."""
    pytest.importorskip("pybullet")
    from traj_helpers import moved_recording_task

    tf, cam, good = moved_recording_task(tmp_path)
    capsys.readouterr()
    out = tmp_path / "run"
    argv = ["--tasks", str(tf), "--size", "32", "--out", str(out)]
    code, _, err = _eval(capsys, *argv)
    (rec,) = read_records(out)
    assert code == 1 and rec["reason"] == "error" and rec["error_kind"] == "exception" and rec["score"] is None
    assert "add --retry-errors to retry them" in err.strip().splitlines()[-1]
    code, stdout, _ = _eval(capsys, *argv, "--json")  # a plain rerun leaves it
    assert code == 1 and json.loads(stdout)["new"] == 0
    cam.write_bytes(good)
    code, stdout, _ = _eval(capsys, *argv, "--json", "--retry-errors")
    assert code == 0 and json.loads(stdout)["new"] == 1
    (rec,) = read_records(out)
    assert rec["error"] is None and rec["score"] == 1.0


# ----- costs, cache hits, the key scrubbed --------------------------------------------------------------------
def test_costs_and_cache_hits_are_recorded_by_the_runner(tmp_path, server, api_key):
    pytest.importorskip("pybullet")
    from spatialact.report import overall_json
    from spatialact.taskgen.suites import builtin_suite

    tasks = builtin_suite("nav:2", seed=0)
    cache = tmp_path / "cache"
    kw = {"model": "test-vlm", "base_url": server.url, "api_key_env": "SPATIALACT_TEST_KEY", "cache_dir": str(cache),
          "price_in": 2.5, "price_out": 10.0}
    cfg = EpisodeConfig(width=48, height=48)
    run_eval(tasks, AgentSpec("openai", kw), cfg, tmp_path / "a", task_source="s", progress=False)
    assert len(server.requests) == 2
    per_episode = (321 * 2.5 + 12 * 10.0) / 1e6
    for r in read_records(tmp_path / "a"):
        assert r["usage"]["cost_usd"] == pytest.approx(per_episode, rel=1e-12)
        assert r["usage"]["cached"] == 0 and r["usage"]["turns"] == 1
        assert (r["usage"]["prompt_tokens"], r["usage"]["completion_tokens"]) == (321, 12)
    # A second run with the same cache: no request, no cost, cache hits counted.
    run_eval(tasks, AgentSpec("openai", kw), cfg, tmp_path / "b", task_source="s", progress=False)
    assert len(server.requests) == 2
    for r in read_records(tmp_path / "b"):
        assert r["usage"]["cost_usd"] == 0.0 and r["usage"]["cached"] == 1
    a, b = overall_json([tmp_path / "a", tmp_path / "b"])
    assert a["cost_usd"] == pytest.approx(2 * per_episode) and b["cost_usd"] == 0.0
    df = load_run(tmp_path / "a")
    assert df["cost_usd"].sum() == pytest.approx(2 * per_episode) and list(df["cached"]) == [0, 0]


def test_model_text_is_scrubbed_of_the_key_before_it_is_stored(tmp_path, capsys, server, api_key):
    _, tf = _image_tasks(tmp_path / "tasks", 1)
    out = tmp_path / "run"
    server.script = [("echo_auth",)]
    code, _, _ = _eval(capsys, "--tasks", str(tf), "--env", "none", "--out", str(out), *_api_args(server.url))
    assert code == 0
    (rec,) = read_records(out)
    assert "your header was Bearer ***" in rec["response"] and rec["ok"] is True
    for p in out.rglob("*"):
        if p.is_file():
            assert SECRET.encode() not in p.read_bytes(), p


# ----- the one-shot execution limit ------------------------------------------------------------------------------
def test_a_long_one_shot_answer_is_executed_only_up_to_the_limit_and_scored_in_full(tmp_path, server, api_key):
    pytest.importorskip("pybullet")
    from spatialact.action_space import ActionSequence, Step
    from spatialact.taskgen.suites import builtin_suite

    (task,) = builtin_suite("nav:1", seed=0)
    n_gt = len(task.gt)
    extra = ActionSequence(tuple(Step.from_signed([0, 0, 1, 0, 0, 0]) for _ in range(40)), task.sizes, task.gt.cap)
    answer = task.gt + extra  # the ground truth, then 40 more steps
    server.script = [("ok", answer.to_text("stepped"))]
    cfg = EpisodeConfig(width=48, height=48, max_steps=5)
    run_eval([task], AgentSpec("openai", {"model": "m", "base_url": server.url,
                                          "api_key_env": "SPATIALACT_TEST_KEY"}),
             cfg, tmp_path / "run", task_source="s", progress=False)
    (rec,) = read_records(tmp_path / "run")
    limit = max(5, n_gt)
    assert rec["n_executed"] == limit and rec["truncated"] is True and rec["n_steps"] == limit
    assert len(rec["pred_poses"]) == limit + 1 and len(rec["pred"]["steps"]) == n_gt + 40
    # every step counts in the score: the first n_gt are exact, the 40 extra ones score 0 (docs/scoring.md)
    assert rec["score"] == pytest.approx(n_gt / (n_gt + 40), abs=1e-12)


# ----- refusals in one line --------------------------------------------------------------------------------------
def test_corrupt_results_and_a_second_writer_are_one_line_and_exit_2(tmp_path, capsys):
    _, tf = _image_tasks(tmp_path / "tasks", 3)
    out = tmp_path / "run"
    argv = ["--tasks", str(tf), "--env", "none", "--out", str(out)]
    assert _eval(capsys, *argv, "--limit", "2")[0] == 0
    # a second writer: another process holds the run's lock
    with open(out / ".lock", "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        proc = subprocess.run([sys.executable, "-m", "spatialact.cli.main", "eval", "--no-progress", *argv],
                              capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=SRC), timeout=120)
    assert proc.returncode == 2 and "another process is writing this run" in _one_line_error(proc.stderr)
    # a damaged line in the middle of results.jsonl
    path = out / "results.jsonl"
    lines = path.read_text().splitlines()
    path.write_text(lines[0][:40] + "\n" + lines[1] + "\n")
    code, _, err = _eval(capsys, *argv)
    assert code == 2 and "results.jsonl: line 1 is not a JSON record" in _one_line_error(err)
    code = main(["report", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "line 1 is not a JSON record" in _one_line_error(err)


# ----- workers die with their parent ----------------------------------------------------------------------------
def _descendants(pid: int) -> set[int]:
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        for k in map(int, kids):
            if k not in out:
                out.add(k)
                todo.append(k)
    return out


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")  # a zombie has exited


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_workers_die_with_their_parent(tmp_path):
    pytest.importorskip("pybullet")
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "spatialact.cli.main", "eval", "--suite", "nav:12", "--agent", "noisy-oracle",
           "--size", "48", "--workers", "2", "--no-progress", "--out", str(out)]
    proc = subprocess.Popen(cmd, env=dict(os.environ, PYTHONPATH=SRC), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    results = out / "results.jsonl"
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None:
        if results.exists() and results.read_text().count("\n") >= 1:
            break
        time.sleep(0.05)
    kids = _descendants(proc.pid)
    assert proc.poll() is None, "the run ended before it could be killed"
    assert len(kids) >= 2, kids  # the two workers (and multiprocessing's resource tracker)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 5
    while time.time() < deadline and any(_alive(k) for k in kids):
        time.sleep(0.05)
    assert not [k for k in kids if _alive(k)], "worker processes outlived the killed eval"


# ----- folders of runs -------------------------------------------------------------------------------------------
def test_load_run_and_report_accept_a_folder_of_runs(tmp_path, capsys):
    tasks, _ = _image_tasks(tmp_path / "tasks", 2)
    demo = tmp_path / "demo"
    for name in ("oracle", "stay"):  # the layout `spatialact demo` writes
        run_eval(tasks, AgentSpec(name), EpisodeConfig(env="none"), demo / "runs" / f"{name}-one-shot",
                 task_source="x", progress=False)
    (demo / "report").mkdir()
    df = load_run(demo)
    assert len(df) == 4
    assert sorted(set(df["run"])) == ["runs/oracle-one-shot", "runs/stay-one-shot"]
    assert list(df.groupby("run")["score"].mean().round(12)) [0] == 1.0
    single = load_run(demo / "runs" / "stay-one-shot")
    assert set(single["run"]) == {"stay-one-shot"}
    assert main(["report", str(demo), "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert sorted(r["run"] for r in runs) == ["oracle", "stay"]
    assert (demo / "report" / "report.html").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", str(empty)]) == 2
    assert "no run directory inside it" in _one_line_error(capsys.readouterr().err)


def test_the_report_leaves_failed_episodes_out_of_the_parse_rate(tmp_path, capsys, server, api_key):
    """A failed call has no answer: the report's "parse ok" counts the two answered episodes only (1 of 2 parsed)."""
    from spatialact.report import make_report

    _, tf = _image_tasks(tmp_path / "tasks", 3)
    out = tmp_path / "run"
    server.script = [("status", 500), ("status", 503), ("ok", "I would rather not say."),
                     ("ok", '{"step_1": {"actions": ["D"], "step_nums": [3]}}')]
    code, _, _ = _eval(capsys, "--tasks", str(tf), "--env", "none", "--out", str(out),
                       *_api_args(server.url, "max_retries=1"))
    assert code == 1
    make_report([out], tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    header = next(x for x in md.splitlines() if "parse ok" in x)
    cols = [c.strip() for c in header.strip("|").split("|")]
    body = md.splitlines()[md.splitlines().index(header) + 2]
    cells = [c.strip() for c in body.strip("|").split("|")]
    assert cells[cols.index("parse ok")] == "50%"
    assert cells[cols.index("errors")] == "1"
