"""Many model requests in flight: `spatialact eval --concurrency N` against a slow endpoint (not part of the tests).

A chat-completions server on loopback (tests/_chat_server.py) answers every request after 2.0 s ± 0.5 s (uniform)
and 5 % of them with a 429 carrying ``Retry-After: 1`` instead (seeded). The openai agent runs one-shot and
closed-loop navigation episodes against it at ``--concurrency`` 1, 16 and 64, each run in a fresh process (so its
memory is its own). Printed per run: wall time; the peak of requests in flight as the server counted them; the
requests, 429s and retries; the wall time against the ideal

    ideal = max(latency-bound time, the same episodes' wall time against a server that answers at once)

where the latency-bound time is max(the server's busy time summed over requests / N, the longest episode's chain
of turns x the mean latency) — the time the answers alone need with N in flight — and the second term the CPU-bound
time of the same run (worlds, renders, prompts, scoring, records; measured at the same concurrency with a 0 s
server); and, at 64, the memory per live world for each renderer (the run's peak RSS above its RSS before the
first episode, over the peak number of live worlds; the idle worlds the pool keeps are counted against it, so it
errs high). Aims: peak in flight ≥ 0.9 × N at N = 64; wall ≤ 1.3 × ideal.

Full size: 400 one-shot and 100 closed-loop episodes (closed-loop: --max-steps 5), 128² images, the tiny renderer
for the timings; at --concurrency 1 that is about 15 + 20 minutes of waiting for the server alone. --quick: 96
one-shot and 24 closed-loop episodes at 16 and 64, 8 and 2 at 1. The memory section runs 128 one-shot episodes
(--quick: 64) against a server that answers after 30 s, so that the worlds waiting for their models are 64 at
once, and prints, per renderer, the memory a live world takes and the peak RSS of the run's whole process tree
(sampled every 0.5 s by this script, summed over the processes; aim ≤ 6 GB with gl at 128²).

Two more sections (``--sections``; all four by default):

* ``storm`` — a slow model and a rate-limit storm: the server answers after 10 s ± 1 s, and for the first 30 s
  from the run's first request (then from 25 s after it, when requests are in flight) every request gets a 429
  at once with ``Retry-After`` 10 s (then 5 s); 100 one-shot episodes at --concurrency 16, the agent's retry
  options as shipped (and, for Retry-After 5 s, the retries a 30 s storm needs). Printed: the trace every 10 s
  (the adaptive limit, requests in flight as the gate and the server count them, 429s, answers, episodes
  recorded), the wall time against the ideal (the time to the first request + the storm + the answers' busy time
  outside the storm ÷ N), api_error records, and every episode recorded once.
* ``kills`` — 10 SIGKILLs with resume: 200 one-shot episodes at --concurrency 64 (``spatialact eval`` in its own
  process group, --workers 2) against the 2 s server, the whole group killed at 10 random moments (seeded) and the
  same command rerun each time, then once to the end. Printed: each kill (when, records then), processes of the
  group left after each kill (aim 0), and at the end the records: exactly one per episode (no duplicate key, none
  missing, no torn line), nothing written before a kill changed.

--quick: storm 32 episodes, the first two storms (Retry-After 10 s); kills 48 episodes and 3 kills.

Usage: .venv/bin/python benchmarks/bench_concurrency.py [--quick] [--sections throughput,memory,storm,kills]
       [--episodes 400] [--closed 100] [--concurrency 1,16,64] [--memory-renderers tiny,gl]
       [--storm-episodes 100] [--kill-episodes 200] [--kills 10]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))
from figures import record  # noqa: E402

LATENCY, JITTER, RATE_429, RETRY_AFTER = 2.0, 0.5, 0.05, "1"
STORM_LATENCY, STORM_JITTER, STORM_S = 10.0, 1.0, 30.0
MEMORY_LATENCY = 30.0
#: (the storm's start, seconds after the run's first request; Retry-After during it; the agent's retry options that
#: differ from the shipped ones); --quick runs the first two. The last run turns rate_limit_wait off: max_retries alone.
STORM_RUNS = ((0.0, "10", {}), (25.0, "10", {}), (25.0, "5", {}), (25.0, "5", {"rate_limit_wait": 0}))
SECTIONS = ("throughput", "memory", "storm", "kills")


def _child(spec: dict) -> None:
    """One run, in this (fresh) process: prints its figures as JSON."""
    import resource

    from spatialact.evaluation.episode import EpisodeConfig
    from spatialact.evaluation.runner import AgentSpec, run_eval
    from spatialact.taskgen import builtin_suite

    def rss_mb() -> float:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
        return float("nan")

    tasks = builtin_suite(f"nav:{spec['n']}", seed=0)[: spec["n"]]
    args = {"model": "bench-vlm", "base_url": spec["url"], "backoff": 0.5, "max_retries": 6, "cache_dir": None,
            "timeout": 60}
    args.update(spec.get("agent_args") or {})  # a None value: the agent's own default
    agent = AgentSpec("openai", {k: v for k, v in args.items() if v is not None})
    cfg = EpisodeConfig(mode=spec["mode"], renderer=spec["renderer"], width=128, height=128, max_steps=5)
    results = os.path.join(spec["out"], "results.jsonl")
    trace: list = []
    gate: dict = {}
    done = threading.Event()
    sampler = threading.Thread(target=_sample_gate, args=(results, trace, gate, done), daemon=True)
    if spec.get("trace"):
        sampler.start()
    before = rss_mb()
    start = time.monotonic()
    t0 = time.perf_counter()
    s = run_eval(tasks, agent, cfg, spec["out"], task_source="bench", progress=False, echo=False,
                 concurrency=spec["concurrency"])
    wall = time.perf_counter() - t0
    done.set()
    if sampler.is_alive():
        sampler.join()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    recs = [json.loads(x) for x in open(results, encoding="utf-8")]
    turns = max((int((r.get("usage") or {}).get("turns") or 0) for r in recs), default=0)
    gl = sorted({str(r.get("gl_renderer")) for r in recs})
    print(json.dumps({"wall": wall, "figures": s.figures, "rss_before": before, "rss_peak": peak,
                      "max_turns": turns, "failed": s.n_errors, "gl": gl, "start": start, "trace": trace, "gate": gate,
                      "records": len(recs), "keys": len({r["key"] for r in recs}),
                      "api_errors": sum(r.get("reason") == "api_error" for r in recs)}))


def _sample_gate(results: str, trace: list, last: dict, done: threading.Event) -> None:
    """Every 0.5 s until ``done``: (monotonic time, the gate's adaptive limit, its requests in flight, its requests,
    429s and answers so far, the records written) — the gate is the run's (``current_gate``); ``last``: its last
    snapshot (lowered, raised, lowest limit)."""
    from spatialact.agents.wire import current_gate

    while not done.wait(0.5):
        gate = current_gate()
        if gate is None:
            continue
        g = gate.snapshot()
        last.update(g)
        try:
            with open(results, "rb") as f:
                n = f.read().count(b"\n")
        except OSError:
            n = 0
        trace.append((time.monotonic(), g["limit"], g["in_flight"], g["requests"], g["rate_limited"], g["ok"], n))


def _procs() -> dict[int, tuple[int, int, str]]:
    """Every process now: pid → (parent pid, process group, state letter), from /proc."""
    table = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat", encoding="ascii", errors="replace") as f:
                    rest = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            table[int(d)] = (int(rest[1]), int(rest[2]), rest[0])
    return table


def _tree(pid: int, table: dict) -> list[int]:
    """``pid`` and its descendants in ``table`` (:func:`_procs`)."""
    kids: dict[int, list[int]] = {}
    for p, (pp, _, _) in table.items():
        kids.setdefault(pp, []).append(p)
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        out.append(p)
        stack += kids.get(p, [])
    return out


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def _run(spec: dict) -> dict:
    """One run in a fresh process (:func:`_child`); its figures, with ``tree_peak``: the peak RSS of its process
    tree (MB, summed over the processes every 0.5 s: shared pages counted in each, so it errs high)."""
    proc = subprocess.Popen([sys.executable, __file__, "--child", json.dumps(spec)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    peak = [0.0]

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], sum(_rss_mb(p) for p in _tree(proc.pid, _procs())))
            time.sleep(0.5)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, err = proc.communicate(timeout=4 * 3600)
    th.join()
    if proc.returncode != 0:
        raise RuntimeError(f"run {spec} failed:\n{err[-3000:]}")
    return dict(json.loads(out.strip().splitlines()[-1]), tree_peak=peak[0])


def _measure(server, spec: dict) -> tuple[dict, dict]:
    """(the child's figures, the server's: peak in flight, requests, 429s, busy seconds)."""
    with server.lock:
        server.spans.clear()
        server.requests.clear()  # (their bodies hold the images)
        server.headers.clear()
    server.reset_peak()
    res = _run(spec)
    with server.lock:
        spans = list(server.spans)
    busy = sum(b - a for a, b in spans)
    return res, {"peak": server.peak_in_flight, "requests": len(spans), "busy": busy}


def _throughput(args, slow, fast, tmp: Path, n_one: int, n_closed: int) -> None:
    small = {"one-shot": 8, "closed-loop": 2} if args.quick else {"one-shot": n_one, "closed-loop": n_closed}
    concs = [int(c) for c in args.concurrency.split(",")]
    print(f"{'mode':<12}{'N':>4}{'episodes':>9}{'wall s':>9}{'peak':>6}{'reqs':>6}{'429':>5}{'retry':>6}"
          f"{'lat-bound':>10}{'cpu-bound':>10}{'ideal':>8}{'ratio':>7}")
    for mode, n_full in (("one-shot", n_one), ("closed-loop", n_closed)):
        for c in concs:
            n = small[mode] if c == 1 else n_full
            spec = {"url": slow.url, "mode": mode, "n": n, "concurrency": c, "renderer": "tiny",
                    "out": str(tmp / f"{mode}-{c}")}
            res, srv = _measure(slow, spec)
            zero, _ = _measure(fast, dict(spec, url=fast.url, out=str(tmp / f"{mode}-{c}-zero")))
            mean = srv["busy"] / max(1, srv["requests"] - res["figures"]["rate_limited"])
            lat = max(srv["busy"] / c, res["max_turns"] * mean)
            ideal = max(lat, zero["wall"])
            f = res["figures"]
            ratio = res["wall"] / ideal
            print(f"{mode:<12}{c:>4}{n:>9}{res['wall']:>9.1f}{srv['peak']:>6}{srv['requests']:>6}"
                  f"{f['rate_limited']:>5}{f['retries']:>6}{lat:>10.1f}{zero['wall']:>10.1f}{ideal:>8.1f}"
                  f"{ratio:>6.2f}×" + (f"  ({res['failed']} failed)" if res["failed"] else ""), flush=True)
            if c > 1:
                record("bench_concurrency.py", f"eval --concurrency {c}, {n} {mode} nav episodes, 2 s ± 0.5 s "
                       f"server, 5% 429: wall time", res["wall"], "s", anchor="the ideal (max of latency-bound "
                       "and CPU-bound time)", anchor_value=ideal, higher_is_better=False,
                       aim="≤ 1.3× the ideal" if c == 64 else None)
                record("bench_concurrency.py", f"eval --concurrency {c}, {mode}: peak requests in flight",
                       srv["peak"], "requests", anchor=f"N = {c}", anchor_value=c,
                       aim="≥ 0.9 × N" if c == 64 else None)


def _memory(args, tmp: Path) -> None:
    """Memory at --concurrency 64 with every place taken: a server that answers after 30 s, so the run's worlds
    wait for their models 64 at a time (with the 2 s server, a CPU-bound run keeps fewer alive)."""
    from _chat_server import FakeServer

    n = 64 if args.quick else 128
    print(f"\nmemory at --concurrency 64, {n} one-shot episodes, 128², a server answering after {MEMORY_LATENCY:g} s "
          f"(worlds stay alive while their models answer, so up to 64 are alive at once):")
    for r in args.memory_renderers.split(","):
        srv = FakeServer(latency=MEMORY_LATENCY)
        spec = {"url": srv.url, "mode": "one-shot", "n": n, "concurrency": 64, "renderer": r,
                "out": str(tmp / f"mem-{r}")}
        try:
            res = _run(spec)
        except RuntimeError as e:
            print(f"  {r}: not measured ({str(e).splitlines()[0]})")
            continue
        finally:
            srv.close()
        f = res["figures"]
        worlds = max(1, f["peak_worlds"])
        per = (res["rss_peak"] - res["rss_before"]) / worlds
        print(f"  {r:<5} ({', '.join(res['gl'])}): {worlds} live worlds at the peak ({f['worlds_made']} made, "
              f"{f['worlds_reused']} reused; up to 16 more kept for reuse), RSS {res['rss_before']:.0f} MB before "
              f"the first episode, peak {res['rss_peak']:.0f} MB: {per:.1f} MB a live world; the process tree's "
              f"peak RSS {res['tree_peak'] / 1024:.2f} GB (aim ≤ 6 GB)", flush=True)
        record("bench_concurrency.py", f"memory per live world at --concurrency 64, renderer {r}", per, "MB",
               higher_is_better=False)
        record("bench_concurrency.py", f"peak RSS of the process tree, --concurrency 64, 128², renderer {r}",
               res["tree_peak"] / 1024, "GB", higher_is_better=False, aim="≤ 6 GB" if r == "gl" else None)


def _storm_trace(res: dict, spans: list, t_first: float, step: float = 10.0) -> None:
    """The run every ``step`` seconds from its first request: the gate's adaptive limit (at the step's end) and
    its requests in flight (most), the server's in flight (most), 429s sent and answers given, records written."""
    print(f"    {'t s':>9}{'limit':>6}{'gate in flight':>15}{'server in flight':>17}{'429s':>6}{'answers':>8}"
          f"{'recorded':>9}")
    trace = [row for row in res["trace"] if row[0] >= t_first]
    end = max([b for _, b in spans] + [t_first])
    k = 0
    while t_first + k * step < end:
        lo, hi = t_first + k * step, t_first + (k + 1) * step
        rows = [row for row in trace if lo <= row[0] < hi]
        if rows:
            limit, n_rec = rows[-1][1], rows[-1][6]
            gate = max(row[2] for row in rows)
            server = max(sum(a <= row[0] < b for a, b in spans) for row in rows)
            print(f"    {k * step:>4.0f}-{(k + 1) * step:<4.0f}{limit:>6}{gate:>15}{server:>17}"
                  f"{sum(lo <= a < hi and b - a < 1.0 for a, b in spans):>6}"
                  f"{sum(lo <= b < hi and b - a >= 1.0 for a, b in spans):>8}{n_rec:>9}")
        k += 1


