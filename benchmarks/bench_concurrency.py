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
one-shot and 24 closed-loop episodes at 16 and 64, 8 and 2 at 1.

Usage: .venv/bin/python benchmarks/bench_concurrency.py [--quick] [--episodes 400] [--closed 100]
       [--concurrency 1,16,64] [--memory-renderers tiny,gl]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))
from figures import record  # noqa: E402

LATENCY, JITTER, RATE_429, RETRY_AFTER = 2.0, 0.5, 0.05, "1"


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
    agent = AgentSpec("openai", {"model": "bench-vlm", "base_url": spec["url"], "backoff": 0.5,
                                 "max_retries": 6, "cache_dir": None, "timeout": 60})
    cfg = EpisodeConfig(mode=spec["mode"], renderer=spec["renderer"], width=128, height=128, max_steps=5)
    before = rss_mb()
    t0 = time.perf_counter()
    s = run_eval(tasks, agent, cfg, spec["out"], task_source="bench", progress=False, echo=False,
                 concurrency=spec["concurrency"])
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    recs = [json.loads(x) for x in open(os.path.join(spec["out"], "results.jsonl"), encoding="utf-8")]
    turns = max((int((r.get("usage") or {}).get("turns") or 0) for r in recs), default=0)
    gl = sorted({str(r.get("gl_renderer")) for r in recs})
    print(json.dumps({"wall": wall, "figures": s.figures, "rss_before": before, "rss_peak": peak,
                      "max_turns": turns, "failed": s.n_errors, "gl": gl}))


def _run(spec: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT / "src")), timeout=4 * 3600)
    if out.returncode != 0:
        raise RuntimeError(f"run {spec} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--episodes", type=int, default=None)
    p.add_argument("--closed", type=int, default=None)
    p.add_argument("--concurrency", default="1,16,64")
    p.add_argument("--memory-renderers", default="tiny,gl")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        _child(json.loads(args.child))
        return 0
    from _chat_server import FakeServer

    n_one = args.episodes or (96 if args.quick else 400)
    n_closed = args.closed or (24 if args.quick else 100)
    small = {"one-shot": 8, "closed-loop": 2} if args.quick else {"one-shot": n_one, "closed-loop": n_closed}
    concs = [int(c) for c in args.concurrency.split(",")]
    slow = FakeServer(latency=LATENCY, jitter=JITTER, rate_429=RATE_429, retry_after=RETRY_AFTER, seed=0)
    fast = FakeServer()
    tmp = Path(tempfile.mkdtemp(prefix="bench-concurrency-"))
    print(f"server: {LATENCY} s ± {JITTER} s, {RATE_429:.0%} 429 (Retry-After {RETRY_AFTER}); 128² images, tiny "
          f"renderer; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print(f"{'mode':<12}{'N':>4}{'episodes':>9}{'wall s':>9}{'peak':>6}{'reqs':>6}{'429':>5}{'retry':>6}"
          f"{'lat-bound':>10}{'cpu-bound':>10}{'ideal':>8}{'ratio':>7}")
    walls: dict = {}
    try:
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
                walls[mode, c] = res["wall"]
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
        print("\nmemory at --concurrency 64, one-shot, the slow server (worlds stay alive while their models answer):")
        for r in args.memory_renderers.split(","):
            spec = {"url": slow.url, "mode": "one-shot", "n": 128 if args.quick else n_one, "concurrency": 64,
                    "renderer": r, "out": str(tmp / f"mem-{r}")}
            try:
                res = _run(spec)
            except RuntimeError as e:
                print(f"  {r}: not measured ({str(e).splitlines()[0]})")
                continue
            f = res["figures"]
            worlds = max(1, f["peak_worlds"])
            per = (res["rss_peak"] - res["rss_before"]) / worlds
            print(f"  {r:<5} ({', '.join(res['gl'])}): {worlds} live worlds at the peak ({f['worlds_made']} made, "
                  f"{f['worlds_reused']} reused; up to 16 more kept for reuse), RSS {res['rss_before']:.0f} MB before "
                  f"the first episode, peak {res['rss_peak']:.0f} MB: {per:.1f} MB a live world", flush=True)
            record("bench_concurrency.py", f"memory per live world at --concurrency 64, renderer {r}", per, "MB",
                   higher_is_better=False)
    finally:
        slow.close()
        fast.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
