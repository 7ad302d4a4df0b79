"""Many model requests in flight (``eval --concurrency N``, ``questions score --concurrency N``): real runs against a
chat-completions server on loopback that answers after a delay (tests/_chat_server.py), the real ``openai`` client,
real PyBullet worlds (tiny renderer, small images).

What is checked: requests really overlap (the server counts them), the records do not depend on the concurrency,
``Retry-After`` is waited out, the adaptive limit drops under 429s and comes back, the rate budgets hold, a cost
budget stops a run that resumes, a run killed with SIGKILL resumes with nothing lost or doubled, the response cache
works from many threads, and a privileged tool's simulator calls run on the world's thread.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("openai")

from _chat_server import FakeServer  # noqa: E402
from _eval_cli import api_args, eval_json, image_task_file  # noqa: E402
from spatialact.agents.wire import RequestGate, retry_after  # noqa: E402
from spatialact.cli.main import main  # noqa: E402
from spatialact.evaluation.results import read_records  # noqa: E402

SRC = str(Path(__file__).parents[2] / "src")
ANSWER = '{"actions": ["Dolly In"], "step_nums": [1]}'


def _lines(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines() if x.strip()]


# ----- requests in flight -----------------------------------------------------------------------------------------
def test_eight_requests_are_in_flight_at_once(tmp_path, capsys, api_key):
    """16 one-shot episodes, a server answering after 0.3 s, --concurrency 8: the server sees 8 requests at once
    (one at a time before --concurrency existed), and the summary says so."""
    srv = FakeServer(latency=0.3)
    tf = image_task_file(tmp_path / "t", 16)
    try:
        code, js, _ = eval_json(capsys, "--tasks", str(tf), "--env", "none", "--concurrency", "8", "--out",
                            str(tmp_path / "run"), *api_args(srv.url))
    finally:
        srv.close()
    assert code == 0 and js["new"] == 16
    assert srv.peak_in_flight >= 0.9 * 8
    f = js["figures"]
    assert js["concurrency"] == 8 and f["peak_in_flight"] == srv.peak_in_flight and f["requests"] == 16
    assert f["prompt_tokens"] == 16 * 321 and f["completion_tokens"] == 16 * 12 and f["failed"] == 0
    assert f["episodes"] == 16 and f["wall_s"] < 16 * 0.3  # one at a time, the answers alone take 4.8 s


def test_requests_are_in_flight_while_worlds_step(tmp_path, capsys, api_key):
    """24 one-shot episodes in PyBullet worlds, --concurrency 4: while the models answer (0.6 s), other episodes'
    worlds are built and rendered, so 4 requests are in flight at once; at most 8 episodes are alive, and the suite's
    rooms (4 tasks a room) are reused by the world pool as episodes end. (How many requests stay in flight depends
    on the CPU an episode needs against the answer's second: docs/evaluation.md.)"""
    pytest.importorskip("pybullet")
    srv = FakeServer(latency=0.6)
    try:
        code, js, _ = eval_json(capsys, "--suite", "nav:24", "--size", "32", "--renderer", "tiny", "--concurrency", "4",
                            "--out", str(tmp_path / "run"), *api_args(srv.url))
    finally:
        srv.close()
    f = js["figures"]
    assert code == 0 and js["new"] == 24 and srv.peak_in_flight == 4 == f["peak_in_flight"]
    assert f["peak_live"] <= 8 and f["worlds_reused"] + f["worlds_made"] == 24 and f["worlds_reused"] >= 4


def test_api_agents_default_to_sixteen_and_baselines_to_one(tmp_path, capsys, api_key, server):
    tf = image_task_file(tmp_path / "t", 3)
    code, js, _ = eval_json(capsys, "--tasks", str(tf), "--env", "none", "--out", str(tmp_path / "a"), *api_args(server.url))
    assert code == 0 and js["concurrency"] == 16
    code, js, _ = eval_json(capsys, "--tasks", str(tf), "--env", "none", "--agent", "oracle", "--out",
                        str(tmp_path / "b"))
    assert code == 0 and js["concurrency"] == 1


def test_bad_concurrency_and_budgets_are_refused_in_one_line(tmp_path, capsys, api_key, server):
    tf = image_task_file(tmp_path / "t", 1)
    for bad, what in ((["--concurrency", "0"], "--concurrency"), (["--concurrency", "100000"], "MAX_CONCURRENCY"),
                      (["--max-rpm", "0"], "--max-rpm"), (["--max-tpm", "nan"], "--max-tpm"),
                      (["--max-cost", "-1"], "--max-cost")):
        with pytest.raises(SystemExit) as e:
            main(["eval", "--tasks", str(tf), "--env", "none", "--out", str(tmp_path / "x"), *bad])
        assert e.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and what in err[0] and "Traceback" not in err[0]
    # a cost budget for an API agent without prices would never be reached: refused
    code = main(["eval", "--tasks", str(tf), "--env", "none", "--out", str(tmp_path / "y"), "--no-progress",
                 "--max-cost", "1", *api_args(server.url)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--max-cost needs the agent's prices" in err[0]
    assert not server.requests


# ----- the same records at any concurrency ------------------------------------------------------------------------
def _deterministic(body: dict) -> tuple:
    """An answer that depends on the request only (its images): what a deterministic model would say."""
    import hashlib

    h = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).digest()
    word = ["Dolly In", "Pan Left", "Truck Right", "Stay"][h[0] % 4]
    return ("sleep", 0.02 + (h[1] % 5) * 0.01, json.dumps({"actions": [word], "step_nums": [1 + h[2] % 2]}))


@pytest.mark.parametrize("mode", ["one-shot", "closed-loop"])
def test_the_same_seed_gives_the_same_records_at_concurrency_one_and_eight(tmp_path, capsys, api_key, mode):
    """Keyed by episode, the records of --concurrency 1 and 8 agree field by field (timings aside); the answers
    come back in another order at 8 (the server's delays differ by request)."""
    pytest.importorskip("pybullet")
    srv = FakeServer()
    srv.responder = _deterministic
    runs = {}
    try:
        for n in ("1", "8"):
            out = tmp_path / f"c{n}"
            code, js, _ = eval_json(capsys, "--suite", "nav:8", "--size", "32", "--renderer", "tiny", "--mode", mode,
                                "--max-steps", "3", "--concurrency", n, "--out", str(out), *api_args(srv.url))
            assert code == 0 and js["new"] == 8
            runs[n] = {r["key"]: r for r in _lines(out)}
    finally:
        srv.close()
    assert runs["1"].keys() == runs["8"].keys() and len(runs["1"]) == 8
    timing = {"latency_s", "wall_s", "provenance", "frames", "run_id"}
    for k, a in runs["1"].items():
        b = runs["8"][k]
        assert {f: v for f, v in a.items() if f not in timing} == {f: v for f, v in b.items() if f not in timing}, k


def test_baselines_and_worker_processes_give_the_same_records(tmp_path, capsys):
    """noisy-oracle at --concurrency 1, at 4 (its act on the lanes), and at 4 in each of two worker processes."""
    pytest.importorskip("pybullet")
    runs = {}
    for name, extra in (("one", []), ("four", ["--concurrency", "4"]),
                        ("workers", ["--concurrency", "4", "--workers", "2"])):
        out = tmp_path / name
        code, js, _ = eval_json(capsys, "--suite", "nav:6", "--size", "32", "--renderer", "tiny", "--agent",
                            "noisy-oracle", "--mode", "closed-loop", "--max-steps", "4", "--out", str(out), *extra)
        assert code == 0 and js["new"] == 6
        runs[name] = {r["key"]: (r["score"], r["pred"], r["pred_poses"], r["response"]) for r in _lines(out)}
    assert runs["one"] == runs["four"] == runs["workers"]


def test_ray_runs_each_workers_share_concurrently_with_the_same_records(tmp_path, capsys):
    """--backend ray --workers 2 --concurrency 3: one streaming Ray task per worker, each interleaving its share."""
    pytest.importorskip("pybullet")
    pytest.importorskip("ray")
    runs = {}
    for name, extra in (("local", []), ("ray", ["--backend", "ray", "--workers", "2", "--concurrency", "3"])):
        out = tmp_path / name
        code, js, _ = eval_json(capsys, "--suite", "nav:6", "--size", "32", "--renderer", "tiny", "--agent",
                            "noisy-oracle", "--out", str(out), *extra)
        assert code == 0 and js["new"] == 6
        runs[name] = {r["key"]: (r["score"], r["pred"], r["pred_poses"]) for r in _lines(out)}
    assert runs["local"] == runs["ray"]


# ----- rate limits ------------------------------------------------------------------------------------------------
def test_retry_after_is_waited_out_and_the_episode_gets_its_answer(tmp_path, capsys, api_key, server):
    tf = image_task_file(tmp_path / "t", 1)
    server.script = [("status", 429, "1"), ("ok", ANSWER)]
    code, js, _ = eval_json(capsys, "--tasks", str(tf), "--env", "none", "--out", str(tmp_path / "r"),
                        *api_args(server.url, "max_retries=2"))
    (rec,) = read_records(tmp_path / "r")
    assert code == 0 and rec["reason"] != "api_error" and rec["error"] is None
    (_, end429), (start_ok, _) = sorted(server.spans)
    assert start_ok - end429 >= 0.95  # asked again only after the second the server asked for
    assert js["figures"]["retries"] == 1 and js["figures"]["rate_limited"] == 1


def test_a_retry_after_beyond_the_limit_is_not_waited_for(tmp_path, capsys, api_key, server):
    tf = image_task_file(tmp_path / "t", 1)
    server.script = [("status", 429, "100000")]
    t0 = time.perf_counter()
    code, _, err = eval_json(capsys, "--tasks", str(tf), "--env", "none", "--out", str(tmp_path / "r"),
                         *api_args(server.url, "max_retries=3"))
    (rec,) = read_records(tmp_path / "r")
    assert code == 1 and rec["reason"] == "api_error" and "more than 300 s" in rec["error"]
    assert len(server.requests) == 1 and time.perf_counter() - t0 < 20


def test_retry_after_forms():
    """Seconds, milliseconds (retry-after-ms first), an HTTP date, and what is not usable."""
    from email.utils import formatdate

    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after": "1.5", "retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after-ms": "x", "retry-after": "3"}) == 3.0
    now = 1_700_000_000.0
    assert retry_after({"retry-after": formatdate(now + 30, usegmt=True)}, now=now) == pytest.approx(30.0)
    assert retry_after({"retry-after": formatdate(now - 30, usegmt=True)}, now=now) == 0.0
    for bad in ({}, {"retry-after": "soon"}, {"retry-after": "-1"}, {"retry-after": "inf"}, None):
        assert retry_after(bad) is None


def _release(gate: RequestGate, outcome: str, n: int, latency: float = 0.1) -> None:
    for _ in range(n):
        gate.release(gate.acquire(), outcome, latency)


def test_the_adaptive_limit_drops_under_429s_and_rises_again_when_healthy():
    gate = RequestGate(16)
    _release(gate, "ok", 32)
    assert gate.limit == 16
    for _ in range(4):  # windows half rate-limited: lowered by a quarter each time
        _release(gate, "rate_limited", 16)
        _release(gate, "ok", 16)
    assert gate.limit < 16 and gate.counts["lowered"] >= 2
    low = gate.limit
    _release(gate, "ok", 200)
    assert gate.limit == 16 and gate.counts["raised"] >= 1 and gate.counts["lowest_limit"] <= low
    # sporadic 429s (1 in 20) do not lower it
    for _ in range(10):
        _release(gate, "rate_limited", 1)
        _release(gate, "ok", 19)
    assert gate.limit == 16


def test_requests_sent_before_a_change_are_not_judged_and_a_clean_window_doubles_the_limit():
    """A storm of 429s: a window of 32 lowers the limit 16 -> 12 while 15 more requests, sent before that, are in
    flight; their 429s tell of the old limit and are not judged again (judged, with 9 answers after them, they
    would lower it to 9). Then a window of 24 clean answers doubles it back up to the ceiling, 16."""
    gate = RequestGate(16)
    held = [gate.acquire() for _ in range(16)]
    for _ in range(31):
        gate.release(held.pop(0), "rate_limited", 0.1)
        held.append(gate.acquire())
    gate.release(held.pop(0), "rate_limited", 0.1)
    assert gate.limit == 12 and gate.counts["lowered"] == 1 and len(held) == 15
    for t in held:
        gate.release(t, "rate_limited", 0.1)
    assert gate.limit == 12
    _release(gate, "ok", 24)
    assert gate.limit == 16 and gate.counts["lowered"] == 1 and gate.counts["raised"] == 1


def test_the_adaptive_limit_drops_when_latency_rises():
    gate = RequestGate(8)
    _release(gate, "ok", 16, latency=0.2)
    _release(gate, "ok", 16, latency=2.0)
    assert gate.limit < 8


def test_a_run_against_a_rate_limiting_server_lowers_its_concurrency(tmp_path, capsys, api_key):
    """Half the requests answered 429 (Retry-After 0): the run's adaptive limit drops below --concurrency 8, and
    every episode still gets its answer within its retries."""
    srv = FakeServer(latency=0.05, rate_429=0.5, retry_after="0", seed=1)
    tf = image_task_file(tmp_path / "t", 24)
    try:
        code, js, _ = eval_json(capsys, "--tasks", str(tf), "--env", "none", "--concurrency", "8", "--out",
                            str(tmp_path / "r"), *api_args(srv.url, "max_retries=12"))
    finally:
        srv.close()
    f = js["figures"]
    assert code == 0 and js["new"] == 24 and f["rate_limited"] > 0 and f["retries"] == f["rate_limited"]
    assert f["lowest_limit"] < 8


def test_max_rpm_spaces_the_requests(tmp_path, capsys, api_key, server):
    """--max-rpm 120 (2 a second, a bucket of one second): 6 requests take at least 2 s from first to last."""
    tf = image_task_file(tmp_path / "t", 6)
    code, js, _ = eval_json(capsys, "--tasks", str(tf), "--env", "none", "--concurrency", "8", "--max-rpm", "120",
                        "--out", str(tmp_path / "r"), *api_args(server.url))
    starts = sorted(s for s, _ in server.spans)
    assert code == 0 and js["new"] == 6 and starts[-1] - starts[0] >= 1.9


def test_max_tpm_reserves_tokens_and_waits_for_them():
    """A fake clock: 6000 tokens a minute (100 a second, a bucket of 100). The first request goes alone until its
    reply says how large a request is (300 tokens); then each waits for the tokens its estimate (the mean so far)
    needs; what a reply did not use, or a failed request reserved, comes back."""
    now = [0.0]
    gate = RequestGate(8, max_tpm=6000, clock=lambda: now[0])
    first = gate.acquire()
    assert gate._rate_wait(0.0) is None  # the second waits for the first reply
    gate.release(first, "ok", 1.0, tokens=300)  # 100 - 300: a debt of 200
    assert gate._estimate() == 300 and gate._rate_wait(300.0) == pytest.approx(3.0)
    now[0] += 3.0
    second = gate.acquire()  # 100 - 300 reserved
    gate.release(second, "ok", 1.0, tokens=100)  # 200 of the reservation back: level 0
    assert gate._estimate() == 200 and gate._rate_wait(200.0) == pytest.approx(1.0)
    now[0] += 1.0
    third = gate.acquire()  # 100 - 200 reserved
    gate.release(third, "rate_limited", 0.1)  # used nothing: all 200 back
    assert gate._rate_wait(200.0) == 0.0
    assert gate.snapshot()["requests"] == 3 and gate.snapshot()["rate_limited"] == 1


# ----- cost budget, SIGKILL ---------------------------------------------------------------------------------------
def test_max_cost_stops_the_run_cleanly_and_a_resume_goes_on(tmp_path, capsys, api_key, server):
    """Each answer costs 321 prompt tokens at 1000 USD per million: $0.321. --max-cost 1 stops after the fourth
    (and whatever answer was in flight then), exit 3 with one line; the same budget again runs nothing; a larger
    one finishes the run, every episode recorded once."""
    tf = image_task_file(tmp_path / "t", 10)
    out = tmp_path / "r"
    argv = ["--tasks", str(tf), "--env", "none", "--concurrency", "2", "--out", str(out),
            *api_args(server.url, "price_in=1000", "price_out=0")]
    code, js, err = eval_json(capsys, *argv, "--max-cost", "1")
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 3 and js["stopped"] == "max_cost" and len(lines) == 1
    assert lines[0].startswith("spatialact eval: stopped:") and "--max-cost 1 USD" in lines[0]
    n = len(_lines(out))
    assert 4 <= n <= 6 and js["figures"]["cost_usd_run"] >= 1.0
    asked = len(server.requests)
    code, js, _ = eval_json(capsys, *argv, "--max-cost", "1")
    assert code == 3 and js["new"] == 0 and len(server.requests) == asked
    code, js, _ = eval_json(capsys, *argv, "--max-cost", "100")
    assert code == 0 and js["stopped"] is None
    keys = [r["key"] for r in _lines(out)]
    assert len(keys) == 10 == len(set(keys))
    # one at a time: exactly the episodes that reached the budget ($0.321, $0.642 >= 0.5)
    one = tmp_path / "one"
    code, js, _ = eval_json(capsys, "--tasks", str(tf), "--env", "none", "--concurrency", "1", "--max-cost", "0.5",
                        "--out", str(one), *api_args(server.url, "price_in=1000", "price_out=0"))
    assert code == 3 and len(_lines(one)) == 2 and js["stopped"] == "max_cost"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_run_killed_mid_way_resumes_with_nothing_lost_or_doubled(tmp_path, api_key):
    """SIGKILL while 8 requests are in flight; the records written survive, the resume runs the rest, and no
    episode is recorded twice."""
    srv = FakeServer(latency=0.25)
    tf = image_task_file(tmp_path / "t", 40)
    out = tmp_path / "r"
    cmd = [sys.executable, "-m", "spatialact.cli.main", "eval", "--no-progress", "--tasks", str(tf), "--env",
           "none", "--concurrency", "8", "--out", str(out), *api_args(srv.url)]
    try:
        proc = subprocess.Popen(cmd, env=dict(os.environ, PYTHONPATH=SRC), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        results = out / "results.jsonl"
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None:
            if results.exists() and results.read_bytes().count(b"\n") >= 12:
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = {r["key"]: r for r in read_records(out)}
        assert 12 <= len(before) < 40
        assert main(["eval", "--no-progress", *cmd[cmd.index("--tasks"):]]) == 0
    finally:
        srv.close()
    keys = [r["key"] for r in _lines(out)]
    assert len(keys) == 40 == len(set(keys))
    after = {r["key"]: r for r in read_records(out)}
    assert all(after[k] == v for k, v in before.items())  # nothing written was touched


# ----- the response cache under threads ---------------------------------------------------------------------------
def test_the_response_cache_from_many_threads(tmp_path):
    from spatialact.agents.openai_agent import ResponseCache

    cache = ResponseCache(tmp_path / "cache")
    keys = [f"{i:064x}" for i in range(8)]
    errors = []

    def work(t):
        try:
            for rep in range(20):
                for k in keys:
                    cache.put(k, {"text": f"answer {k[-1]}", "usage": {"prompt_tokens": t}})
                    got = cache.get(k)
                    assert got is not None and got["text"] == f"answer {k[-1]}"
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    files = sorted(p.name for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert files == sorted(f"{k}.json" for k in keys)  # no temporary file left behind


def test_a_second_run_reads_every_answer_from_the_cache(tmp_path, capsys, api_key):
    srv = FakeServer(latency=0.05)
    tf = image_task_file(tmp_path / "t", 12)
    cache = tmp_path / "cache"
    try:
        for name in ("a", "b"):
            code, js, _ = eval_json(capsys, "--tasks", str(tf), "--env", "none", "--concurrency", "8", "--out",
                                str(tmp_path / name), *api_args(srv.url, f"cache_dir={cache}"))
            assert code == 0 and js["new"] == 12
    finally:
        srv.close()
    assert len(srv.requests) == 12 and len(list(cache.rglob("*.json"))) == 12
    assert all(r["usage"]["cached"] == 1 for r in _lines(tmp_path / "b"))


# ----- the world's thread -----------------------------------------------------------------------------------------
def test_a_tool_reads_the_simulator_on_the_worlds_thread():
    """An episode whose observation carries a simulator: its act runs on a lane, but every attribute read and
    call on the simulator runs on the thread that steps the world."""
    from spatialact.evaluation.concurrent import Interleaver
    from spatialact.evaluation.episode import AgentCall

    owner = threading.current_thread()

    class Sim:
        value = 3

        def where(self):
            return threading.current_thread()

    def act(obs):
        assert threading.current_thread() is not owner
        return obs["simulator"].where(), obs["simulator"].value

    def episode(i):
        obs = {"simulator": Sim()}
        where, value = yield AgentCall(act, (obs,), observation=obs)
        return i, where, value

    inter = Interleaver(4)
    out = sorted(inter.run([(None, i) for i in range(6)], episode), key=lambda x: x[0])
    assert [(i, w is owner, v) for i, w, v in out] == [(i, True, 3) for i in range(6)]
    assert inter.peak_busy <= 4


def test_the_probe_asks_one_at_a_time_in_the_episodes_order():
    """The first episode's reset is the slowest; still, until two answers came back the acts go one at a time in
    the order the episodes started; then up to the concurrency at once."""
    from spatialact.evaluation.concurrent import Interleaver
    from spatialact.evaluation.episode import AgentCall

    lock = threading.Lock()
    order, now, peak = [], [0], [0]

    class Turn:
        error = None

    def act(i):
        with lock:
            order.append(i)
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(0.05)
        with lock:
            now[0] -= 1
        return Turn()

    def episode(i):
        yield AgentCall(time.sleep, (0.2 if i == 0 else 0.0,))  # the reset
        yield AgentCall(act, (i,), observation={})
        return i

    inter = Interleaver(4)
    assert sorted(inter.run([(None, i) for i in range(8)], episode)) == list(range(8))
    assert order[:2] == [0, 1] and sorted(order) == list(range(8)) and peak[0] == 4


def test_live_worlds_are_bounded_by_their_cap():
    from spatialact.evaluation.concurrent import Interleaver
    from spatialact.evaluation.episode import AgentCall

    class Turn:
        error = None

    def episode(i):
        yield AgentCall(time.sleep, (0.02,), observation={})
        yield AgentCall(lambda: Turn(), observation={})
        return i

    inter = Interleaver(8, caps={"world": 3, "game": 1})
    assert sorted(inter.run([("world", i) for i in range(12)], episode)) == list(range(12))
    assert inter.peak_kinds["world"] == 3 and inter.peak_live == 3
    inter = Interleaver(8, caps={"world": 3, "game": 1})
    jobs = [("world" if i % 3 else "game", i) for i in range(18)] + [(None, 100 + i) for i in range(4)]
    assert sorted(inter.run(jobs, episode)) == sorted(j for _, j in jobs)
    assert inter.peak_kinds["world"] <= 3 and inter.peak_kinds["game"] == 1 and inter.peak_live <= 8


# ----- questions --------------------------------------------------------------------------------------------------
def test_questions_are_asked_many_at_once(tmp_path, capsys, api_key):
    pytest.importorskip("pybullet")
    qfile = tmp_path / "q.jsonl"
    assert main(["questions", "build", "--out", str(qfile), "--n", "2", "--size", "48", "--types", "depth,fov",
                 "--no-progress"]) == 0
    capsys.readouterr()
    srv = FakeServer(latency=0.3)
    srv.responder = lambda body: ("sleep", 0.3, "(A)")
    try:
        argv = ["questions", "score", str(qfile), "--agent", "openai", "--agent-arg", "model=m", "--agent-arg",
                f"base_url={srv.url}", "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY", "--concurrency", "6",
                "--out", str(tmp_path / "run"), "--no-progress", "--json"]
        assert main(argv) == 0
        js = json.loads(capsys.readouterr().out)
    finally:
        srv.close()
    n = js["new"]
    assert n >= 8 and js["concurrency"] == 6 and srv.peak_in_flight >= 4
    assert len({r["key"] for r in _lines(tmp_path / "run")}) == n == len(srv.requests)


def test_a_stop_set_by_the_reader_sends_no_further_request():
    """The reader stops the run on the sixth ended episode (as a cost budget does): its answer may have come back
    together with others, yet no act is sent after it — at most the concurrency's other calls were in flight, so
    at most 6 + 3 acts were ever sent, and every ended episode is handed out."""
    from spatialact.evaluation.concurrent import Interleaver
    from spatialact.evaluation.episode import AgentCall

    class Turn:
        error = None

    sent = []

    def act(i):
        sent.append(i)
        return Turn()

    def episode(i):
        yield AgentCall(act, (i,), observation={})
        return i

    for _ in range(20):  # answers that come back at once are the case: instant ones, many times
        sent.clear()
        stop = threading.Event()
        inter = Interleaver(4, stop=stop)
        got = []
        for i in inter.run([(None, i) for i in range(40)], episode):
            got.append(i)
            if len(got) == 6:
                stop.set()
        assert 6 <= len(got) <= 9 and len(sent) <= 9 and sorted(got) == sorted(sent)
