"""The fast path for well-formed answers: what it reads, with hand-written expected results, and what it
leaves to the full path. Equality with the full path on every input is tested over the corpus
(action_space/test_parsing_corpus.py) and on generated answers (action_space/test_parsing_fuzz.py)."""

import pytest

from spatialact.action_space import ParseError, Primitive, StepSizes, parse_response
from spatialact.action_space.parsing import parse_response_fast, parse_response_reference

P = Primitive
NAV, MANIP = StepSizes.navigation(), StepSizes.manipulation()
FLAT = '{"actions": ["Truck Left", "Pedestal Up"], "step_nums": [1, 4]}'
STEPPED = ('{"step_2": {"actions": ["→"], "step_nums": [3], "gripper": 1}, '
           '"step_1": {"actions": ["W", "W", "push"], "step_nums": [2, 3, 1]}, "step_10": null}')


@pytest.mark.parametrize("text,steps,grippers,fmt", [
    (FLAT, [[(P.TRUCK_LEFT, 1), (P.PEDESTAL_UP, 4)]], [None], "flat"),
    ("Looking at image 3, the view moved.\n```json\n" + FLAT + "\n```\nThis aligns the camera.",
     [[(P.TRUCK_LEFT, 1), (P.PEDESTAL_UP, 4)]], [None], "flat"),
    ("```json\n{\"actions\": [\"S\"], \"step_nums\": [1]}\n```\nor better:\n```json\n" + FLAT + "\n```",
     [[(P.TRUCK_LEFT, 1), (P.PEDESTAL_UP, 4)]], [None], "flat"),       # the last json fence
    ("Answer: " + FLAT + " (done)", [[(P.TRUCK_LEFT, 1), (P.PEDESTAL_UP, 4)]], [None], "flat"),  # prose, no fence
    # steps ordered by number (step_10 last), repeats summed (W 2 + 3 + push 1 = Dolly In 6), the gripper persists
    (STEPPED, [[(P.DOLLY_IN, 6)], [(P.PAN_RIGHT, 3)], []], [None, 1, 1], "stepped"),
    ('{"actions": ["grab", "STOP"], "step_nums": [1, 7], "gripper": "closed"}', [[]], [1], "flat"),
    ('{"actions": [], "step_nums": []}', [[]], [None], "flat"),
    ('[{"actions": ["A"], "step_nums": [2]}, [], ""]', [[(P.TRUCK_LEFT, 2)], [], []], [None] * 3, "stepped"),
])
def test_well_formed_answers_take_the_fast_path(text, steps, grippers, fmt):
    res = parse_response_fast(text, NAV)
    assert res is not None and res.ok and res.repairs == () and res.format == fmt
    assert [s.as_actions() for s in res.sequence] == steps
    assert [s.gripper for s in res.sequence] == grippers
    assert res == parse_response_reference(text, sizes=NAV) == parse_response(text, strict=True, sizes=NAV)


def test_vector_answers_take_the_fast_path():
    text = '{"step_1": [0.02, 0, -0.04, 0.1, 0, -0.0873, 1], "step_2": [0, 0, 0.2, 0, 0, 0]}'
    res = parse_response_fast(text, MANIP)
    assert res is not None and res.format == "vector"
    # [dx, dy, dz, roll, pitch, yaw] -> motion (tx, ty, tz, tilt=pitch, pan=yaw, roll)
    assert res.sequence[0].motion == (0.02, 0.0, -0.04, 0.0, -0.0873, 0.1) and res.sequence[0].gripper == 1
    assert res.sequence[1].motion == (0.0, 0.0, 0.2, 0.0, 0.0, 0.0) and res.sequence[1].gripper == 1
    assert res == parse_response_reference(text, sizes=MANIP)
    one = parse_response_fast("[0.01, 0, 0, 0, 0, 0]", MANIP)
    assert one is not None and one.format == "vector" and one.sequence[0].motion[0] == 0.01


