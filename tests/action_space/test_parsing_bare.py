"""A bare action (docs/parsing.md, "Bare action"): an answer that is one action name, alias or stop word with an
optional count, in markup or not, is read as that one step with a note; a sentence is not. Strict mode refuses
it, naming it. Every failure, bare or not, carries a non-empty reason. Time stays linear on 1 MB bare-ish input.

Expected steps are written by hand as counts in the column order of a Step (docs/conventions.md):
(Truck Right, Truck Left, Pedestal Down, Pedestal Up, Dolly In, Dolly Out, Tilt Up, Tilt Down, Pan Right,
Pan Left, Roll CCW, Roll CW).
"""

import random
import re
import time

import pytest

from _linear_time import assert_parses_in_linear_time
from parse_corpus import CORPUS, HOSTILE
from spatialact.action_space import (
    ActionSequence, ParseError, ParseResult, Primitive, StepSizes, lookup_primitive, parse_object, parse_response,
)
from spatialact.action_space import parsing

MANIP = StepSizes.manipulation()
STILL = (0,) * 12


def counts(**cols):
    """A counts tuple from column indices written by hand: counts(c4=2) is Dolly In × 2."""
    out = [0] * 12
    for k, v in cols.items():
        out[int(k[1:])] = v
    return tuple(out)


# text, what the note quotes, the one step's counts (by hand)
BARE = [
    ("Stay", "Stay", STILL),
    ("STOP", "STOP", STILL),
    ("stop.", "stop", STILL),
    ("Done", "Done", STILL),
    ("  none \n", "none", STILL),
    ("**Dolly In**", "Dolly In", counts(c4=1)),
    ("dolly in 2", "dolly in 2", counts(c4=2)),
    ("Pan Left 3", "Pan Left 3", counts(c9=3)),
    ("`forward`", "forward", counts(c4=1)),
    ("```\nStay\n```", "Stay", STILL),
    ("```text\nTruck Left 4\n```", "Truck Left 4", counts(c1=4)),
    ("__Tilt Up__.", "Tilt Up", counts(c6=1)),
    ("*Pan Right 2.*", "Pan Right 2", counts(c8=2)),
    ("**`Roll CW`**", "Roll CW", counts(c11=1)),
    ("W 5", "W 5", counts(c4=5)),
    ("push 2", "push 2", counts(c4=2)),            # Push counts as Dolly In
    ("Move Backward\t07", "Move Backward\t07", counts(c5=7)),
    ("<think>the views match</think>\n**Done.**", "Done", STILL),
]


@pytest.mark.parametrize("text,read,want", BARE)
def test_a_bare_action_is_one_step_with_a_note(text, read, want):
    res = parse_response(text)
    note = f"$: bare action {read!r} read as one step"
    assert res.ok and res.error is None and res.format == "flat" and res.json_text is None
    assert len(res.sequence) == 1 and res.sequence[0].counts == want and res.sequence[0].gripper is None
    assert res.repairs == (note,) and res.n_repairs == 1
    # the same step as the JSON answer it stands for
    name = re.sub(r"\s+[0-9]+$", "", read)
    n = int(read[len(name):].strip() or 1)
    assert res.sequence == parse_response(f'{{"actions": ["{name}"], "step_nums": [{n}]}}').sequence
    # the full path reads it (the fast path declines text that is not JSON)
    assert parsing.parse_response_fast(text) is None
    assert parsing.parse_response_reference(text) == res


@pytest.mark.parametrize("text,read,_", BARE)
def test_strict_mode_refuses_a_bare_action_naming_it(text, read, _):
    with pytest.raises(ParseError, match="^" + re.escape(f"$: bare action {read!r} read as one step") + "$"):
        parse_response(text, strict=True)


def test_done_is_a_stop_word_of_the_one_table():
    assert lookup_primitive("Done") is Primitive.STAY and lookup_primitive("DONE") is Primitive.STAY
    for word in ("Stay", "STOP", "stop", "none", "done", "no movement"):
        assert lookup_primitive(word) is Primitive.STAY, word
    assert lookup_primitive("end") is None  # not a stop word (docs/parsing.md)
    # so it names Stay inside JSON too, strictly valid
    res = parse_response('{"actions": ["Done"], "step_nums": [1]}', strict=True)
    assert res.ok and res.repairs == () and res.sequence[0].counts == STILL


