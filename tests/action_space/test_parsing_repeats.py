"""Long answers that repeat small steps: each distinct step value and each distinct (name,
step_num) pair is read once and replayed; the result is the same as reading every one, and the work is counted.

The reference is the parser with its memos switched off (every step and action read where it stands). Timings
are in benchmarks/bench_parse.py; here the work is counted: how many times a step is read, how many names are
looked up.
"""

from __future__ import annotations

import random

import pytest

from parse_shapes import SHAPES
from spatialact.action_space import ParseError, StepSizes, parse_response
from spatialact.action_space import parsing

SIZES = StepSizes.manipulation()


def _both(text, monkeypatch, strict=False, cap=10):
    """(result with the memos, result without: every step and action read where it stands)."""
    def run():
        try:
            return parse_response(text, strict, SIZES, cap)
        except ParseError as e:
            return ("ParseError", str(e))
    got = run()
    with monkeypatch.context() as m:
        m.setattr(parsing, "_frozen", lambda v: None)
        m.setattr(parsing, "_scalar", lambda x: None)
        ref = run()
    return got, ref


# Step values as models (and attackers) write them: names, counts, gestures, grippers, vectors, junk, repairs.
STEPS = ['["W"]', '["W", "D"]', '["Jump"]', '"W"', '[]', 'null', '""', '["Grab"]', '["Release", "S"]', '[1]',
         '{"actions": ["W"], "step_nums": [2]}', '{"actions": ["W"], "step_nums": [-2]}',
         '{"actions": ["W", "Pan Left"], "step_nums": [2.5, 40]}', '{"actions": ["Dolly In"], "step_nums": ["3"]}',
         '{"actions": ["W"], "step_nums": [1], "gripper": 0.7}', '{"actions": ["Grab"], "step_nums": [3]}',
         '{"actions": "W", "step_nums": 2}', '{"actions": ["W"], "step_nums": [1, 2]}', '{"Truck Left": 2}',
         '{"actions": ["W"], "step_nums": [1], "x": 1}', '{"actions": ["W"], "actions": ["S"]}',
         '[0.01, 0, 0, 0, 0, 0.2]', '[0.01, 0, 0, 0, 0, 9, 1]', '[0.0, -0.0, 0, 0, 0, 0]', '[-0.0, 0.0, 0, 0, 0, 0]',
         '[true, 0, 0, 0, 0, 0]', '[1, 0, 0, 0, 0, 0]', '["1", 0, 0, 0, 0, 0]', '{"vector": [0.1, 0, 0, 0, 0, 0]}',
         '{"actions": ["Stay"]}', '{"actions": []}', '{"gripper": 1}', '7', 'true', '{"actions": [["W"]]}',
         '{"actions": ["W", "W"], "step_nums": [1, 2]}', '{"actions": ["Truck Left (A)"], "step_nums": [1]}',
         '{"actions": ["W"], "step_nums": [99999999999999999999999]}', '{"actions": [null, 3, "W"]}']


@pytest.mark.parametrize("strict", [False, True])
def test_answers_repeating_steps_read_as_every_step_read_alone(monkeypatch, strict):
    rng = random.Random(3)
    for k in range(300):
        pool = rng.sample(STEPS, rng.randint(1, 4))
        steps = [rng.choice(pool) for _ in range(rng.choice([2, 5, 25, 60]))]
        if rng.random() < 0.5:
            text = "[" + ", ".join(steps) + "]"
        else:
            text = "{" + ", ".join(f'"step_{i + 1}": {s}' for i, s in enumerate(steps)) + "}"
        if rng.random() < 0.2:  # a large step between the repeats: read where it stands
            text = text.replace(steps[0], '["W", ' + ", ".join(['"S"'] * 40) + "]", 1)
        got, ref = _both(text, monkeypatch, strict, cap=rng.choice([3, 10]))
        assert got == ref, text


def test_one_step_repeating_its_names_reads_as_each_name_read_alone(monkeypatch):
    rng = random.Random(4)
    names = ['"W"', '"D"', '"Jump"', '"Grab"', '"Stay"', '3', 'null', '"Truck Left (A)"', '"Roll CW"']
    for k in range(200):
        acts = [rng.choice(names[:rng.randint(1, len(names))]) for _ in range(rng.choice([3, 30]))]
        nums = [rng.choice(["1", "2", "-1", "2.5", "null", '"x"', "true", "40"]) for _ in acts[:rng.randint(0, 30)]]
        text = f'{{"actions": [{", ".join(acts)}], "step_nums": [{", ".join(nums)}]}}'
        for strict in (False, True):
            got, ref = _both(text, monkeypatch, strict)
            assert got == ref, text


@pytest.mark.parametrize("name", list(SHAPES))
def test_hostile_shapes_read_as_without_memos(monkeypatch, name):
    make, ok = SHAPES[name]
    text = make(100_000)
    got, ref = _both(text, monkeypatch)
    assert got == ref and got.ok is ok


def _counting(monkeypatch):
    calls = {"step": 0, "lookup": 0}
    any_step, lookup = parsing._any_step, parsing.lookup_primitive

    def count_step(*a):
        calls["step"] += 1
        return any_step(*a)

    def count_lookup(*a):
        calls["lookup"] += 1
        return lookup(*a)
    monkeypatch.setattr(parsing, "_any_step", count_step)
    monkeypatch.setattr(parsing, "lookup_primitive", count_lookup)
    return calls


def test_the_worst_answer_reads_its_step_once(monkeypatch):
    """[["W"], ["W"], ...] of 1 MB: 166,666 steps, each with one repair; the step is read once and its name looked up
    once, the notes are the first 20 and a count, the last repair names the last step."""
    text = SHAPES["one-name steps"][0](1_000_000)
    calls = _counting(monkeypatch)
    res = parse_response(text)
    assert res.ok and len(res.sequence) == 166_666 and res.n_repairs == 166_666
    assert calls == {"step": 1, "lookup": 1}
    assert res.repairs[19] == "steps[19].actions[0]: missing step_num becomes 1"
    assert res.repairs[20] == "$: 166,646 more repairs not listed (166,666 in all)"
    assert len({id(s) for s in res.sequence.steps}) == 1  # one immutable Step, shared


def test_unusable_repeats_still_name_the_last_repair(monkeypatch):
    text = SHAPES["unusable steps"][0](100_000)
    n = text.count('["Jump"]')
    res = parse_response(text)
    assert not res.ok and res.error == f"no usable step (steps[{n - 1}].actions[0]: unknown action 'Jump' dropped)"


def test_names_of_one_step_are_looked_up_once_each(monkeypatch):
    text = SHAPES["names of one step"][0](1_000_000)
    calls = _counting(monkeypatch)
    res = parse_response(text)
    assert res.ok and res.sequence[0].counts[4] == 10 and res.n_repairs == 250_000
    assert calls["lookup"] == 1 and calls["step"] == 0  # a list of names is one flat step, read by _count_step


def test_large_objects_normalise_their_keys_once(monkeypatch):
    text = SHAPES["unknown keys in a step"][0](200_000)
    n = text.count('"x')
    norm = parsing._norm_key
    calls = []
    monkeypatch.setattr(parsing, "_norm_key", lambda k: calls.append(1) or norm(k))
    res = parse_response(text)
    assert res.ok and res.n_repairs == n
    assert len(calls) <= n + 2 + 8  # once per key (plus a small object's few), not once per key and per field
