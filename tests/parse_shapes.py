"""Hostile answer shapes of about n characters that stress the *content* level of the parser (many steps, many
keys, many numbers, deep nesting, long strings), beside tests/parse_corpus.py's HOSTILE (text level). Shared by
tests/action_space/test_parsing_repeats.py and benchmarks/bench_parse.py. Each maker gives a string of at most n characters."""

from __future__ import annotations

import json
import random


def _fill(unit, n: int, open_: str = "[", close: str = "]", sep: str = ",") -> str:
    """``open_`` + as many ``unit(i)`` as fit in n characters, separated by ``sep`` + ``close``."""
    parts, size, i = [], len(open_) + len(close), 0
    while True:
        u = unit(i)
        if size + len(u) + len(sep) > n:
            break
        parts.append(u)
        size += len(u) + len(sep)
        i += 1
    return open_ + sep.join(parts) + close


def _rng_vec(i: int) -> str:
    r = random.Random(i)
    return "[" + ",".join(f"{r.uniform(-0.05, 0.05):.4f}" for _ in range(6)) + "]"


SHAPES = {
    # (maker, parses to a usable answer)
    "one-name steps": (lambda n: _fill(lambda i: '["W"]', n), True),
    "one-name steps, two names": (lambda n: _fill(lambda i: '["W"]' if i % 2 else '["D"]', n), True),
    "names of one step": (lambda n: _fill(lambda i: '"W"', n), True),
    "counted steps, few distinct": (lambda n: _fill(
        lambda i: json.dumps({"actions": ["W", "D"], "step_nums": [i % 10 + 1, i % 7 + 1]}), n), True),
    "vector steps, all distinct": (lambda n: _fill(_rng_vec, n), True),
    "numbers": (lambda n: _fill(lambda i: "1", n), True),
    "step keys": (lambda n: _fill(lambda i: f'"step_{i + 1}": ["W"]', n, "{", "}"), True),
    "step keys, names as keys": (lambda n: _fill(lambda i: f'"step_{i + 1}": {{"Truck Left": {i % 9 + 1}}}', n,
                                                  "{", "}"), True),
    "unknown keys in a step": (lambda n: _fill(lambda i: f'"x{i}": 1', n, '{"actions": ["W"], "step_nums": [1], ',
                                               "}"), True),
    "deep nesting": (lambda n: "[" * (n // 2) + "]" * (n // 2), False),
    "deep nesting around a step": (lambda n: '{"a": ' * (n // 7) + '["W"]' + "}" * (n // 7), False),
    "long name": (lambda n: '{"actions": ["' + "W" * (n - 20) + '"]}', False),
    "long string step": (lambda n: '["' + "x" * (n - 6) + '"]', False),
    "unusable steps": (lambda n: _fill(lambda i: '["Jump"]', n), False),
}
