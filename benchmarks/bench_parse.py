"""Answer parsing speed, side by side in one run: json.loads, the fast path, the full (reference) path, and the
worst case on 1 MB hostile answers.

1. Well-formed answers (the common case): 600 answers generated in the flat, stepped and vector formats, half of
   them in a ```json fence with a sentence before and after, names or symbols. Timed with
   ``json.loads`` on the JSON part only (it cannot read prose or fences: the floor), ``parse_response`` (takes the
   fast path on every one of them; checked), and ``parse_response_reference`` (the full lenient path alone, which
   parse_response used for every answer before it had a fast path). Best of 5 passes. "fresh" passes give every pass new
   answers (new steps: the fast path's memo of Step objects helps only with exact repeats); "repeated" passes
   parse the same 600 again (offline scoring sees the same ground-truth-like steps many times).
2. The corpus (tests/parse_corpus.py: 56 answers as models write them, most of them needing repairs or
   fallbacks): parse_response, whichever path each answer takes.
3. Hostile answers of 1 MB (tests/parse_corpus.py HOSTILE: unclosed fences followed by spaces or letters, think
   tags, braces, quotes, digits, duplicate keys, ...): the time of one parse_response each, and the ratio of the
   time at 1 MB to the time at 125 kB (linear: about 8).
4. Hostile shapes of 1 MB at the content level (tests/parse_shapes.py: ``[["W"],["W"],...]``, the worst known,
   names of one step, step keys, unknown keys, distinct vectors, numbers, deep nesting, long strings, ...): one
   parse_response each (JSON decoding, repairs and the ActionSequence included), best of 3, wall and CPU time.
   ``--before SRC`` runs this section with another source tree first, in the same run.

Not part of the test suite. Usage: python benchmarks/bench_parse.py [--shapes-only] [--before SRC]
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from parse_corpus import CORPUS, HOSTILE  # noqa: E402
from parse_shapes import SHAPES  # noqa: E402

from spatialact.action_space import ActionSequence, StepSizes, extract_json_text, parse_response  # noqa: E402
from spatialact.action_space.parsing import parse_response_fast, parse_response_reference  # noqa: E402

SIZES = StepSizes.manipulation()


sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import record  # noqa: E402

def clean_answers(n: int, seed: int = 0) -> list[str]:
    """n model-like answers: random sequences of 1-4 steps written in the flat, stepped and vector formats."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = 1 if i % 3 == 0 else rng.randint(1, 4)
        signed = [[rng.randint(-5, 5) if rng.random() < 0.4 else 0 for _ in range(6)] for _ in range(k)]
        seq = ActionSequence.from_signed_counts(signed, SIZES, gripper=[rng.choice([-1, 0, 1]) for _ in range(k)])
        fmt = ["flat", "stepped", "vector"][i % 3]
        body = seq.to_text(fmt, names=rng.choice(["name", "symbol"]))
        out.append(f"Based on the two views, here is the plan.\n```json\n{body}\n```\nThis reaches the goal."
                   if i % 2 else body)
    return out


def rate(fn, batches: list[list], repeats: int = 5) -> float:
    """Items per second, best of ``repeats`` passes; pass r parses ``batches[r % len(batches)]``."""
    best = float("inf")
    for r in range(repeats):
        items = batches[r % len(batches)]
        t0 = time.perf_counter()
        for x in items:
            fn(x)
        best = min(best, (time.perf_counter() - t0) / len(items))
    return 1 / best


def line(label: str, r: float, ref: float | None = None) -> str:
    extra = f"  {r / ref:5.1f}x the full path" if ref else ""
    return f"  {label:44s} {r:10,.0f} answers/s  {1e6 / r:7.1f} µs{extra}"