def _storm_at(srv, offset: float, seconds: float, ra: str, stop: threading.Event) -> None:
    """Start ``srv``'s storm ``offset`` seconds after its first request (polled every 20 ms)."""
    while not stop.is_set():
        with srv.lock:
            seen = bool(srv.requests)
        if seen:
            srv.start_storm(seconds, ra, at=time.monotonic() + offset)
            return
        time.sleep(0.02)


def _storm(args, tmp: Path) -> None:
    """A slow model (10 s) and a 30 s rate-limit storm, from the first request or later (module doc)."""
    import inspect
    import math

    from _chat_server import FakeServer
    from spatialact.agents.openai_agent import OpenAIAgent

    params = inspect.signature(OpenAIAgent.__init__).parameters
    shipped = {k: params[k].default for k in ("max_retries", "rate_limit_wait")}
    n, c = args.storm_episodes or (32 if args.quick else 100), 16
    print(f"\nslow model and a rate-limit storm: the server answers after {STORM_LATENCY:g} s ± {STORM_JITTER:g} s; "
          f"for {STORM_S:g} s it answers every request with a 429 at once; {n} one-shot episodes, --concurrency {c}, "
          f"128², tiny renderer; the agent's retries as shipped: max_retries {shipped['max_retries']}, 429s also past "
          f"them while their waits add up to rate_limit_wait {shipped['rate_limit_wait']:g} s; t: seconds from the "
          f"first request")
    for k, (offset, ra, changed) in enumerate(STORM_RUNS[:2] if args.quick else STORM_RUNS):
        srv = FakeServer(latency=STORM_LATENCY, jitter=STORM_JITTER, seed=0)
        stop = threading.Event()
        if offset:
            threading.Thread(target=_storm_at, args=(srv, offset, STORM_S, ra, stop), daemon=True).start()
        else:
            srv.start_storm(STORM_S, ra)  # from the first request on
        try:
            res = _run({"url": srv.url, "mode": "one-shot", "n": n, "concurrency": c, "renderer": "tiny",
                        "out": str(tmp / f"storm-{k}"), "trace": True,
                        "agent_args": {"max_retries": None, "backoff": None, **changed}})
            with srv.lock:
                spans, t_storm, n429 = list(srv.spans), srv.storm_start, srv.storm_429
        finally:
            stop.set()
            srv.close()
        g, t_first = res["gate"], min(a for a, _ in spans)
        first = t_first - res["start"]
        ok = [(a, b) for a, b in spans if b - a >= 1.0]
        busy = sum(b - a for a, b in ok)
        inside = sum(max(0.0, min(b, t_storm + STORM_S) - max(a, t_storm)) for a, b in ok)
        ideal = first + STORM_S + (busy - inside) / c
        used = dict(shipped, **changed)
        print(f"\n  storm from t = {t_storm - t_first:.0f} s to {t_storm - t_first + STORM_S:.0f} s, Retry-After "
              f"{ra} s, max_retries {used['max_retries']}, rate_limit_wait {used['rate_limit_wait']:g} s"
              f"{' (as shipped)' if not changed else ''} (a {STORM_S:g} s storm needs {math.ceil(STORM_S / float(ra))} "
              f"retries):")
        _storm_trace(res, spans, t_first)
        print(f"    wall {res['wall']:.1f} s; ideal {ideal:.1f} s (first request {first:.1f} s after the start + the "
              f"{STORM_S:g} s storm + the answers' busy time outside it, {busy - inside:.0f} s, ÷ {c}): "
              f"{res['wall'] / ideal:.2f}×; {n429} 429s, {g.get('retries')} retries; adaptive limit lowered "
              f"{g.get('lowered')}× (lowest {g.get('lowest_limit')}), raised {g.get('raised')}×; peak in flight "
              f"{g.get('peak_in_flight')}; {res['records']} records, {res['keys']} distinct episodes of {n}, "
              f"{res['api_errors']} api_error", flush=True)
        if k < 2:
            record("bench_concurrency.py", f"eval --concurrency {c}, {n} one-shot episodes, 10 s server, a 30 s "
                   f"429 storm from t = {offset:g} s (Retry-After {ra} s): wall time", res["wall"], "s",
                   anchor="the ideal (first request + storm + busy time outside it ÷ N)", anchor_value=ideal,
                   higher_is_better=False)


