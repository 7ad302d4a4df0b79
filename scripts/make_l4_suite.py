"""Build the frozen suite l4-v1 (spatialact/data/suites/l4-v1.jsonl, l4-v1.card.json, l4-v1.questions.jsonl) from
scratch, or check that the shipped files are reproduced byte for byte (--check).

Each track (nav, manip, hand, game, camera) is drawn from fixed seeds (spatialact.taskgen.l4_suite), the question
track is built with spatialact.questions.suite, and the card records pins, counts, SHA-256s, the lite split and the
95% interval of noisy-oracle's skill (noise 2, one-shot, scored without a simulator) per track. The tracks build in
parallel worker processes (--jobs; the result does not depend on it). A released version never changes: after a
deliberate change of the suite, raise the version (l4-v2) instead of rebuilding l4-v1.

Usage: .venv/bin/python scripts/make_l4_suite.py [--out-dir DIR] [--check] [--jobs N|auto]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

NOISE = 2.0          # noisy-oracle's noise for the measured half-widths
N_BOOT = 1000
ORDER = ("game", "nav", "manip", "questions", "camera", "hand")  # longest first


def _job(name: str, qdir: str):
    """One track (or the question track) in a worker: (name, payload, seconds)."""
    t0 = time.perf_counter()
    if name == "questions":
        from spatialact.questions.suite import build_question_track, question_track_info

        path = build_question_track(qdir)
        return name, (path.read_bytes(), question_track_info(path)), time.perf_counter() - t0
    from spatialact.taskgen.l4_suite import build_track

    return name, build_track(name), time.perf_counter() - t0


def half_widths(tasks) -> dict:
    """Per track, noisy-oracle's (noise 2, seed 0) one-shot skill and its 95% bootstrap interval, scored with
    score_episode against the ground truth (no simulator)."""
    from spatialact.agents.baselines import NoisyOracleAgent
    from spatialact.scorers import score_episode, skill_summary

    from spatialact.taskgen.l4_suite import PINS, TRACKS

    agent = NoisyOracleAgent(seed=0, noise=NOISE)
    by: dict = {t: ([], []) for t in TRACKS}
    for task in tasks:
        agent.reset(task, mode="one-shot")
        seq = agent.act({"mode": "one-shot", "step_index": 0}).parse.sequence
        s, s0 = by[task.meta["track"]]
        s.append(score_episode(seq, task.gt, task.kind, PINS["profile"]).total)
        s0.append(task.meta["s0"]["one-shot"])
    out = {}
    for track, (s, s0) in by.items():
        if not s:
            continue
        r = skill_summary(s, s0, n_boot=N_BOOT, seed=0)
        out[track] = {"agent": "noisy-oracle", "noise": NOISE, "n": r["n"], "skill": round(r["skill"], 4),
                      "lo": round(r["lo"], 4), "hi": round(r["hi"], 4), "half_width": round((r["hi"] - r["lo"]) / 2, 4)}
    return out


def collect(jobs: int) -> tuple[dict, dict]:
    """Every part built ({part: payload}) and the seconds each took."""
    results, seconds = {}, {}
    with tempfile.TemporaryDirectory() as qdir:
        if jobs > 1:
            with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
                for name, payload, sec in pool.map(_job, ORDER, [qdir] * len(ORDER)):
                    results[name], seconds[name] = payload, sec
                    print(f"  {name}: {sec:.0f} s", file=sys.stderr)
        else:
            for name in ORDER:
                _, results[name], seconds[name] = _job(name, qdir)
                print(f"  {name}: {seconds[name]:.0f} s", file=sys.stderr)
    return results, seconds


def write(out_dir: Path, results: dict) -> dict:
    """Write the task file, the question file and the card built from ``results`` into ``out_dir``; returns the
    card."""
    from spatialact.tasks import save_tasks
    from spatialact.taskgen.l4_suite import TRACKS, card_path, make_card, questions_path, suite_path

    out_dir.mkdir(parents=True, exist_ok=True)
    tasks = [t for track in TRACKS for t in results[track][0]]
    path = save_tasks(tasks, out_dir / suite_path().name)
    data = path.read_bytes()
    qbytes, qinfo = results["questions"]
    (out_dir / questions_path().name).write_bytes(qbytes)
    card = make_card(tasks, hashlib.sha256(data).hexdigest(), len(data), {t: results[t][1] for t in TRACKS},
                     half_widths(tasks), qinfo)
    (out_dir / card_path().name).write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for track in TRACKS:
        hw = card["tracks"][track]["noisy_oracle_skill"]
        print(f"{track}: {card['tracks'][track]['n']} tasks, noisy-oracle skill {hw['skill']:.3f} "
              f"± {hw['half_width']:.4f}; left out {card['tracks'][track]['left_out']}")
    print(f"questions: {qinfo['n']}; {len(tasks)} tasks ({len(data) / 1e6:.2f} MB) -> {out_dir}")
    return card


def build(out_dir: Path, jobs: int) -> dict:
    """Build every file of the suite into ``out_dir``; returns the card."""
    results, _ = collect(jobs)
    return write(out_dir, results)


def main() -> int:
    from spatialact.taskgen.l4_suite import card_path, questions_path, suite_path

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", default=None, help="folder to write the three files to (default: the shipped ones)")
    p.add_argument("--check", action="store_true", help="build into a temporary folder and compare with the shipped "
                                                        "files byte for byte")
    p.add_argument("--jobs", default="auto", help="worker processes (default auto: one per CPU, at most 6)")
    args = p.parse_args()
    try:
        jobs = min(6, os.cpu_count() or 1) if args.jobs == "auto" else int(args.jobs)
    except ValueError:
        print(f"make_l4_suite.py: --jobs {args.jobs!r}: expected a whole number or auto", file=sys.stderr)
        return 2
    if jobs < 1:
        print(f"make_l4_suite.py: --jobs {jobs}: must be at least 1", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    shipped = [suite_path(), card_path(), questions_path()]
    if args.check:
        with tempfile.TemporaryDirectory() as d:
            build(Path(d), jobs)
            same = {f.name: (Path(d) / f.name).read_bytes() == f.read_bytes() for f in shipped}
        for name, ok in same.items():
            print(f"{name}: {'reproduced byte for byte' if ok else 'DIFFERS from a fresh build'}")
        print(f"build time {time.perf_counter() - t0:.0f} s ({jobs} job(s))")
        return 0 if all(same.values()) else 1
    out_dir = Path(args.out_dir) if args.out_dir else suite_path().parent
    build(out_dir, jobs)
    print(f"build time {time.perf_counter() - t0:.0f} s ({jobs} job(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
