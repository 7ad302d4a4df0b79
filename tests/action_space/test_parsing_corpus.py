"""Every answer of the corpus (tests/parse_corpus.py) parses to its hand-written expected outcome, lenient parsing
never raises on any of them, and strict mode accepts the clean ones unchanged and rejects the others with a
ParseError naming what and where."""

import re
from collections import Counter

import numpy as np
import pytest

from parse_corpus import CORPUS
from spatialact.action_space import ActionSequence, ParseError, ParseResult, Primitive, StepSizes, parse_response
from spatialact.action_space.parsing import parse_response_fast, parse_response_reference

IDS = [c["id"] for c in CORPUS]


def _sizes(entry):
    return StepSizes.for_kind(entry["kind"])


def test_corpus_is_large_and_covers_the_brief():
    assert len(CORPUS) >= 40 and len(set(IDS)) == len(IDS)
    formats = Counter(c["format"] for c in CORPUS)
    assert formats["flat"] >= 10 and formats["stepped"] >= 10 and formats["vector"] >= 4 and formats[None] >= 5
    texts = " ".join(c["text"] for c in CORPUS)
    for needle in ("<think>", "</think>", "```json", ",]", "'actions'", "→", "-2", "2.5", "1000000", "three",
                   "Zoom In", "{}", '"3"'):
        assert needle in texts, needle
    assert sum(not c["ok"] for c in CORPUS) >= 6
    assert sum(c["strict"] is not None for c in CORPUS) >= 20


def _expected_step_matches(step, exp, sizes):
    if "vector" in exp:
        assert step.is_vector
        np.testing.assert_allclose(step.as_vector(sizes)[:6], exp["vector"], atol=1e-12)
    else:
        assert not step.is_vector
        got = {p.value: n for p, n in step.as_actions()}
        assert got == exp


@pytest.mark.parametrize("entry", CORPUS, ids=IDS)
def test_lenient_outcome(entry):
    res = parse_response(entry["text"], sizes=_sizes(entry))
    assert isinstance(res, ParseResult) and isinstance(res.sequence, ActionSequence)
    assert res.ok is entry["ok"], (res.error, res.repairs)
    assert res.format == entry["format"]
    assert len(res.sequence) == len(entry["steps"])
    for step, exp in zip(res.sequence, entry["steps"]):
        _expected_step_matches(step, exp, _sizes(entry))
    grip = entry.get("gripper", [None] * len(entry["steps"]))
    assert [s.gripper for s in res.sequence] == grip
    assert len(res.repairs) == len(entry["repairs"]), res.repairs
    for got, want in zip(res.repairs, entry["repairs"]):
        assert want in got, (want, got)
    if entry["ok"]:
        assert res.error is None
        res.sequence.to_poses()  # the rigid motions exist and are finite
        assert np.all(np.isfinite(res.sequence.to_deltas()))
    else:
        assert entry["error"] in res.error


@pytest.mark.parametrize("entry", CORPUS, ids=IDS)
def test_strict_outcome(entry):
    if entry["strict"] is None:
        res = parse_response(entry["text"], strict=True, sizes=_sizes(entry))
        lenient = parse_response(entry["text"], sizes=_sizes(entry))
        assert res.repairs == () and res.sequence == lenient.sequence and res.format == lenient.format
        return
    with pytest.raises(ParseError) as exc:
        parse_response(entry["text"], strict=True, sizes=_sizes(entry))
    msg = str(exc.value)
    assert re.search(entry["strict"], msg), msg
    # one line, and it names where: a JSON path ("step_2.actions[0]", "answer.step_nums", "$") before the colon
    assert "\n" not in msg
    where = msg.split(": ", 1)[0]
    assert re.match(r"^(\$|answer|step[_ ]\d+|steps\[\d+\]|[A-Za-z_]+)", where), msg


def test_lenient_parsing_never_raises_on_corpus_variants():
    # each answer cut at every 7th character, and with its JSON punctuation dropped: never an exception
    n = 0
    for entry in CORPUS:
        t = entry["text"]
        for cut in range(0, len(t), 7):
            for text in (t[:cut], t[cut:], t.replace(t[cut:cut + 1], "")):
                res = parse_response(text, sizes=_sizes(entry))
                assert isinstance(res, ParseResult) and res.sequence is not None
                assert res.ok == (len(res.sequence) > 0)
                n += 1
    assert n > 1000


def test_corpus_primitive_names_are_canonical():
    names = {p.value for p in Primitive}
    for entry in CORPUS:
        for exp in entry["steps"]:
            assert set(exp) <= names | {"vector"}, entry["id"]


# ----- the fast path agrees with the full path ------------------------------------------------------------
def _strict_outcome(parse, text, sizes):
    try:
        return parse(text, strict=True, sizes=sizes)
    except ParseError as e:
        return str(e)


def test_fast_path_equals_the_full_path_over_the_corpus_and_its_variants():
    taken = n = 0
    for entry in CORPUS:
        sizes, t = _sizes(entry), entry["text"]
        texts = [t] + [v for cut in range(0, len(t), 5) for v in (t[:cut], t[cut:], t.replace(t[cut:cut + 1], ""))]
        for text in texts:
            ref = parse_response_reference(text, sizes=sizes)
            fast = parse_response_fast(text, sizes)
            assert fast is None or fast == ref, (entry["id"], text)
            assert parse_response(text, sizes=sizes) == ref
            assert _strict_outcome(parse_response, text, sizes) == _strict_outcome(parse_response_reference, text,
                                                                                  sizes)
            taken += fast is not None
            n += 1
    assert n > 1500 and taken > 150, (n, taken)


def test_fast_path_takes_the_well_formed_corpus_answers():
    # every strictly valid answer in a shape the fast path reads; the others need a fallback (think blocks,
    # trailing commas, Python quoting, two objects in prose, key spellings, a "steps" list)
    needs_full_path = {"flat-think-block", "flat-orphan-think-close", "flat-trailing-commas", "flat-single-quotes",
                       "flat-two-objects-in-prose", "stepped-key-spellings", "stepped-gripper-words",
                       "stepped-steps-list"}
    for entry in CORPUS:
        fast = parse_response_fast(entry["text"], _sizes(entry))
        if entry["strict"] is None and entry["id"] not in needs_full_path:
            assert fast is not None, entry["id"]
        if entry["strict"] is not None or not entry["ok"]:
            assert fast is None, entry["id"]  # anything repaired or failed is the full path's