def main() -> None:
    # ----- 1. well-formed answers ------------------------------------------------------------------------
    # Fresh batches are timed before anything else parses them (the check below fills the memo).
    fresh = [clean_answers(600, seed) for seed in range(100, 105)]  # one batch per pass: nothing repeats
    by_format = {fmt: [[a for i, a in enumerate(clean_answers(600, seed)) if i % 3 == k] for seed in range(k * 10 + 200,
                                                                                                        k * 10 + 205)]
                 for k, fmt in enumerate(("flat", "stepped", "vector"))}
    same = [clean_answers(600, 0)]
    jsons = {id(b): [extract_json_text(a)[0] for a in b] for b in fresh + same}

    def fast(a):
        return parse_response(a, sizes=SIZES)

    def full(a):
        return parse_response_reference(a, sizes=SIZES)

    rates = {}
    for label, batches in (("fresh", fresh), ("repeated", same)):
        rates[label] = (rate(json.loads, [jsons[id(b)] for b in batches]), rate(fast, batches), rate(full, batches))
    fmt_rates = {fmt: (rate(fast, b), rate(full, b)) for fmt, b in by_format.items()}
    for batch in fresh + same + [x for b in by_format.values() for x in b]:
        assert all(parse_response_fast(a, SIZES) is not None for a in batch), "a clean answer missed the fast path"
        assert all(parse_response(a, sizes=SIZES) == parse_response_reference(a, sizes=SIZES) for a in batch)

    print("1. well-formed answers (600 per pass, 1/3 each flat, stepped, vector; half fenced in prose; best of 5)")
    for label, (r_json, r_fast, r_full) in rates.items():
        print(f" {label} answers:")
        print(line("json.loads (the JSON part only)", r_json, r_full))
        print(line("parse_response (fast path)", r_fast, r_full))
        print(line("parse_response_reference (full path)", r_full, r_full))
        print(f"  {'fast path / json.loads':44s} {r_json / r_fast:10.1f}x slower")
        if label == "fresh":
            record("bench_parse.py", "parse_response on well-formed answers (fast path)", r_fast, "answers/s",
                   anchor="the full lenient path", anchor_value=r_full)
    print("  by format (fresh): " + ", ".join(f"{fmt} {1e6 / f:.1f} µs (full {1e6 / r:.1f})"
                                             for fmt, (f, r) in fmt_rates.items()))

    # ----- 2. the corpus ---------------------------------------------------------------------------------
    corpus = [[c["text"] for c in CORPUS]]
    n_fast = sum(parse_response_fast(t) is not None for t in corpus[0])
    print(f"2. the corpus ({len(CORPUS)} answers, {n_fast} on the fast path, the rest need repairs or fallbacks)")
    print(line("parse_response", rate(parse_response, corpus, 20)))
    print(line("parse_response_reference", rate(parse_response_reference, corpus, 20)))

    # ----- 3. hostile answers ----------------------------------------------------------------------------
    print("3. hostile answers: one parse_response at 1 MB, and the time ratio 1 MB / 125 kB (linear: about 8)")
    total = 0.0
    for name, (make, ok) in HOSTILE.items():
        times = []
        for n in (125_000, 1_000_000):
            text = make(n)
            best = float("inf")
            for _ in range(2):
                t0 = time.perf_counter()
                res = parse_response(text)
                best = min(best, time.perf_counter() - t0)
            assert res.ok is ok, name
            times.append(best)
        total += times[1]
        print(f"  {name:42s} {times[1] * 1e3:8.1f} ms   ratio {times[1] / max(times[0], 1e-6):5.1f}")
    print(f"  all {len(HOSTILE)} families at 1 MB: {total:.2f} s")


def shapes(label: str = "") -> float:
    """Section 4: the content-level shapes (tests/parse_shapes.py) at 1 MB: one parse_response each, best of 3,
    wall time and this process's CPU time (the CPU time is the steadier figure on a shared machine). Returns the
    worst wall time."""
    print(f"4. hostile shapes at 1 MB (many steps, keys, numbers, names; deep nesting; long strings){label}: one "
          "parse_response each, best of 3")
    worst = 0.0
    for name, (make, ok) in SHAPES.items():
        text = make(1_000_000)
        wall = cpu = float("inf")
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            res = parse_response(text)
            wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
        assert res.ok is ok, name
        worst = max(worst, wall)
        print(f"  {name:42s} {wall * 1e3:8.1f} ms  (CPU {cpu * 1e3:6.1f} ms)  {len(res.sequence):7,} steps, "
              f"{res.n_repairs:7,} repairs")
    print(f"  the worst: {worst * 1e3:.0f} ms")
    if not label:
        record("bench_parse.py", "the slowest 1 MB hostile shape, one parse_response, wall time", worst, "s",
               higher_is_better=False, aim="< 0.5 s")
    return worst


if __name__ == "__main__":
    import argparse
    import os
    import subprocess

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes-only", action="store_true", help="only section 4")
    ap.add_argument("--before", metavar="SRC", help="also section 4 with the spatialact of another source tree "
                                                    "(its src/ folder), in the same run")
    ap.add_argument("--label", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.shapes_only and not a.before:
        shapes(a.label)
        sys.exit(0)
    if not a.shapes_only:
        main()
    if a.before:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [a.before, os.environ.get("PYTHONPATH")]))}
        subprocess.run([sys.executable, __file__, "--shapes-only", "--label", " (before)"], env=env, check=True)
    shapes(" (this tree)" if a.before else "")
