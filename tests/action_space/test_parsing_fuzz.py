"""Fuzzing the parser: thousands of random and mutated answers through both modes.

Strict mode may only raise ParseError; lenient mode never raises and always returns a ParseResult whose
sequence is an ActionSequence (empty exactly when ok is False) with finite rigid motions. On every string, the fast
path (parse_response_fast) either declines or returns exactly the full path's result (parse_response_reference),
and parse_response equals the full path in both modes.
"""

import json
import math
import os
import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parse_corpus import CORPUS
from spatialact.action_space import ActionSequence, ParseError, ParseResult, StepSizes, parse_object, parse_response
from spatialact.action_space.parsing import parse_response_fast, parse_response_reference

SIZES = [StepSizes.navigation(), StepSizes.manipulation()]
# Examples per hypothesis test; raise it for a long hunt: SPATIALACT_FUZZ_N=5000 pytest tests/action_space/test_parsing_fuzz.py
N = int(os.environ.get("SPATIALACT_FUZZ_N", "200"))
ROUNDS = int(os.environ.get("SPATIALACT_FUZZ_ROUNDS", "25"))


def _strict(parse, text, sizes, cap):
    try:
        return parse(text, strict=True, sizes=sizes, cap=cap)
    except ParseError as e:
        return ("ParseError", str(e))


def check_fast_path(text, sizes=None, cap=10):
    """The fast path declines or agrees with the full path, field by field, in both modes; returns the fast
    result (None when it declined)."""
    ref = parse_response_reference(text, sizes=sizes, cap=cap)
    fast = parse_response_fast(text, sizes, cap)
    assert fast is None or fast == ref, (text, fast, ref)
    assert parse_response(text, sizes=sizes, cap=cap) == ref
    assert _strict(parse_response, text, sizes, cap) == _strict(parse_response_reference, text, sizes, cap)
    if fast is not None:
        assert fast.ok and fast.repairs == () and fast.json_text == ref.json_text
    return fast


def check_both_modes(text, sizes=None, cap=10):
    """The fuzz contract; returns the lenient result."""
    check_fast_path(text, sizes, cap)
    res = parse_response(text, sizes=sizes, cap=cap)  # any exception here fails the test
    assert isinstance(res, ParseResult)
    assert isinstance(res.sequence, ActionSequence)
    assert res.ok == (len(res.sequence) > 0)
    assert isinstance(res.repairs, tuple) and all(isinstance(r, str) for r in res.repairs)
    if res.ok:
        assert res.error is None and res.format in ("flat", "stepped", "vector")
        D = res.sequence.to_deltas()
        assert np.all(np.isfinite(D))
        for step in res.sequence:
            if step.counts is not None:
                assert all(0 <= n <= cap for n in step.counts)
            else:
                lim = np.array([sizes.translation] * 3 + [sizes.rotation] * 3) * cap if sizes else None
                if lim is not None:
                    assert np.all(np.abs(step.motion) <= lim + 1e-12)
    else:
        assert isinstance(res.error, str) and res.error
        # parse_response turns an unexpected exception into "unreadable answer (TypeError: ...)" so that a run
        # never crashes; here that would be a bug hidden, so it must never happen
        assert "unreadable answer (" not in res.error, res.error
    json.dumps(res.to_dict())  # always recordable
    try:
        strict = parse_response(text, strict=True, sizes=sizes, cap=cap)
    except ParseError as e:
        assert str(e) and "unreadable answer (" not in str(e), str(e)
    else:
        # strictly valid means nothing needed repairing, and it agrees with lenient mode
        assert strict.repairs == () and strict.ok
        assert strict.sequence == res.sequence and res.repairs == ()
    return res


# ----- hypothesis: arbitrary text, and JSON-shaped answers built from the answer vocabulary ---------------
@settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_arbitrary_text(text):
    check_both_modes(text)