def test_the_cap_and_the_other_repairs_apply_as_usual():
    res = parse_response("Dolly In 15")
    assert res.sequence[0].counts == counts(c4=10)
    assert res.repairs == ("$: bare action 'Dolly In 15' read as one step",
                           "answer: Dolly In × 15 clamped to the cap 10")
    assert parse_response("Pan Left 3", cap=3).sequence[0].counts == counts(c9=3)
    res = parse_response("Pan Left 4", cap=3)
    assert res.sequence[0].counts == counts(c9=3) and res.repairs[1] == "answer: Pan Left × 4 clamped to the cap 3"
    # a gesture: the gripper closes, the count is ignored (as in JSON)
    res = parse_response("Grab 3", sizes=MANIP)
    assert res.sequence[0].counts == STILL and res.sequence[0].gripper == 1
    assert res.repairs[1] == "answer.actions[0]: Grab sets the gripper; its step_num 3 is ignored"
    res = parse_response("**Release**", sizes=MANIP)
    assert res.sequence[0].gripper == 0 and res.n_repairs == 1
    # count 0: a step that does not move; a Stay with a count is still Stay
    assert parse_response("Dolly In 0").sequence[0].counts == STILL
    assert parse_response("Stay 3").sequence[0].counts == STILL
    # a count of 2000 digits is infinite, clamped; the note quotes at most 60 characters of it
    res = parse_response("Pan Left " + "9" * 2000)
    assert res.sequence[0].counts == counts(c9=10)
    assert res.repairs[1] == "answer.actions[0]: infinite step_num inf read as 10"
    assert len(res.repairs[0]) < 100 and res.repairs[0].endswith("999... read as one step")
    # the step sizes are the task's: Dolly In 2 in manipulation units moves 2 × the manipulation unit
    d = parse_response("Dolly In 2", sizes=MANIP).sequence.to_deltas()[0]
    assert d[2, 3] == pytest.approx(2 * MANIP.translation)


NOT_BARE = [
    "I will stay here.",
    "Dolly In and then Pan Left",
    "stay here",
    "Stay..",                 # one trailing period only
    "Stay!",
    "**Stay",                 # markup on one side only
    "Stay`",
    "2 Dolly In",             # a count before the name
    "Pan Left3",              # a count glued to the name
    "Dolly In -2",
    "Dolly In 2.5",
    "Zoom In",
    "Stay Stay",
    "Dolly In, Pan Left",
    "end",
    "**" + "Dolly In " * 10 + "**",
]


@pytest.mark.parametrize("text", NOT_BARE)
def test_a_sentence_or_anything_else_stays_a_parse_failure(text):
    res = parse_response(text)
    assert not res.ok and res.error == "$: no JSON object found in the answer" and res.repairs == ()
    with pytest.raises(ParseError, match=r"^\$: no JSON object found in the answer$"):
        parse_response(text, strict=True)


def test_json_answers_are_read_as_before():
    # a JSON string is a JSON value, not a bare action
    assert parse_response('"Dolly In"').error == "$: expected a JSON object or list, got str"
    # a bare word before a JSON answer: the JSON is the answer
    res = parse_response('Dolly In\n{"actions": ["S"], "step_nums": [2]}')
    assert res.ok and res.repairs == () and res.sequence[0].counts == counts(c5=2)
    # the corpus is unchanged (its expected outcomes were written before this rule)
    for case in CORPUS:
        res = parse_response(case["text"])
        assert res.ok is case["ok"], case["id"]
        assert not any("bare action" in r for r in res.repairs), case["id"]


