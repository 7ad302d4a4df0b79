"""Does skill on l4-v1 separate what it measures? One-shot answers of known agents, scored offline, per track.

The agents: the oracle (the ground truth), the noisy oracle at noise 0.5, 1, 2, 4 and 8 (every signed count of the
ground truth gets round(N(0, noise)) added: the larger the noise, the worse the answer, by construction), random,
stay (doing nothing) and constant ("Truck Left"). Each agent answers every task of the suite one-shot exactly as in
`spatialact eval` (the same agent, seeded per episode from seed 0 and the task id: ``AgentSpec.build``); the
answers are written as an answer file and scored by ``spatialact.scorers.score_file`` (the `spatialact score`
pipeline: parsing, the paper's step score, s0). A one-shot score compares the answer with the ground truth, so it
does not depend on the images or on executing the answer: no simulator is needed, and the whole suite scores in
seconds. (The geometric baseline looks at the images: it is not in this table; its rows come from eval runs,
scripts/l4_baselines.py.)

Printed, and written into docs/benchmark.md between its ``l4-separation`` markers: per track, each agent's skill with
its 95% bootstrap interval (``scorers.skill_summary``) and, for each pair of neighbouring noise levels, the paired
difference of skill with its paired bootstrap 95% interval and the Wilcoxon p-value (``scorers.paired_difference``).

Usage: .venv/bin/python scripts/l4_separation.py [--suite l4-v1] [--doc docs/benchmark.md] [--no-doc]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- l4-separation:start -->", "<!-- l4-separation:end -->"
NOISES = (0.5, 1, 2, 4, 8)
#: (label, agent, options)
AGENTS = [("oracle", "oracle", {}), *[(f"noisy-oracle {n:g}", "noisy-oracle", {"noise": n}) for n in NOISES],
          ("random", "random", {}), ("stay", "stay", {}), ("constant", "constant", {})]
TRACKS = ("nav", "manip", "hand", "game", "camera")


def answers(tasks, agent: str, options: dict, seed: int = 0) -> list[dict]:
    """One-shot answer lines ``{"task_id", "response"}`` of one agent, as eval's episodes would get them."""
    from spatialact.evaluation.runner import AgentSpec

    spec = AgentSpec(agent, dict(options))
    out = []
    for t in tasks:
        a = spec.build(t.id, seed)
        a.reset(t, mode="one-shot", seed=seed)
        turn = a.act({"mode": "one-shot", "step_index": 0, "rgb": None, "goal_rgb": None, "start_rgb": None,
                      "depth": None, "intrinsics": None, "pose": t.start_pose})
        out.append({"task_id": t.id, "response": turn.text})
    return out


def scored(tasks_file: str, lines: list[dict], workdir: Path, label: str) -> dict[str, tuple[float, float]]:
    """task id -> (score, s0) through the offline scorer."""
    from spatialact.scorers import score_file

    a = workdir / f"{label.replace(' ', '_')}.answers.jsonl"
    s = workdir / f"{label.replace(' ', '_')}.scores.jsonl"
    a.write_text("".join(json.dumps(x) + "\n" for x in lines))
    score_file(str(a), tasks_file, out=str(s))
    res = {}
    for line in s.read_text().splitlines():
        r = json.loads(line)
        res[r["task_id"]] = (float(r["score"]), float(r["s0"]))
    return res