NAMES = ["W", "S", "A", "D", "shift", "space", "Q", "E", "→", "←", "↑", "↓", "↺", "↻", "STOP", "Dolly In",
         "truck_left", "Pan Right", "turn left", "look up", "clockwise", "push", "pull", "grab", "release",
         "Truck Left (A)", "fly", "", "Stay", "none", "Zoom"]
KEYS = ["actions", "action", "step_nums", "step_num", "counts", "gripper", "step_1", "step_2", "Step 3", "step_10",
        "steps", "vector", "delta", "answer", "plan", "reasoning", "W", "Pan Left"]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-30, 30), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(NAMES), st.sampled_from(["3", "-2", "2.5", "three", "1e9", "inf", "nan", "open", "closed"]),
    st.text(max_size=8))
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=8),
                               st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=6)), children,
                                               max_size=6)),
    max_leaves=40)


@settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.sampled_from(SIZES), st.integers(1, 12))
def test_json_shaped_answers(value, sizes, cap):
    text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    check_both_modes(text, sizes, cap)
    # also the loaded value directly: parse_object has the same contract
    try:
        parse_object(value, strict=True, sizes=sizes, cap=cap)
    except ParseError:
        pass
    res = parse_object(value, sizes=sizes, cap=cap)
    assert isinstance(res.sequence, ActionSequence)


step_dicts = st.fixed_dictionaries(
    {"actions": st.lists(st.sampled_from(NAMES), max_size=5)},
    optional={"step_nums": st.lists(st.one_of(st.integers(-20, 20), st.floats(-20, 20), st.sampled_from(["2", "x"])),
                                    max_size=6),
              "gripper": st.one_of(st.sampled_from([0, 1, 0.7, "closed", "open", None]), st.floats())})


@settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step_dicts, min_size=1, max_size=5), st.sampled_from(["json", "python", "fence", "think"]))
def test_stepped_answers_in_wrappers(steps, wrap):
    obj = {f"step_{k + 1}": s for k, s in enumerate(steps)}
    body = json.dumps(obj, ensure_ascii=False) if wrap != "python" else repr(obj)
    text = {"json": body, "python": body, "fence": f"Here you go:\n```json\n{body}\n```\nDone.",
            "think": f"<think>{json.dumps(steps[0])}</think>{body}"}[wrap]
    res = check_both_modes(text, SIZES[0])
    assert len(res.sequence) in (0, len(steps))  # steps are never lost or invented, only kept as Stay


# ----- near-well-formed answers: the fast path's territory and its border ---------------------------------
# A clean answer in one of the shapes models are asked for, then at most one flaw (half of them have none): the
# fast path must take the clean ones and decline the flawed ones, and agree with the full path either way.
GOOD_NAMES = ["W", "S", "A", "D", "Dolly In", "Truck Left", "pan_right", "→", "space", "shift", "STOP", "Stay",
              "push", "pull", "Ｗ", "dolly  in"]
GOOD_GRIPPERS = [0, 1, 0.0, 1.0, True, False, None, "open", "Closed "]


