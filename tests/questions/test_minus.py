"""A typographic minus in a numeric answer is a minus: ``"−54.1"`` (U+2212) was read as +54.1 and
scored right against 54.14. The scorer reads the minus signs the action parser reads, en dashes as a sign only, and
says what it read (``repairs``) in the scored answers file."""

from __future__ import annotations

import json

import pytest

from spatialact.questions import score_answers_file, score_response
from spatialact.scorers.questions import extract_number, read_minus_signs, score_numeric


def _num_q(answer: float, qid: str = "q0") -> dict:
    return {"id": qid, "type": "distance", "format": "numeric", "answer": answer, "unit": "m"}


@pytest.mark.parametrize("text", ["\u221254.1", "about \u221254.1 m", "\ufe6354.1", "\uff0d54.1", "\u201354.1",
                                  "x = \u201354.1", "(\u201354.1)", "\u2013.5e2"])
def test_typographic_minus_is_a_minus(text):
    v = extract_number(text)
    assert v is not None and v < 0
    assert v == float(text.split("=")[-1].strip(" ()m").replace("about", "").strip()
                      .translate({0x2212: "-", 0xFE63: "-", 0xFF0D: "-", 0x2013: "-"}))


@pytest.mark.parametrize("text,value", [
    ("50\u201360 m", 60.0),            # an en dash between numbers is a range, not a sign
    ("step\u20135", 5.0),              # after a letter: a hyphen-like dash
    ("the distance \u2014 54.1", 54.1),  # em dash: punctuation, never a minus
    ("\u201454.1", 54.1),
    ("\u201054.1", 54.1),              # hyphen U+2010
    ("\u2013 54.1", 54.1),             # a dash not directly before the number is no sign
    ("60 \u2212 5.9 = 54.1", 54.1),    # a minus between numbers is an operator, as '-' is
])
def test_other_dashes_are_not_a_sign(text, value):
    assert extract_number(text) == value


def test_the_wrong_sign_scores_wrong_and_says_what_was_read():
    s = score_numeric("\u221254.1", 54.14)  # was: pred 54.1, delta2 True, mra 1.0
    assert s["pred"] == -54.1 and not s["delta2"] and s["mra"] == 0.0
    assert s["repairs"] == ["response: 1 minus sign U+2212 read as '-'"]
    right = score_numeric("\u221254.1", -54.14)
    assert right["delta2"] and right["mra"] == 1.0
    assert "repairs" not in score_numeric("-54.1", -54.14)  # nothing read other than as written: no key
    two = score_numeric("\u22121 then \u22122 then \u20133", -3.0)
    assert two["pred"] == -3.0
    assert two["repairs"] == ["response: 2 minus signs U+2212 read as '-'", "response: 1 minus sign U+2013 read as '-'"]


def test_read_minus_signs_leaves_other_text_alone():
    text = "a\u2014b \u2010 c 5\u20136 \u2013x"
    assert read_minus_signs(text) == (text, [])
    assert read_minus_signs("") == ("", [])


def test_score_response_keeps_the_run_record_fields_and_the_answers_file_records_the_reading(tmp_path):
    q = _num_q(54.14)
    s = score_response(q, "\u221254.1")
    assert s["pred"] == -54.1 and s["correct"] is False and s["score"] == 0.0
    assert "repairs" not in s  # a run's question record has a fixed field set; pred shows the number read
    assert score_response(q, "\u221254.1", repairs=True)["repairs"] == ["response: 1 minus sign U+2212 read as '-'"]
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"question_id": "q0", "response": "\u221254.1"}, ensure_ascii=False) + "\n"
                       + json.dumps({"question_id": "q1", "response": "54.1"}) + "\n", encoding="utf-8")
    res = score_answers_file([q, _num_q(54.14, "q1")], answers, tmp_path / "scores.jsonl")
    rows = [json.loads(x) for x in (tmp_path / "scores.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["pred"] for r in rows] == [-54.1, 54.1] and [r["correct"] for r in rows] == [False, True]
    assert rows[0]["repairs"] == ["response: 1 minus sign U+2212 read as '-'"] and "repairs" not in rows[1]
    assert res["summary"]["all"]["delta2"] == 0.5
