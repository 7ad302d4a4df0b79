"""The parser's worst case: every answer parses in time linear in its length, and integers of hundreds
or thousands of digits are clamped like other out-of-range counts instead of sinking the whole answer.

Linearity is shown on the same run: each hostile family is parsed at n and at 8n characters (best of 3), and the
time ratio must stay far below the 64 a quadratic parser gives (before the fix, an unclosed fence followed by
1000 spaces took 2.2 s and by 2000 spaces 16 s: cubic). Then every family is parsed at 1 MB. The families are in
tests/parse_corpus.py (HOSTILE), shared with benchmarks/bench_parse.py.
"""

import random
import re
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _linear_time import assert_parses_in_linear_time
from parse_corpus import HOSTILE as FAMILIES
from spatialact.action_space import ParseError, Primitive, StepSizes, parse_object, parse_response
from spatialact.action_space.parsing import HUGE_DIGITS, find_fences, open_fence_body

W2 = '{"actions": ["W"], "step_nums": [2]}'


@pytest.mark.parametrize("name", list(FAMILIES))
def test_time_grows_linearly(name):
    make, ok = FAMILIES[name]
    assert_parses_in_linear_time(name, make, ok)


def test_one_megabyte_hostile_answers_finish():
    total = 0.0
    for name, (make, ok) in FAMILIES.items():
        text = make(1_000_000)
        assert len(text) >= 900_000
        t0 = time.perf_counter()
        res = parse_response(text)
        dt = time.perf_counter() - t0
        total += dt
        assert res.ok is ok, (name, res.error)
        assert dt < 10, (name, dt)  # about 0.2 s at most on a 2-core machine; minutes before the fix
    assert total < 60


def test_reproducers_give_the_right_answer():
    # an unclosed fence with 5000 spaces after its header and the answer on the next line: the answer is read
    res = parse_response("```json" + " " * 5000 + "\n" + W2)
    assert res.ok and res.sequence[0].as_actions() == [(Primitive.DOLLY_IN, 2)] and res.repairs == ()
    # the answer after thousands of orphan closing tags
    res = parse_response("</think>" * 5000 + W2)
    assert res.ok and res.sequence[0].as_actions() == [(Primitive.DOLLY_IN, 2)]
    # thousands of unclosed openers: all of it is truncated reasoning
    assert parse_response("<think>" * 5000 + W2).error == "$: no JSON object found in the answer"
    # a long name made of brackets is still one primitive, read with a note that quotes at most 60 characters
    res = parse_response('{"actions": ["' + "Truck Left (" * 5000 + '"], "step_nums": [1]}')
    assert res.ok and res.sequence[0].as_actions() == [(Primitive.TRUCK_LEFT, 1)]
    assert len(res.repairs) == 1 and len(res.repairs[0]) < 120
    # a step key of 5000 digits sorts after step_2 and is not copied whole into the where-path
    res = parse_response('{"step_' + "1" * 5000 + '": ["S"], "step_2": {"actions": ["W"], "step_nums": [1]}}')
    assert [s.as_actions() for s in res.sequence] == [[(Primitive.DOLLY_IN, 1)], [(Primitive.DOLLY_OUT, 1)]]
    assert res.repairs == ("step_" + "1" * 32 + "....actions[0]: missing step_num becomes 1",)
    # 20 000 distinct duplicated keys: each reported once, in order
    text = "{" + ",".join(f'"k{i}": 1, "k{i}": 2' for i in range(20_000)) + ', "actions": ["W"], "step_nums": [1]}'
    res = parse_response(text)
    assert res.ok and res.n_repairs == 40_000  # 20 000 "given more than once" + 20 000 "unknown key"
    # (each duplicate once: a flat answer's duplicates were reported twice, by the answer and by its step); the
    # first 20 notes are kept, then a count
    assert res.repairs[:20] == tuple(f"k{i}: key given more than once; the last value is used" for i in range(20))
    assert res.repairs[20:] == ("$: 39,980 more repairs not listed (40,000 in all)",)


# ----- the fence scanner has exactly the semantics of the regexes it replaced ------------------------------
OLD_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)```", re.DOTALL)
OLD_OPEN_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n(.*)\Z", re.DOTALL)


def _old_open(text):
    m = OLD_OPEN_FENCE.search(text)
    return m.group(2) if m else None


def test_fence_scanner_matches_the_old_regexes_on_short_strings():
    # the old regexes are the oracle on strings short enough for their backtracking
    rng = random.Random(5)
    alphabet = ["`", "``", "```", " ", "\t", "\r", "\n", "j", "s", "o", "n", "+", "{", "}", "x"]
    n = 0
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        assert find_fences(text) == OLD_FENCE.findall(text), repr(text)
        assert open_fence_body(text) == _old_open(text), repr(text)
        n += bool(OLD_FENCE.findall(text)) + (_old_open(text) is not None)
    assert n > 3000  # the strings do contain fences, closed and open


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("` \t\r\nJsonx{}1")), max_size=30))
def test_fence_scanner_matches_the_old_regexes_property(text):
    assert find_fences(text) == OLD_FENCE.findall(text)
    assert open_fence_body(text) == _old_open(text)


