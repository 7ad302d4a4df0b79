"""Kills of the game engine during `spatialact eval --suite game` runs, and of `eval` itself, counted (not part of the
tests: tests/envs/doom/test_worker_crash.py checks a few of each, bounded in time).

Three experiments, each on fresh run folders in a temporary directory, closed-loop with the oracle:

* **mid-run** (``--mid``, 20): the game process (``vizdoom``) of a running ``eval`` is SIGKILLed at a random moment
  after a new episode record, at most ``--per-run`` times a run. Counted: runs that hung (no exit within
  ``--timeout``), runs that crashed (killed by a signal), failed episodes, failed episodes whose error is not the
  engine's stop ("the game engine stopped …") and failures beyond the kills of their run (unrelated episodes that
  failed); then the same command with ``--retry-errors`` (a resume) must finish with every episode done.
* **start-up** (``--startup``, 5): every game process is SIGKILLed as soon as it is there (the binding still starting
  it), until that many kills; counted as above.
* **SIGKILL of eval** (``--sigkill``, 10): ``eval`` is SIGKILLed while a game runs (at a random moment up to 3 s
  after one appears); counted: the game engines (and other processes it started) still running 10 s later. They are
  then killed — they are this script's descendants, found from ``eval``'s pid and never by name over the machine.

The processes are found by walking ``/proc/<pid>/task/*/children`` from ``eval``'s pid; a game is a descendant whose
executable is vizdoom's ``vizdoom``. ``--src`` runs ``eval`` from another source tree (``PYTHONPATH``), e.g. an
older checkout, for a before/after comparison.

Usage: .venv/bin/python benchmarks/game_kills.py [--mid 20] [--startup 5] [--sigkill 10] [--per-run 5]
       [--timeout 300] [--seed 0] [--src PATH]
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
import time
from pathlib import Path

STOPPED = "the game engine stopped"
CLI = "import sys\nfrom spatialact.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"


def children(pid: int) -> list[int]:
    out = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out += [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        pass
    return out


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for c in children(todo.pop()):
            out.append(c)
            todo.append(c)
    return out


def start_time(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def is_game(pid: int) -> bool:
    try:
        return Path(os.readlink(f"/proc/{pid}/exe")).name == "vizdoom"
    except OSError:
        return False


def kill(pid: int, when: int | None = None) -> bool:
    """SIGKILL ``pid`` if it is still the process that started at ``when`` (its start time; None: any)."""
    if when is not None and start_time(pid) != when:
        return False
    try:
        os.kill(pid, signal.SIGKILL)
        return True
    except OSError:
        return False


def run_eval(out: Path, src: str, extra=()) -> subprocess.Popen:
    cmd = [sys.executable, "-c", CLI, "eval", "--suite", "game", "--mode", "closed-loop", "--agent", "oracle",
           "--no-progress", "--out", str(out), *extra]
    return subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": src}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def latest_records(out: Path) -> list[dict]:
    recs = {}
    path = out / "results.jsonl"
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                recs[(r.get("task_id"), r.get("variant"), r.get("repeat"))] = r
    return list(recs.values())


def n_lines(out: Path) -> int:
    try:
        return sum(1 for line in (out / "results.jsonl").read_text().splitlines() if line.strip())
    except OSError:
        return 0


def finish(p: subprocess.Popen, deadline: float) -> str:
    """'ok' (exit 0), 'failures' (exit 1), 'hang' (killed at the deadline), 'crash (SIG…)', or 'exit N'."""
    try:
        rc = p.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        for d in descendants(p.pid):
            kill(d)
        p.kill()
        p.wait()
        return "hang"
    if rc < 0:
        return f"crash ({signal.Signals(-rc).name})"
    return {0: "ok", 1: "failures"}.get(rc, f"exit {rc}")


def kill_run(out: Path, src: str, timeout: float, rng: random.Random, budget: int, at_start: bool) -> dict:
    """One eval run with up to ``budget`` kills of its game; then a resume with --retry-errors."""
    p = run_eval(out, src)
    deadline = time.monotonic() + timeout
    kills, seen, killed = 0, 0, set()
    while p.poll() is None and time.monotonic() < deadline and kills < budget:
        games = [(g, start_time(g)) for g in descendants(p.pid) if is_game(g)]
        games = [g for g in games if g not in killed and g[1] is not None]
        n = n_lines(out)
        if games and (at_start or n > seen):
            if not at_start:
                time.sleep(rng.uniform(0.05, 0.4))
            for g in games:
                if kill(*g):
                    killed.add(g)
            kills += 1
            seen = n_lines(out)
        time.sleep(0.002 if at_start else 0.02)
    status = finish(p, deadline)
    recs = latest_records(out)
    failed = [r for r in recs if r.get("reason")]
    other = [r for r in failed if STOPPED not in str(r.get("error"))]
    row = {"kills": kills, "status": status, "episodes": len(recs), "failed": len(failed), "not_engine": len(other),
           "beyond_kills": max(0, len(failed) - kills)}
    t = time.monotonic()
    q = run_eval(out, src, ["--retry-errors"])
    row["resume"] = finish(q, t + timeout)
    recs = latest_records(out)
    row["resume_done"] = len(recs) > 0 and all(not r.get("reason") for r in recs)
    row["resume_episodes"] = len(recs)
    return row


def experiment(name: str, total: int, per_run: int, tmp: Path, args, rng, at_start: bool) -> list[dict]:
    rows, k = [], 0
    while k < total:
        row = kill_run(tmp / f"{name}{len(rows)}", args.src, args.timeout, rng, min(per_run, total - k), at_start)
        rows.append(row)
        print(f"  {name} run {len(rows)}: {json.dumps(row)}", flush=True)
        k += max(1, row["kills"])
    return rows


def sigkill_eval(tmp: Path, args, rng) -> list[dict]:
    rows = []
    for i in range(args.sigkill):
        p = run_eval(tmp / f"sigkill{i}", args.src)
        end = time.monotonic() + args.timeout
        while p.poll() is None and time.monotonic() < end and not any(is_game(d) for d in descendants(p.pid)):
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 3.0))
        procs = [(d, start_time(d), is_game(d)) for d in descendants(p.pid)]
        p.kill()
        p.wait()
        t = time.monotonic()
        while time.monotonic() - t < 10.0 and any(start_time(d) == s for d, s, _ in procs if s is not None):
            time.sleep(0.05)
        left = [(d, s, g) for d, s, g in procs if s is not None and start_time(d) == s]
        row = {"processes": len(procs), "games": sum(g for _, _, g in procs),
               "games_left": sum(g for _, _, g in left), "others_left": sum(not g for _, _, g in left)}
        for d, s, _ in left:  # clean up what the run left
            kill(d, s)
        rows.append(row)
        print(f"  sigkill {i + 1}: {json.dumps(row)}", flush=True)
    return rows


def summary(name: str, rows: list[dict]) -> None:
    kills = sum(r["kills"] for r in rows)
    bad = [r["status"] for r in rows if r["status"] not in ("ok", "failures")]
    hung = sum(s == "hang" for s in bad)
    crashed = sum(s.startswith("crash") for s in bad)
    failed, other = sum(r["failed"] for r in rows), sum(r["not_engine"] for r in rows)
    beyond = sum(r["beyond_kills"] for r in rows)
    resumed = sum(r["resume"] == "ok" and r["resume_done"] for r in rows)
    print(f"{name}: {kills} kills in {len(rows)} runs; hung {hung}, crashed {crashed}, other exits "
          f"{len(bad) - hung - crashed}; failed episodes {failed} (not the engine's stop: {other}, beyond the kills of "
          f"their run: {beyond}); resumes complete {resumed}/{len(rows)}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mid", type=int, default=20, help="kills of the game mid-run")
    ap.add_argument("--startup", type=int, default=5, help="kills of the game while it starts")
    ap.add_argument("--sigkill", type=int, default=10, help="SIGKILLs of eval")
    ap.add_argument("--per-run", type=int, default=5, help="at most this many mid-run kills in one eval run")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds an eval run may take before it hangs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--src", default=str(Path(__file__).resolve().parents[1] / "src"),
                    help="the source tree eval runs from (PYTHONPATH)")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; eval from {args.src}")
    with tempfile.TemporaryDirectory(prefix="spatialact-game-kills-") as d:
        tmp = Path(d)
        mid = experiment("mid", args.mid, args.per_run, tmp, args, rng, False) if args.mid else []
        start = experiment("startup", args.startup, args.startup, tmp, args, rng, True) if args.startup else []
        sk = sigkill_eval(tmp, args, rng) if args.sigkill else []
    print()
    if mid:
        summary("mid-run kills", mid)
    if start:
        summary("start-up kills", start)
    if sk:
        print(f"SIGKILL of eval: {len(sk)} kills; game engines left running "
              f"{sum(r['games_left'] for r in sk)} (of {sum(r['games'] for r in sk)} running at the kills), other "
              f"processes left {sum(r['others_left'] for r in sk)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