# ----- linear time ------------------------------------------------------------------------------------------
BAREISH = {  # n -> text of about n characters, whether it parses
    "spaces around": (lambda n: " " * (n // 2) + "**Pan Left 3**" + "\n" * (n // 2), True),
    "a huge count": (lambda n: "Pan Left " + "9" * n, True),
    "deep markup": (lambda n: "*`_" * (n // 6) + "Stay" + "_`*" * (n // 6), False),
    "alternating marks": (lambda n: "*_" * (n // 2) + "Stay", False),
    "spaced digits": (lambda n: "Stay" + " 1" * (n // 2), False),
    "periods": (lambda n: "Stay" + "." * n, False),
    "a long name": (lambda n: "Dolly " * (n // 6) + "In", False),
    "fence headers": (lambda n: "```" + "a" * n + "\nStay\n```", True),
}


@pytest.mark.parametrize("name", list(BAREISH))
def test_bare_ish_input_takes_linear_time(name):
    make, ok = BAREISH[name]
    assert_parses_in_linear_time(name, make, ok)


def test_one_megabyte_bare_ish_inputs_finish():
    for name, (make, ok) in BAREISH.items():
        text = make(1_000_000)
        t0 = time.process_time()
        res = parse_response(text)
        assert res.ok is ok, (name, res.error)
        assert time.process_time() - t0 < 2, name  # tens of milliseconds
    res = parse_response(BAREISH["a huge count"][0](1_000_000))
    assert res.sequence[0].counts == counts(c9=10)
    res = parse_response(BAREISH["fence headers"][0](1_000_000))
    assert res.sequence[0].counts == STILL


# ----- every failure has a reason ---------------------------------------------------------------------------
def _reason_ok(res):
    return isinstance(res.error, str) and res.error.strip() and "\n" not in res.error


FAILURES = [
    ("", "$: empty answer"),
    ("   \n\t", "$: empty answer"),
    ("I'm sorry, I cannot tell.", "$: no JSON object found in the answer"),
    ("{}", "$: no 'actions', 'step_N' or vector entries found"),
    ("[]", "$: empty list: no steps"),
    ('"W"', "$: expected a JSON object or list, got str"),
    ("42", "$: expected a JSON object or list, got int"),
    ('{"actions": ["Zoom In"], "step_nums": [1]}', "no usable step (answer.actions[0]: unknown action 'Zoom In' dropped)"),
    ('{"step_1": {"gripper": null}}', "no usable step (no step names an action, a gripper state or a vector)"),
    ('{"actions": null, "gripper": null}', "no usable step (no step names an action, a gripper state or a vector)"),
    ('{"a": {"b": {"c": {"d": {"e": 1}}}}}', "d: no actions found (the answer is wrapped in more than 3 keys)"),
]


@pytest.mark.parametrize("text,error", FAILURES)
def test_each_failure_path_names_its_reason(text, error):
    res = parse_response(text)
    assert not res.ok and res.error == error and _reason_ok(res)
    with pytest.raises(ParseError) as e:
        parse_response(text, strict=True)
    assert str(e.value).strip()


def test_failures_that_are_not_text_or_not_decodable_have_a_reason():
    for value in (None, 3, b"W", ["W"]):
        res = parse_response(value)
        assert not res.ok and res.error == f"$: the answer is not text but {type(value).__name__}"
    res = parse_object("W")
    assert not res.ok and _reason_ok(res)


def test_empty_exception_messages_still_give_a_reason(monkeypatch):
    # the guards: an exception without a message must not leave the reason blank
    def no_message(_text):
        raise ValueError("")
    monkeypatch.setattr(parsing, "extract_json_text", no_message)
    res = parsing.parse_response_reference('{"actions": ["W"]')
    assert not res.ok and res.error == "$: unreadable answer (ValueError)"
    monkeypatch.undo()

    def silent(*_a, **_k):
        raise ParseError("")
    monkeypatch.setattr(parsing, "_interpret", silent)
    res = parse_object({"actions": ["W"]})
    assert not res.ok and res.error == "$: no usable step"


def test_a_failed_result_without_a_reason_gets_one():
    empty = ActionSequence((), StepSizes.navigation())
    for error in (None, "", "  "):
        res = ParseResult(empty, (), False, error)
        assert res.error == "$: no usable step (no reason recorded)"
    assert ParseResult(empty, (), True, None).error is None  # a success has none


def test_every_failure_over_the_corpus_hostile_answers_and_random_text_has_a_reason():
    texts = [c["text"] for c in CORPUS] + [make(2_000) for make, _ in HOSTILE.values()] + NOT_BARE
    rng = random.Random(11)
    alphabet = ['{', '}', '[', ']', '"', "'", ",", ":", " ", "\n", "`", "```", "*", "**", "_", ".", "W", "Stay",
                "Dolly In", "2", "-", "null", "actions", "step_nums", "step_1", "gripper", "<think>", "</think>"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    n_failed = 0
    for text in texts:
        res = parse_response(text)
        if not res.ok:
            n_failed += 1
            assert _reason_ok(res), repr(text)
            assert len(res.sequence) == 0
        try:
            parse_response(text, strict=True)
        except ParseError as e:
            assert str(e).strip(), repr(text)
    assert n_failed > 1000  # the random texts do fail, mostly