# ----- big integers ---------------------------------------------------------------------------------------
def _flat(count, quote='"'):
    return "{q}actions{q}: [{q}W{q}], {q}step_nums{q}: [{c}]".replace("{q}", quote).replace("{c}", count).join("{}")


@pytest.mark.parametrize("count,note", [
    ("9" * 400, "answer: Dolly In × 1e+400 clamped to the cap 10"),
    ("1" + "0" * 399, "answer: Dolly In × 1e+399 clamped to the cap 10"),
    ("123" + "0" * 997, "answer: Dolly In × 1.23e+999 clamped to the cap 10"),
    ("9" * (HUGE_DIGITS + 1), "answer.actions[0]: infinite step_num inf read as 10"),
    ("9" * 5000, "answer.actions[0]: infinite step_num inf read as 10"),
    ("9" * 100_000, "answer.actions[0]: infinite step_num inf read as 10"),
    ("1e400", "answer.actions[0]: infinite step_num inf read as 10"),
    ('"1e400"', "answer.actions[0]: infinite step_num '1e400' read as 10"),
    ("1e300", "answer: Dolly In × 1e+300 clamped to the cap 10"),
])
def test_huge_counts_are_clamped_with_a_note(count, note):
    for quote in ('"', "'"):  # JSON, and Python quoting (read by ast, whose own limit is 4300 digits)
        res = parse_response(_flat(count, quote))
        assert res.ok, (quote, res.error)
        assert res.sequence[0].as_actions() == [(Primitive.DOLLY_IN, 10)]
        assert res.repairs == (note,), (quote, res.repairs)
        with pytest.raises(ParseError, match=re.escape(note)):
            parse_response(_flat(count, quote), strict=True)


def test_huge_negative_count_is_the_opposite_primitive_clamped():
    res = parse_response(_flat("-" + "9" * 400))
    assert res.sequence[0].as_actions() == [(Primitive.DOLLY_OUT, 10)]
    assert res.repairs == ("answer.actions[0]: negative count -1e+400 read as 1e+400 × Dolly Out",
                           "answer: Dolly Out × 1e+400 clamped to the cap 10")
    res = parse_response(_flat("-" + "9" * 5000, "'"))
    assert res.sequence[0].as_actions() == [(Primitive.DOLLY_OUT, 10)]
    assert res.repairs == ("answer.actions[0]: infinite step_num -inf read as -10",
                           "answer.actions[0]: negative count -10 read as 10 × Dolly Out")


def test_huge_counts_are_summed_then_clamped():
    res = parse_response('{"actions": ["W", "S", "W"], "step_nums": [' + "9" * 400 + ", 1, -" + "9" * 400 + "]}")
    # W: 10^400 - 1, then -(10^400 - 1) W = 10^400 - 1 more S: both columns clamped
    assert res.sequence[0].as_actions() == [(Primitive.DOLLY_IN, 10), (Primitive.DOLLY_OUT, 10)]


def test_huge_numbers_elsewhere_never_raise():
    sizes = StepSizes.manipulation()
    # a vector component, a gripper, a hex literal of 6000 decimal digits in Python quoting
    res = parse_response('{"step_1": [' + "9" * 400 + ", 0, 0, 0, 0, 0, " + "9" * 400 + "]}", sizes=sizes)
    assert res.ok and res.sequence[0].motion[0] == pytest.approx(0.2) and res.sequence[0].gripper == 1
    res = parse_response("{'actions': ['W'], 'step_nums': [0x" + "f" * 5000 + "]}")
    assert res.repairs == ("answer.actions[0]: infinite step_num inf read as 10",)
    # parse_object with Python ints beyond the 4300-digit str limit: the note prints them short
    res = parse_object({"actions": ["W", "A"], "step_nums": [10 ** 5000, 2], 10 ** 5000: 1})
    assert res.sequence[0].as_actions() == [(Primitive.TRUCK_LEFT, 2), (Primitive.DOLLY_IN, 10)]
    assert res.repairs == ("answer.1e+5000: unknown key ignored", "answer: Dolly In × 1e+5000 clamped to the cap 10")


def test_int_conversion_limit_lowered_by_the_user():
    # PYTHONINTMAXSTRDIGITS may be as low as 640: a 700-digit count is then clamped as infinite, not a failure
    if not hasattr(sys, "set_int_max_str_digits"):
        pytest.skip("Python without an int conversion limit")
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        for quote in ('"', "'"):
            res = parse_response(_flat("9" * 700, quote))
            assert res.ok and res.sequence[0].as_actions() == [(Primitive.DOLLY_IN, 10)], res.error
            assert res.repairs == ("answer.actions[0]: infinite step_num inf read as 10",)
    finally:
        sys.set_int_max_str_digits(old)
