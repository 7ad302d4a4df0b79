"""Answers parsed per second by ``parse_response`` (lenient) against ``json.loads`` on the same strings.

One run, side by side: the corpus answers (tests/parse_corpus.py) plus clean answers in the three formats,
each timed over several repeats (best of 5), and the ratio printed. json.loads sees only the JSON part of each
answer (it cannot read prose, fences or think blocks); parse_response sees the whole text, so the ratio is the
cost of extraction, repairs and building the ActionSequence. Not part of the test suite.

Usage: python benchmarks/bench_parse.py
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from parse_corpus import CORPUS  # noqa: E402

from spatialact.action_space import ActionSequence, StepSizes, extract_json_text, parse_response  # noqa: E402


def clean_answers(n: int, seed: int = 0) -> list[str]:
    """n model-like answers: random sequences of 1-4 steps written in the flat, stepped and vector formats."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = 1 if i % 3 == 0 else rng.randint(1, 4)
        signed = [[rng.randint(-5, 5) if rng.random() < 0.4 else 0 for _ in range(6)] for _ in range(k)]
        seq = ActionSequence.from_signed_counts(signed, StepSizes.manipulation(),
                                                gripper=[rng.choice([-1, 0, 1]) for _ in range(k)])
        fmt = ["flat", "stepped", "vector"][i % 3]
        body = seq.to_text(fmt, names=rng.choice(["name", "symbol"]))
        out.append(f"Based on the two views, here is the plan.\n```json\n{body}\n```" if i % 2 else body)
    return out


def rate(fn, items, repeats: int = 5) -> float:
    """Items per second, best of ``repeats`` passes."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for x in items:
            fn(x)
        best = min(best, time.perf_counter() - t0)
    return len(items) / best


def main() -> None:
    answers = [c["text"] for c in CORPUS] + clean_answers(600)
    # json.loads gets the JSON each answer holds (what a caller would pass it after extraction); answers with
    # no loadable JSON are left out of both sides so the two loops parse the same set.
    pairs = []
    for a in answers:
        try:
            js, _ = extract_json_text(a)
            json.loads(js)
        except ValueError:
            continue
        pairs.append((a, js))
    texts = [a for a, _ in pairs]
    jsons = [j for _, j in pairs]

    r_parse = rate(parse_response, texts)
    r_json = rate(json.loads, jsons)
    r_extract = rate(extract_json_text, texts)
    print(f"answers: {len(texts)} ({len(CORPUS)} corpus answers offered, {len(answers) - len(CORPUS)} generated; "
          f"those json.loads cannot read left out)")
    print(f"{'json.loads (JSON part only)':34s} {r_json:12,.0f} answers/s")
    print(f"{'extract_json_text (text level)':34s} {r_extract:12,.0f} answers/s")
    print(f"{'parse_response (lenient, full)':34s} {r_parse:12,.0f} answers/s")
    print(f"ratio json.loads / parse_response: {r_json / r_parse:.1f}x  "
          f"(parse_response takes {1e6 / r_parse:.1f} µs per answer)")


if __name__ == "__main__":
    main()