@st.composite
def count_step(draw, cap):
    k = draw(st.integers(0, 4))
    names = draw(st.lists(st.sampled_from(GOOD_NAMES), min_size=k, max_size=k))
    nums = [draw(st.integers(0, max(0, cap // 2))) for _ in names]
    d = {"actions": names, "step_nums": nums}
    if draw(st.booleans()):
        d["gripper"] = draw(st.sampled_from(GOOD_GRIPPERS))
    return d


@st.composite
def vector_step(draw, lim):
    n = draw(st.sampled_from([6, 7]))
    v = [draw(st.floats(-lim, lim)) for _ in range(6)]
    return v + [draw(st.sampled_from([0, 1, 0.0, 1.0, None]))] if n == 7 else v


FLAWS = ["none"] * 12 + ["count", "name", "gripper", "gesture", "component", "length", "key", "extra key",
                         "duplicate", "trailing comma", "python", "think", "unclosed fence", "two objects"]


@st.composite
def near_well_formed(draw):
    cap = draw(st.sampled_from([10, 10, 10, 3, 0]))
    sizes = draw(st.sampled_from(SIZES))
    lim = cap * sizes.translation
    shape = draw(st.sampled_from(["flat", "stepped", "stepped", "list", "vector", "stepped vector"]))
    if shape == "flat":
        obj = draw(count_step(cap))
        steps = [obj]
    elif shape == "vector":
        obj = draw(vector_step(lim))
        steps = [obj]
    else:
        steps = draw(st.lists(st.one_of(count_step(cap), vector_step(lim), st.sampled_from([None, [], ""]))
                              if shape != "stepped vector" else vector_step(lim), min_size=1, max_size=4))
        obj = {f"step_{k + 1}": s for k, s in enumerate(steps)} if shape != "list" else steps
    flaw = draw(st.sampled_from(FLAWS))
    target = draw(st.sampled_from(steps))
    if flaw == "count" and isinstance(target, dict) and target["step_nums"]:
        target["step_nums"][0] = draw(st.sampled_from([-1, 2.0, 1.5, True, None, "2", cap + 1, 10 ** 30, 10 ** 1200]))
    elif flaw == "name" and isinstance(target, dict) and target["actions"]:
        target["actions"][0] = draw(st.sampled_from(["Zoom", "", "Truck Left (A)", 3, None]))
    elif flaw == "gripper" and isinstance(target, dict):
        target["gripper"] = draw(st.sampled_from([0.5, -1, "x", 2, float("nan"), [1]]))
    elif flaw == "gesture" and isinstance(target, dict):
        target["actions"].append(draw(st.sampled_from(["grab", "release"])))
        target["step_nums"].append(draw(st.sampled_from([1, 1.0, 2, 0])))
    elif flaw == "component" and isinstance(target, list) and target:
        target[0] = draw(st.sampled_from([lim * 2 + 1, 1e18, 10 ** 20, float("inf"), float("nan"), "0.1", True]))
    elif flaw == "length" and isinstance(target, list) and target:
        target.append(0.0) if len(target) == 7 else target.pop()
    elif flaw == "key" and isinstance(obj, dict) and "step_1" in obj:
        obj[draw(st.sampled_from(["Step 9", "step_01", "step_x", "steps"]))] = obj.pop("step_1")
    elif flaw == "extra key":
        (target if isinstance(target, dict) else obj if isinstance(obj, dict) else {})["reasoning"] = "x"
    body = json.dumps(obj, ensure_ascii=draw(st.booleans()), allow_nan=True)
    if flaw == "duplicate" and body.startswith("{") and len(body) > 2:
        body = body[:-1] + (', "actions": []}' if shape == "flat" else ', "step_1": null}')
    elif flaw == "trailing comma":
        body = body[:-1] + ("," if len(body) > 2 else "") + body[-1]
    elif flaw == "python":
        body = repr(obj)
    elif flaw == "think":
        body = "<think>a draft</think>" + body
    elif flaw == "two objects":
        body = '{"actions": ["S"], "step_nums": [1]} or rather ' + body
    wrap = draw(st.sampled_from(["bare", "bare", "fence", "json fence", "prose", "two fences"]))
    text = {"bare": body, "fence": f"```\n{body}\n```", "json fence": f"Plan:\n```json\n{body}\n```\nDone.",
            "prose": f"The goal is to the left. {body} That is all.",
            "two fences": f"```json\n{body}\n```\n```python\nprint()\n```"}[wrap]
    if flaw == "unclosed fence":
        text = f"```json\n{body}"
    return text, sizes, cap


@settings(max_examples=max(N, 300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near_well_formed())
def test_fast_path_equals_the_full_path(case):
    check_both_modes(*case)


def test_fast_path_takes_and_declines_near_well_formed_answers():
    # the property above is vacuous unless both outcomes happen often: count them on a seeded sample
    taken = declined = 0
    for k in range(400):
        rng = random.Random(k)
        steps = [{"actions": rng.sample(["W", "S", "A", "→", "space"], rng.randint(1, 3))} for _ in range(3)]
        for s in steps:
            s["step_nums"] = [rng.randint(0, 5) for _ in s["actions"]]
        if rng.random() < 0.5:  # one flaw somewhere: the full path must repair it, the fast path decline
            s = rng.choice(steps)
            s["step_nums"][0] = rng.choice([1.5, -1, 11, "2", None, True])
        text = json.dumps({f"step_{i + 1}": s for i, s in enumerate(steps)})
        if rng.random() < 0.5:
            text = f"Here is the plan:\n```json\n{text}\n```"
        fast = check_fast_path(text, SIZES[0])
        taken += fast is not None
        declined += fast is None
    assert taken > 60 and declined > 60, (taken, declined)


# ----- seeded mutation loop over the corpus -------------------------------------------------------------
ALPHABET = list('{}[]()",:\'` \n\t0123456789-+.eE_') + ["step_", "actions", "step_nums", "<think>", "</think>",
                                                        "```json\n", "```", "NaN", "Infinity", "null", "True",
                                                        "→", "\x00", "\ud800", "1e400", "9" * 50, "[" * 40]


def mutate(text, rng):
    s = text
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(8)
        i = rng.randint(0, len(s))
        j = min(len(s), i + rng.randint(0, 12))
        if op == 0:  # delete a slice
            s = s[:i] + s[j:]
        elif op == 1:  # insert a token
            s = s[:i] + rng.choice(ALPHABET) + s[i:]
        elif op == 2:  # duplicate a slice
            s = s[:j] + s[i:j] + s[j:]
        elif op == 3:  # truncate
            s = s[:i]
        elif op == 4:  # replace a number with an odd one
            s = s.replace(rng.choice("0123456789"), rng.choice(["-7", "2.5", "1e308", "NaN", '"4"', "99999"]), 1)
        elif op == 5:  # splice in another corpus answer
            other = rng.choice(CORPUS)["text"]
            k = rng.randint(0, len(other))
            s = s[:i] + other[k:k + rng.randint(1, 80)] + s[j:]
        elif op == 6:  # swap case of a slice
            s = s[:i] + s[i:j].swapcase() + s[j:]
        else:  # wrap
            s = rng.choice(["```json\n{}\n```", "<think>x</think>{}", "Answer: {} Thanks.", "{}}}]]", "[[{}"]).format(s)
    return s


def test_seeded_mutation_loop_over_corpus():
    rng = random.Random(20261123)
    n_ok = n = 0
    for _ in range(ROUNDS):
        for entry in CORPUS:
            text = mutate(entry["text"], rng)
            res = check_both_modes(text, StepSizes.for_kind(entry["kind"]))
            n += 1
            n_ok += res.ok
    assert n >= 1000
    # the mutations are mild enough that many answers survive: the loop exercises repairs, not only failures
    assert 0.2 < n_ok / n < 0.95


def test_mutation_loop_is_deterministic():
    a = [mutate(e["text"], random.Random(7)) for e in CORPUS]
    b = [mutate(e["text"], random.Random(7)) for e in CORPUS]
    assert a == b
    ra = [parse_response(t).to_dict() for t in a]
    rb = [parse_response(t).to_dict() for t in b]
    assert ra == rb


def test_pathological_sizes_stay_fast_and_safe():
    import time

    texts = ["[" * 100_000, "{" * 100_000, "<think>" * 20_000, "```" * 20_000, ", " * 100_000 + "]",
             '{"actions": ["W"], "step_nums": [1]}' * 2_000, "[1] " * 20_000, "x" * 500_000,
             '{"step_1": ' * 3000 + "{}" + "}" * 3000]
    t0 = time.perf_counter()
    for t in texts:
        check_both_modes(t)
    # generous: this guards against quadratic blow-ups (minutes), not a speed target
    assert time.perf_counter() - t0 < 20
    assert math.isfinite(t0)