@pytest.mark.parametrize("text", [
    '{"actions": ["W"], "step_nums": [11]}',                  # over the cap: clamped with a note
    '{"actions": ["W", "W"], "step_nums": [6, 5]}',           # over the cap after summing
    '{"actions": ["W"], "step_nums": [-1]}',                  # negative
    '{"actions": ["W"], "step_nums": [2.0]}',                 # a float (read without a note, but not here)
    '{"actions": ["W"], "step_nums": [true]}',                # a bool is not a count
    '{"actions": ["W"], "step_nums": ["2"]}',                 # numeric string
    '{"actions": ["W", "D"], "step_nums": [2]}',              # missing step_num
    '{"actions": ["W"]}',
    '{"actions": ["Zoom In"], "step_nums": [1]}',             # unknown name
    '{"actions": ["Truck Left (A)"], "step_nums": [1]}',      # name with symbol: read with a note
    '{"actions": ["grab"], "step_nums": [2]}',                # a gesture's count
    '{"actions": ["grab"], "step_nums": [1], "gripper": 0}',  # the field contradicts the gesture
    '{"actions": ["W"], "step_nums": [1], "gripper": 0.7}',
    '{"actions": ["W"], "step_nums": [1], "reasoning": "x"}',  # unknown key
    '{"actions": ["W"], "step_nums": [1], "actions": ["S"]}',  # duplicate key
    '{"Actions": ["W"], "step_nums": [1]}',                   # key spelling
    '{"step_1": ["W"], "Step 2": ["S"]}',
    '{"step_1": {"actions": ["W"], "step_nums": [1]}, "step_01": null}',  # repeated step number
    '{"steps": [{"actions": ["W"], "step_nums": [1]}]}',
    '{"step_1": [0.7, 0, 0, 0, 0, 0]}',                       # beyond cap x unit (0.626 m): clamped
    '{"step_1": [0, 0, 0, 0, 0]}',                            # too short
    '{"step_1": [0, 0, 0, 0, 0, 0, 0, 0]}',                   # too long
    '{"step_1": [NaN, 0, 0, 0, 0, 0]}',
    '{"step_1": ["0.1", 0, 0, 0, 0, 0]}',
    '["W", "D"]',                                             # names without step_nums
    '[""]',
    '{"actions": ["W"], "step_nums": [1],}',                  # trailing comma
    "{'actions': ['W'], 'step_nums': [1]}",                   # Python quoting
    '<think>x</think>{"actions": ["W"], "step_nums": [1]}',   # a think block
    '{"actions": ["S"], "step_nums": [1]} no: {"actions": ["W"], "step_nums": [1]}',  # two objects in prose
    '```json\n{"actions": ["W"], "step_nums": [1]}',          # unclosed fence
    '```json\n\n```\n{"actions": ["W"], "step_nums": [1]}',   # empty json fence
    '{"actions": ["W"], "step_nums": [1], "x": "\x01"}',       # raw control character
    '{"actions": ["STOP"], "step_nums": [' + "9" * 5000 + "]}",  # beyond the int conversion limit
    "",
    "   ",
    "{}",
    "[]",
    "Move forward twice.",
])
def test_other_answers_are_left_to_the_full_path(text):
    assert parse_response_fast(text, NAV) is None
    ref = parse_response_reference(text, sizes=NAV)
    assert parse_response(text, sizes=NAV) == ref


def test_fast_path_agrees_in_strict_mode_and_checks_the_cap():
    assert parse_response(FLAT, strict=True) == parse_response_reference(FLAT, strict=True)
    with pytest.raises(ParseError, match=r"answer: Dolly In × 11 clamped to the cap 10"):
        parse_response('{"actions": ["W"], "step_nums": [11]}', strict=True)
    for cap in (-1, 2.5, True):
        with pytest.raises(ValueError, match="cap must be a non-negative integer"):
            parse_response(FLAT, cap=cap)
    # cap 0: every non-zero count is over it, so only the full path can answer (with its notes)
    assert parse_response_fast(FLAT, NAV, cap=0) is None
    assert parse_response_fast('{"actions": ["W"], "step_nums": [0]}', NAV, cap=0) is not None
    assert parse_response_fast(None) is None and parse_response(None).error == "$: the answer is not text but NoneType"