def _lines(path: Path) -> list[bytes]:
    try:
        return path.read_bytes().split(b"\n")
    except OSError:
        return [b""]


def _kill_once(cmd, env, log, results: Path, target: int, extra: float, slow) -> dict | None:
    """Start ``cmd`` in its own process group, wait until ``results`` has ``target`` lines and ``extra`` seconds
    more, then SIGKILL the whole group; None when the run ended first. Returns when it was killed, the group's
    processes then, the requests in flight at the server then, and the group's processes left (not zombies) 5 s
    after."""
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=log, start_new_session=True)
    t0 = time.perf_counter()
    while proc.poll() is None and len(_lines(results)) - 1 < target:
        time.sleep(0.05)
    t_end = time.perf_counter() + extra
    while proc.poll() is None and time.perf_counter() < t_end:
        time.sleep(0.05)
    if proc.poll() is not None:
        return None
    members = set(_tree(proc.pid, _procs()))
    in_flight = slow.in_flight
    os.killpg(proc.pid, signal.SIGKILL)
    at = time.perf_counter() - t0
    proc.wait()
    deadline = time.time() + 5
    while True:
        left = [p for p, (_, g, st) in _procs().items() if (g == proc.pid or p in members) and st != "Z"]
        if not left or time.time() > deadline:
            break
        time.sleep(0.1)
    return {"at": at, "pgid": proc.pid, "procs": len(members), "in_flight": in_flight, "left": len(left)}