def table(tasks, results: dict[str, dict]) -> tuple[str, dict]:
    """The Markdown tables and the figures behind them."""
    from spatialact.scorers import paired_difference, skill_summary

    by_track = {tr: [t.id for t in tasks if t.meta.get("track") == tr] for tr in TRACKS}
    figures: dict = {"skill": {}, "paired": {}}
    head = "| agent | " + " | ".join(f"{tr} (n={len(ids)})" for tr, ids in by_track.items()) + " |"
    rows = [head, "| --- |" + " --- |" * len(by_track)]
    for label, _, _ in AGENTS:
        cells = []
        for tr, ids in by_track.items():
            s = np.array([results[label][i][0] for i in ids])
            s0 = np.array([results[label][i][1] for i in ids])
            k = skill_summary(s, s0)
            figures["skill"].setdefault(label, {})[tr] = k
            cells.append(f"{k['skill']:+.3f} [{k['lo']:+.3f}, {k['hi']:+.3f}]")
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    prow = ["| pair (A − B) | " + " | ".join(by_track) + " |", "| --- |" + " --- |" * len(by_track)]
    for lo_n, hi_n in zip(NOISES, NOISES[1:]):
        a, b = f"noisy-oracle {lo_n:g}", f"noisy-oracle {hi_n:g}"
        cells = []
        for tr, ids in by_track.items():
            d = paired_difference(np.array([results[a][i][0] for i in ids]), np.array([results[b][i][0] for i in ids]),
                                  a_s0=np.array([results[a][i][1] for i in ids]),
                                  b_s0=np.array([results[b][i][1] for i in ids]))
            figures["paired"].setdefault(f"{a} − {b}", {})[tr] = d
            cells.append(f"{d['diff']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}], p={d['p']:.1e}")
        prow.append(f"| {a} − {b} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n\n" + "\n".join(prow) + "\n", figures


def checks(figures: dict) -> list[str]:
    """What the table must show: the noise levels strictly in order on every track with each neighbouring pair's
    interval excluding 0; stay exactly 0, the oracle exactly 1; random and constant within ±0.15 of 0."""
    bad = []
    for tr in TRACKS:
        k = [figures["skill"][f"noisy-oracle {n:g}"][tr]["skill"] for n in NOISES]
        if not all(x > y for x, y in zip(k, k[1:])):
            bad.append(f"{tr}: noisy-oracle skills not strictly falling: {k}")
        for pair, d in figures["paired"].items():
            if not d[tr]["lo"] > 0:
                bad.append(f"{tr}: {pair}: the paired interval does not exclude 0 ({d[tr]['lo']:+.3f})")
        if figures["skill"]["stay"][tr]["skill"] != 0.0:
            bad.append(f"{tr}: stay's skill is {figures['skill']['stay'][tr]['skill']!r}, not 0")
        if abs(figures["skill"]["oracle"][tr]["skill"] - 1.0) > 1e-12:
            bad.append(f"{tr}: the oracle's skill is {figures['skill']['oracle'][tr]['skill']!r}, not 1")
        for name in ("random", "constant"):
            if abs(figures["skill"][name][tr]["skill"]) > 0.15:
                bad.append(f"{tr}: {name}'s skill {figures['skill'][name][tr]['skill']:+.3f} is beyond ±0.15")
    return bad


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", default="l4-v1")
    p.add_argument("--doc", default=str(ROOT / "docs" / "benchmark.md"))
    p.add_argument("--no-doc", action="store_true", help="print only; leave docs/benchmark.md alone")
    a = p.parse_args(argv)
    from spatialact.taskgen import builtin_suite, suite_info
    from spatialact.tasks import save_tasks

    t0 = time.perf_counter()
    info = suite_info(a.suite)
    tasks = [t for t in builtin_suite(a.suite) if t.meta.get("track") in TRACKS]
    results = {}
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        tasks_file = work / "tasks.jsonl"
        save_tasks(tasks, tasks_file)
        for label, agent, options in AGENTS:
            results[label] = scored(str(tasks_file), answers(tasks, agent, options), work, label)
            print(f"{label}: {len(results[label])} answers scored", file=sys.stderr)
    text, figures = table(tasks, results)
    bad = checks(figures)
    note = (f"`{a.suite}` (SHA-256 `{info['sha256'][:16]}…`), {len(tasks)} tasks, one-shot, profile paper; "
            f"skill with its 95% bootstrap interval (1000 resamples, seed 0); pairs: paired bootstrap 95% interval "
            f"and Wilcoxon signed-rank p. Made by `scripts/l4_separation.py` in {time.perf_counter() - t0:.0f} s; "
            + ("every check held (noise levels strictly in order with every neighbouring interval above 0 on "
               "every track, stay exactly 0, the oracle exactly 1, random and constant within ±0.15)."
               if not bad else "checks that did not hold: " + "; ".join(bad) + "."))
    out = note + "\n\n" + text
    print(out)
    if not a.no_doc:
        doc = Path(a.doc)
        s = doc.read_text(encoding="utf-8")
        if START not in s or END not in s:
            print(f"{doc}: no {START} … {END} markers; the table was not written", file=sys.stderr)
            return 2
        doc.write_text(s.split(START)[0] + START + "\n" + out + END + s.split(END, 1)[1], encoding="utf-8")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