def _kills(args, slow, tmp: Path) -> None:
    """SIGKILLs of the whole process group at random moments, each followed by the same command (module doc)."""
    n = args.kill_episodes or (48 if args.quick else 200)
    kills = args.kills if args.kills is not None else (3 if args.quick else 10)
    out = tmp / "kills"
    results = out / "results.jsonl"
    cmd = [sys.executable, "-m", "spatialact.cli.main", "eval", "--no-progress", "--suite", f"nav:{n}", "--limit",
           str(n), "--size", "128", "--renderer", "tiny", "--concurrency", "64", "--workers", "2", "--out", str(out),
           "--agent", "openai", "--agent-arg", "model=bench-vlm", "--agent-arg", f"base_url={slow.url}",
           "--agent-arg", "api_key_env=SPATIALACT_BENCH_KEY", "--agent-arg", "backoff=0.5"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), SPATIALACT_BENCH_KEY="sk-bench")
    print(f"\n{kills} SIGKILLs with resume: {n} one-shot episodes, --concurrency 64 --workers 2, the 2 s server; "
          f"`spatialact eval` in its own process group, killed whole at random moments (seed 0), the same command "
          f"rerun each time:")
    rng = random.Random(0)
    kept: set[bytes] = set()
    groups, landed = [], []
    with slow.lock:
        slow.spans.clear()
    t_all = time.perf_counter()
    with open(tmp / "kills.log", "ab") as log:
        while len(landed) < kills:
            have = len(_lines(results)) - 1
            left = kills - len(landed)
            target = have + rng.randint(0, max(1, 2 * (n - have) // (left + 1)))
            k = _kill_once(cmd, env, log, results, target, rng.uniform(0.0, 1.5), slow)
            if k is None:
                break
            groups.append(k["pgid"])
            lines = _lines(results)
            kept |= set(lines[:-1])  # the complete lines (a torn last one is not)
            landed.append(k)
            print(f"  kill {len(landed):>2}: {k['at']:5.1f} s after the start, {have:>3} → {len(lines) - 1:>3} "
                  f"records, {k['procs']} processes in the group, {k['in_flight']:>2} requests in flight; "
                  f"processes left: {k['left']}", flush=True)
        rc = subprocess.call(cmd, env=env, stdout=log, stderr=log)
    wall = time.perf_counter() - t_all
    raw = [x for x in _lines(results) if x.strip()]
    recs, torn = [], 0
    for x in raw:
        try:
            recs.append(json.loads(x))
        except ValueError:
            torn += 1
    keys = [r["key"] for r in recs]
    tasks = {r.get("task_id") for r in recs}
    alive = [p for p, (_, g, st) in _procs().items() if g in groups and st != "Z"]
    kept_ok = kept <= set(raw)
    with slow.lock:
        asked = len(slow.spans)
    print(f"  resumed to the end: exit {rc}; {len(recs)} records, {len(set(keys))} distinct episodes of {n} "
          f"({len(keys) - len(set(keys))} duplicate keys, {n - len(set(keys))} missing, {len(tasks)} distinct "
          f"tasks), {torn} torn lines, {sum(r.get('reason') == 'api_error' for r in recs)} api_error; every "
          f"record written before a kill unchanged: {'yes' if kept_ok else 'NO'}; processes of the killed groups "
          f"alive: {len(alive)}; {len(landed)} kills, {len(landed) + 1} starts, {wall:.0f} s in all; the server "
          f"answered {asked} requests for {n} episodes", flush=True)
    record("bench_concurrency.py", f"{len(landed)} SIGKILLs of eval --concurrency 64 --workers 2 ({n} episodes), "
           "each resumed: episodes recorded exactly once", len(set(keys)) - (len(keys) - len(set(keys))),
           "episodes", anchor="episodes", anchor_value=n, aim="all, none twice")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--sections", default=",".join(SECTIONS), help="of " + ",".join(SECTIONS))
    p.add_argument("--episodes", type=int, default=None)
    p.add_argument("--closed", type=int, default=None)
    p.add_argument("--concurrency", default="1,16,64")
    p.add_argument("--memory-renderers", default="tiny,gl")
    p.add_argument("--storm-episodes", type=int, default=None)
    p.add_argument("--kill-episodes", type=int, default=None)
    p.add_argument("--kills", type=int, default=None)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        _child(json.loads(args.child))
        return 0
    sections = [x for x in args.sections.split(",") if x]
    if not sections or set(sections) - set(SECTIONS):
        print(f"bench_concurrency: --sections takes some of {','.join(SECTIONS)}, got {args.sections!r}",
              file=sys.stderr)
        return 2
    from _chat_server import FakeServer

    n_one = args.episodes or (96 if args.quick else 400)
    n_closed = args.closed or (24 if args.quick else 100)
    slow = FakeServer(latency=LATENCY, jitter=JITTER, rate_429=RATE_429, retry_after=RETRY_AFTER, seed=0)
    fast = FakeServer()
    tmp = Path(tempfile.mkdtemp(prefix="bench-concurrency-"))
    print(f"server: {LATENCY} s ± {JITTER} s, {RATE_429:.0%} 429 (Retry-After {RETRY_AFTER}); 128² images, tiny "
          f"renderer; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    try:
        if "throughput" in sections:
            _throughput(args, slow, fast, tmp, n_one, n_closed)
        if "memory" in sections:
            _memory(args, tmp)
        if "storm" in sections:
            _storm(args, tmp)
        if "kills" in sections:
            _kills(args, slow, tmp)
    finally:
        slow.close()
        fast.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
