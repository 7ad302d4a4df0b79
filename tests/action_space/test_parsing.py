"""Answer parsing rule by rule (docs/parsing.md): text level, each lenient repair, strict errors."""

import json
import math

import numpy as np
import pytest

from spatialact.action_space import (
    ActionSequence, ParseError, ParseResult, Primitive, StepSizes, extract_json_text, parse_object, parse_response,
)

P = Primitive
MANIP = StepSizes.manipulation()


def acts(res, k=0):
    """The (primitive, count) pairs of step k, as a dict."""
    return dict(res.sequence[k].as_actions())


def lenient_and_strict_error(text, match, **kw):
    """Lenient parsing repairs it (returns the result); strict raises ParseError whose message matches."""
    res = parse_response(text, **kw)
    assert isinstance(res, ParseResult)
    with pytest.raises(ParseError, match=match):
        parse_response(text, strict=True, **kw)
    return res


# ----- text level -------------------------------------------------------------------------------------
def test_think_blocks_are_dropped_even_when_they_hold_json():
    text = '<think>first {"actions": ["S"], "step_nums": [9]}</think>\n{"actions": ["W"], "step_nums": [2]}'
    res = parse_response(text, strict=True)
    assert acts(res) == {P.DOLLY_IN: 2}
    text = '<THINK>a</Think> {"actions": ["A"], "step_nums": [1]} <think>b {"actions": ["D"]}</think>'
    assert acts(parse_response(text, strict=True)) == {P.TRUCK_LEFT: 1}


def test_orphan_closing_think_tag_keeps_what_follows():
    text = 'reasoning {"actions": ["S"], "step_nums": [1]} ...</think>{"actions": ["W"], "step_nums": [1]}'
    assert acts(parse_response(text, strict=True)) == {P.DOLLY_IN: 1}


def test_unclosed_think_block_runs_to_the_end():
    # reasoning cut off by the token limit: its draft JSON is not the answer
    res = parse_response('<think>I guess {"actions": ["W"], "step_nums": [2]} but let me check the')
    assert not res.ok and "no JSON object found" in res.error
    text = '{"actions": ["S"], "step_nums": [1]} <think>hmm, maybe {"actions": ["W"]}'
    assert acts(parse_response(text, strict=True)) == {P.DOLLY_OUT: 1}


def test_last_json_fence_wins():
    text = ('```json\n{"actions": ["S"], "step_nums": [1]}\n```\nWait, better:\n'
            '```json\n{"actions": ["W"], "step_nums": [2]}\n```\n'
            '```text\n{"actions": ["A"], "step_nums": [3]}\n```')
    assert acts(parse_response(text, strict=True)) == {P.DOLLY_IN: 2}
    # without a json fence, the last fence
    text = '```\n{"actions": ["S"], "step_nums": [1]}\n```\n```python\n{"actions": ["D"], "step_nums": [4]}\n```'
    assert acts(parse_response(text, strict=True)) == {P.TRUCK_RIGHT: 4}


def test_unclosed_fence_of_a_complete_answer():
    text = 'Here:\n```json\n{"actions": ["W"], "step_nums": [3]}\n'
    assert acts(parse_response(text, strict=True)) == {P.DOLLY_IN: 3}


def test_outermost_braces_in_prose_and_several_objects():
    assert acts(parse_response('I think {"actions": ["D"], "step_nums": [2]} is right.', strict=True)) == {
        P.TRUCK_RIGHT: 2}
    text = 'First {"actions": ["W"], "step_nums": [2]}, then corrected: {"actions": ["S"], "step_nums": [1]}.'
    assert acts(parse_response(text, strict=True)) == {P.DOLLY_OUT: 1}
    # a later bracketed remark does not replace the answer
    text = '{"actions": ["W"], "step_nums": [2]} (see step [1])'
    assert acts(parse_response(text, strict=True)) == {P.DOLLY_IN: 2}


def test_outermost_container_first():
    # a list of steps holding objects is read as the list (its first object used to be read alone, losing steps)
    text = 'Steps: [{"actions": ["A"], "step_nums": [2]}, [], {"actions": ["W"], "step_nums": [1]}] done.'
    res = parse_response(text, strict=True)
    assert [dict(s.as_actions()) for s in res.sequence] == [{P.TRUCK_LEFT: 2}, {}, {P.DOLLY_IN: 1}]
    assert res.format == "stepped" and res.json_text == text[7:-6]
    res = parse_response('[{"actions": ["A"], "step_nums": [2]}, ""]', strict=True)
    assert len(res.sequence) == 2 and res.sequence[1].is_stay()
    # a bracket in the prose before an object does not enclose it: the object is read
    res = parse_response('Answer [see below]: {"actions": ["W"], "step_nums": [3]}', strict=True)
    assert acts(res) == {P.DOLLY_IN: 3} and res.format == "flat"


def test_cut_off_answer_is_not_read_from_its_fragments():
    # The list inside a broken object must not be taken as a whole answer (it used to be).
    for text in ('{"actions": ["W", "S"], "step_nums": [1, 2',
                 '```json\n{"actions": ["W"], "step_nums": [2]',
                 "{'actions': {'W'}, 'step_nums': [1]}"):
        res = parse_response(text)
        assert not res.ok and res.error == "$: no JSON object found in the answer"
        assert len(res.sequence) == 0


def test_trailing_commas_and_python_literals():
    res = parse_response('{"actions": ["W", "A",], "step_nums": [1, 2,],}', strict=True)
    assert acts(res) == {P.DOLLY_IN: 1, P.TRUCK_LEFT: 2}
    res = parse_response("{'step_1': {'actions': ['grab'], 'gripper': True}, 'step_2': {'actions': None}}")
    assert res.sequence[0].gripper == 1 and res.sequence[1].is_stay()
    res = parse_response("{'actions': ('W', 'S'), 'step_nums': (2, -1)}")
    assert acts(res) == {P.DOLLY_IN: 3}


def test_vector_list_in_prose():
    text = 'The motion is [[0.02, 0, 0.04, 0, 0, 0.087, 0], [0, -0.03, 0, 0, 0, 0, 1]] in metres.'
    res = parse_response(text, sizes=MANIP, strict=True)
    assert res.format == "vector" and len(res.sequence) == 2
    np.testing.assert_allclose(res.sequence.as_motions()[0], [0.02, 0, 0.04, 0, 0.087, 0])


def test_control_characters_and_deep_nesting_do_not_crash():
    res = parse_response('{"actions": ["W\tX", "S"], "step_nums": [1, 2]}')
    assert acts(res) == {P.DOLLY_OUT: 2} and "unknown action" in res.repairs[0]
    for text in ("[" * 50000, '{"a":' * 5000, "[" * 3000 + "]" * 3000):
        res = parse_response(text)
        assert not res.ok and res.sequence is not None
        with pytest.raises(ParseError):
            parse_response(text, strict=True)


def test_extract_json_text_returns_the_text_it_read():
    txt, obj = extract_json_text('x ```json\n{"a": 1}\n``` y')
    assert txt == '{"a": 1}' and obj == {"a": 1}
    with pytest.raises(ValueError):
        extract_json_text("nothing here")


# ----- lenient repairs, one by one ----------------------------------------------------------------------
def test_missing_step_num_becomes_one():
    res = lenient_and_strict_error('{"actions": ["W", "Pan Right", "space"], "step_nums": [2, 3]}',
                                   r"answer\.actions\[2\]: missing step_num becomes 1")
    assert acts(res) == {P.DOLLY_IN: 2, P.PAN_RIGHT: 3, P.PEDESTAL_UP: 1}
    res = parse_response('{"actions": ["W", "D"]}')
    assert acts(res) == {P.DOLLY_IN: 1, P.TRUCK_RIGHT: 1} and len(res.repairs) == 2
    res = parse_response('{"actions": ["W"], "step_nums": [null]}')
    assert acts(res) == {P.DOLLY_IN: 1}


def test_extra_step_nums_dropped():
    res = lenient_and_strict_error('{"actions": ["W"], "step_nums": [1, 2, 3]}',
                                   r"answer\.step_nums: 2 step_nums beyond the 1 actions dropped")
    assert acts(res) == {P.DOLLY_IN: 1}


def test_numeric_string_read_as_number():
    res = lenient_and_strict_error('{"actions": ["W", "A"], "step_nums": ["3", " 2 "]}',
                                   r"answer\.actions\[0\]: numeric string '3' read as 3")
    assert acts(res) == {P.DOLLY_IN: 3, P.TRUCK_LEFT: 2}


@pytest.mark.parametrize("num, expected", [(2.5, 3), (0.5, 1), (1.49, 1), (3.5, 4), (0.4, 0), ("2.5", 3)])
def test_fraction_rounds_half_away_from_zero(num, expected):
    res = lenient_and_strict_error(json.dumps({"actions": ["W"], "step_nums": [num]}), "rounded to|read as")
    assert acts(res) == ({P.DOLLY_IN: expected} if expected else {})


def test_negative_fraction_rounds_away_from_zero_then_flips():
    res = parse_response('{"actions": ["W"], "step_nums": [-2.5]}')
    assert acts(res) == {P.DOLLY_OUT: 3}
    assert res.repairs == ("answer.actions[0]: fractional step_num -2.5 rounded to -3",
                           "answer.actions[0]: negative count -3 read as 3 × Dolly Out")


@pytest.mark.parametrize("name, opposite", [
    ("W", P.DOLLY_OUT), ("S", P.DOLLY_IN), ("D", P.TRUCK_LEFT), ("A", P.TRUCK_RIGHT), ("space", P.PEDESTAL_DOWN),
    ("shift", P.PEDESTAL_UP), ("→", P.PAN_LEFT), ("←", P.PAN_RIGHT), ("↑", P.TILT_DOWN), ("↓", P.TILT_UP),
    ("↺", P.ROLL_CW), ("↻", P.ROLL_CCW), ("push", P.DOLLY_OUT), ("pull", P.DOLLY_IN)])
def test_negative_count_becomes_the_opposite_primitive(name, opposite):
    res = lenient_and_strict_error(json.dumps({"actions": [name], "step_nums": [-2]}, ensure_ascii=False),
                                   r"answer\.actions\[0\]: negative count -2 read as 2 × ")
    assert acts(res) == {opposite: 2}


def test_count_over_cap_clamped_per_primitive():
    res = lenient_and_strict_error('{"actions": ["W", "A"], "step_nums": [12, 4]}',
                                   r"answer: Dolly In × 12 clamped to the cap 10")
    assert acts(res) == {P.DOLLY_IN: 10, P.TRUCK_LEFT: 4}
    res = parse_response('{"actions": ["W"], "step_nums": [-15]}')
    assert acts(res) == {P.DOLLY_OUT: 10}


def test_huge_and_infinite_step_nums_are_clamped_nan_dropped():
    for num in ("1e30", "99999999999999999999999", "9" * 5000, "1e400", '"inf"'):
        res = parse_response('{"actions": ["W"], "step_nums": [%s]}' % num)
        assert acts(res) == {P.DOLLY_IN: 10}, num
        assert all(len(r) < 120 for r in res.repairs)  # notes stay short
    res = parse_response('{"actions": ["W", "S"], "step_nums": [NaN, 1]}')
    assert acts(res) == {P.DOLLY_OUT: 1}
    assert res.repairs[0] == "answer.actions[0]: nan is not finite"


def test_non_numeric_step_num_drops_the_action():
    res = lenient_and_strict_error('{"actions": ["W", "S"], "step_nums": ["three", 2]}',
                                   r"answer\.actions\[0\]: 'three' is not a number")
    assert acts(res) == {P.DOLLY_OUT: 2}
    assert "answer.actions[0]: Dolly In dropped" in res.repairs
    res = parse_response('{"actions": ["W"], "step_nums": [true]}')
    assert not res.ok


def test_unknown_action_dropped_others_kept():
    res = lenient_and_strict_error('{"actions": ["W", "fly up", "↑"], "step_nums": [1, 2, 3]}',
                                   r"answer\.actions\[1\]: unknown action 'fly up' dropped")
    assert acts(res) == {P.DOLLY_IN: 1, P.TILT_UP: 3}


def test_names_with_a_symbol_in_brackets():
    for name in ("Truck Left (A)", "A (Truck Left)", "A: Truck Left", "Truck Left [A]"):
        res = lenient_and_strict_error(json.dumps({"actions": [name], "step_nums": [2]}), "read .* as Truck Left")
        assert acts(res) == {P.TRUCK_LEFT: 2}
    # two different primitives named: ambiguous, dropped
    res = parse_response('{"actions": ["Pan Left (D)"], "step_nums": [1]}')
    assert not res.ok and "unknown action" in res.error


def test_vector_component_clamped_to_cap_times_unit():
    res = lenient_and_strict_error('[[0.5, 0, -1.0, 0, 2.0, 0, 1]]', r"steps\[0\]\[0\]: 0\.5 clamped to ±0\.2",
                                   sizes=MANIP)
    m = res.sequence.as_motions()[0]
    lim_r = 10 * math.radians(5)
    np.testing.assert_allclose(m, [0.2, 0, -0.2, lim_r, 0, 0])  # pitch (about +X) is the tilt column
    # navigation sizes give a different limit
    res = parse_response('[[0.5, 0, 0, 0, 0, 0]]')
    assert res.sequence.as_motions()[0][0] == 0.5


def test_vector_gripper_threshold_and_extra_components():
    res = lenient_and_strict_error('{"step_1": [0, 0, 0, 0, 0, 0, 0.7]}', r"step_1\[6\]: gripper 0\.7 read as 1")
    assert res.sequence[0].gripper == 1
    assert parse_response('[[0, 0, 0, 0, 0, 0, 0.2]]').sequence[0].gripper == 0
    res = lenient_and_strict_error('[[0.01, 0, 0, 0, 0, 0, 1, 5, 6]]', "the first 7 are used")
    assert res.sequence[0].gripper == 1
    res = parse_response('[[0.01, 0, 0]]')
    assert not res.ok and "6 or 7 components" in res.error
    res = parse_response('[["x", 0.01, 0, 0, 0, 0]]')
    np.testing.assert_allclose(res.sequence.as_motions()[0], [0, 0.01, 0, 0, 0, 0])
    assert "steps[0][0]: component read as 0" in res.repairs


@pytest.mark.parametrize("text", [
    '{"step_1": [0.02, 0, 0.04, 0, 0.1, 0.087, 1], "step_2": [0, -0.03, 0, 0, 0, 0, 0]}',
    '[[0.02, 0, 0.04, 0, 0.1, 0.087, 1], [0, -0.03, 0, 0, 0, 0, 0]]',
    '{"actions": [[0.02, 0, 0.04, 0, 0.1, 0.087, 1], [0, -0.03, 0, 0, 0, 0, 0]]}',
    '{"steps": [[0.02, 0, 0.04, 0, 0.1, 0.087, 1], [0, -0.03, 0, 0, 0, 0, 0]]}',
    '{"step_1": {"vector": [0.02, 0, 0.04, 0, 0.1, 0.087], "gripper": 1}, '
    '"step_2": {"delta": [0, -0.03, 0, 0, 0, 0, 0]}}',
])
def test_vector_layouts_all_read_the_same(text):
    res = parse_response(text, sizes=MANIP, strict=True)
    assert res.format == "vector"
    # [dx, dy, dz, roll, pitch, yaw] -> (tx, ty, tz, tilt=pitch, pan=yaw, roll)
    np.testing.assert_allclose(res.sequence.as_motions(), [[0.02, 0, 0.04, 0.1, 0.087, 0], [0, -0.03, 0, 0, 0, 0]])
    assert res.sequence.grippers().tolist() == [1, 0]


def test_step_with_nothing_usable_kept_as_stay_for_alignment():
    text = '{"step_1": {"actions": ["fly"]}, "step_2": {"actions": ["W"], "step_nums": [2]}}'
    res = parse_response(text)
    assert res.ok and len(res.sequence) == 2
    assert res.sequence[0].is_stay() and acts(res, 1) == {P.DOLLY_IN: 2}
    assert "step 1: nothing usable: kept as Stay to preserve step alignment" in res.repairs


def test_explicit_empty_actions_is_a_stay_step():
    res = parse_response('{"step_1": {"actions": [], "step_nums": []}, "step_2": {"actions": ["W"]}}')
    assert res.sequence[0].is_stay() and res.repairs == ("step_2.actions[0]: missing step_num becomes 1",)
    res = parse_response('{"actions": [], "step_nums": []}', strict=True)
    assert res.ok and res.sequence[0].is_stay()


def test_no_usable_step_gives_empty_sequence_and_error():
    for text in ('{"actions": ["fly"], "step_nums": [1]}', "{}", "[]", "null", "42", '"W"', "no json", "",
                 "   ", '{"step_1": {}}', '{"steps": "W"}'):
        res = parse_response(text)
        assert isinstance(res, ParseResult) and res.ok is False and res.error
        assert isinstance(res.sequence, ActionSequence) and len(res.sequence) == 0
        assert res.format is None
        with pytest.raises(ParseError):
            parse_response(text, strict=True)


def test_not_text_input():
    for bad in (None, 3, b"{}", {"actions": ["W"]}):
        res = parse_response(bad)
        assert not res.ok and "not text" in res.error
        with pytest.raises(ParseError, match="not text"):
            parse_response(bad, strict=True)


def test_single_values_where_lists_belong():
    res = lenient_and_strict_error('{"actions": "W", "step_nums": 3}', "a single action name")
    assert acts(res) == {P.DOLLY_IN: 3}
    res = parse_response('{"step_1": "Pan Left", "step_2": ["W", "W"]}')
    assert acts(res, 0) == {P.PAN_LEFT: 1} and acts(res, 1) == {P.DOLLY_IN: 2}


def test_action_names_as_keys():
    res = lenient_and_strict_error('{"Truck Left": 2, "Pan Right": 1}', "action names used as keys")
    assert acts(res) == {P.TRUCK_LEFT: 2, P.PAN_RIGHT: 1}
    res = parse_response('{"step_1": {"W": 2, "gripper": 1}, "step_2": {"S": "3"}}')
    assert acts(res, 0) == {P.DOLLY_IN: 2} and acts(res, 1) == {P.DOLLY_OUT: 3}
    assert res.sequence.grippers().tolist() == [1, 1]
    # a one-letter key holding an object is not the symbol "A"
    res = parse_response('{"a": {"actions": ["W"], "step_nums": [1]}}')
    assert acts(res) == {P.DOLLY_IN: 1} and res.repairs == ("$: answer read from inside key 'a'",)
    res = parse_response('{"actions": {"W": 2, "Pan Left": 1}}', strict=True)
    assert acts(res) == {P.DOLLY_IN: 2, P.PAN_LEFT: 1}


def test_step_keys_ordered_by_number_and_spelling_variants():
    text = ('{"step_10": {"actions": ["S"], "step_nums": [1]}, "Step 2": {"actions": ["D"], "step_nums": [1]},'
            ' "STEP-1": {"actions": ["W"], "step_nums": [1]}}')
    res = parse_response(text, strict=True)
    assert [list(acts(res, k)) for k in range(3)] == [[P.DOLLY_IN], [P.TRUCK_RIGHT], [P.DOLLY_OUT]]
    res = lenient_and_strict_error('{"step_1": {"actions": ["W"]}, "Step 1": {"actions": ["S"]}}',
                                   "repeated step numbers")


def test_duplicate_keys_reported():
    text = '{"step_1": {"actions": ["W"], "step_nums": [2]}, "step_1": {"actions": ["S"], "step_nums": [2]}}'
    res = lenient_and_strict_error(text, "step_1: key given more than once")
    assert acts(res) == {P.DOLLY_OUT: 2}
    res = lenient_and_strict_error('{"actions": ["W"], "step_nums": [2], "step_nums": [3]}', "more than once")
    assert acts(res) == {P.DOLLY_IN: 3}
    # reported once (a flat answer's duplicates were reported twice: by the answer and by its one step)
    assert res.repairs == ("step_nums: key given more than once; the last value is used",)
    res = parse_response("{'actions': ['W'], 'actions': ['S']}")
    assert any("more than once" in r for r in res.repairs)


def test_unknown_keys_ignored_with_a_note():
    res = lenient_and_strict_error('{"actions": ["W"], "step_nums": [2], "reasoning": "go"}',
                                   r"answer\.reasoning: unknown key ignored")
    assert acts(res) == {P.DOLLY_IN: 2}
    res = lenient_and_strict_error('{"step_1": {"actions": ["W"], "step_nums": [2]}, "explanation": "x"}',
                                   "explanation: key is not a step")
    res = lenient_and_strict_error('{"answer": {"actions": ["W"], "step_nums": [2]}}',
                                   "answer read from inside key 'answer'")
    assert acts(res) == {P.DOLLY_IN: 2}


def test_gripper_values():
    cases = {'"closed"': 1, '"open"': 0, "true": 1, "false": 0, "1": 1, "0": 0, '"1"': 1, "1.0": 1}
    for raw, g in cases.items():
        res = parse_response('{"step_1": {"actions": ["W"], "step_nums": [1], "gripper": %s}}' % raw, strict=True)
        assert res.sequence[0].gripper == g, raw
    res = lenient_and_strict_error('{"step_1": {"actions": ["W"], "step_nums": [1], "gripper": "maybe"}}',
                                   r"step_1\.gripper: 'maybe' is not a number")
    assert res.sequence[0].gripper is None
    res = parse_response('{"step_1": {"gripper": 1}}', strict=True)
    assert res.sequence[0].is_stay() and res.sequence[0].gripper == 1


def test_key_spellings():
    res = parse_response('{"Action": ["W"], "Step Nums": [2], "Gripper_State": "closed"}', strict=True)
    assert acts(res) == {P.DOLLY_IN: 2} and res.sequence[0].gripper == 1
    res = parse_response('{"actions": ["W"], "num_steps": [4]}', strict=True)
    assert acts(res) == {P.DOLLY_IN: 4}


def test_symbols_names_aliases_and_case_mixed():
    text = ('{"actions": ["w", "TRUCK_LEFT", "turn right", "Look Up", "counter-clockwise", "Ｓ", "Shift"],'
            ' "step_nums": [1, 2, 3, 4, 5, 6, 7]}')
    res = parse_response(text, strict=True)
    assert acts(res) == {P.DOLLY_IN: 1, P.TRUCK_LEFT: 2, P.PAN_RIGHT: 3, P.TILT_UP: 4, P.ROLL_CCW: 5,
                         P.DOLLY_OUT: 6, P.PEDESTAL_DOWN: 7}


# ----- results ------------------------------------------------------------------------------------------
def test_parse_result_fields_and_to_dict():
    res = parse_response('x ```json\n{"actions": ["W"], "step_nums": ["2"]}\n```', sizes=MANIP)
    assert res.ok and res.error is None and res.format == "flat"
    assert res.json_text == '{"actions": ["W"], "step_nums": ["2"]}'
    assert res.sequence.sizes == MANIP
    d = json.loads(json.dumps(res.to_dict()))
    assert d["ok"] is True and d["repairs"] == list(res.repairs) and d["format"] == "flat"
    assert ActionSequence.from_dict(d["sequence"]) == res.sequence


def test_default_sizes_are_navigation():
    res = parse_response('{"actions": ["W"], "step_nums": [1]}')
    assert res.sequence.sizes == StepSizes.navigation()
    assert res.sequence.to_deltas()[0][2, 3] == pytest.approx(0.0626)


def test_strict_accepts_clean_answers_with_no_repairs():
    for text in ('{"actions": ["Truck Left", "Pedestal Up"], "step_nums": [1, 4]}',
                 '{"step_1": {"actions": ["W", "→"], "step_nums": [5, 2], "gripper": 0}, '
                 '"step_2": {"actions": ["grab"]}}',
                 '{"step_1": [0.01, 0, 0, 0, 0, 0, 1]}'):
        res = parse_response(text, strict=True)
        assert res.ok and res.repairs == ()
        assert parse_response(text).repairs == ()


def test_parse_error_is_a_value_error_and_parse_object_works_on_loaded_values():
    assert issubclass(ParseError, ValueError)
    res = parse_object({"actions": ["W"], "step_nums": [2]})
    assert acts(res) == {P.DOLLY_IN: 2}
    assert not parse_object({1, 2}).ok
    with pytest.raises(ParseError, match="expected a JSON object or list"):
        parse_object(5, strict=True)
    with pytest.raises(ParseError):
        ActionSequence.from_json('{"actions": ["W"], "step_nums": [-1]}')


def test_bad_cap_is_the_callers_error():
    for cap in (-1, 2.5, True, "10"):
        with pytest.raises(ValueError, match="cap must be a non-negative integer"):
            parse_response('{"actions": ["W"]}', cap=cap)
    res = parse_response('{"actions": ["W"], "step_nums": [3]}', cap=0)
    assert res.sequence[0].is_stay() and "clamped to the cap 0" in res.repairs[0]


def test_a_typographic_minus_is_read_as_a_minus_and_recorded():
    """Models write U+2212 for minus: as a bare number it is not JSON, as a string it is no float. Lenient reads
    both as '-' and says so; strict refuses; a text without it is untouched."""
    from spatialact.action_space import ParseError, parse_response

    bare = '{"actions": ["W", "D"], "step_nums": [\u22122, 3]}'
    r = parse_response(bare)
    assert r.ok and r.repairs[0] == "$: 1 minus sign(s) U+2212 read as '-'"
    # W × −2 is Dolly Out × 2 (S), as with an ASCII minus
    assert r.sequence == parse_response('{"actions": ["S", "D"], "step_nums": [2, 3]}').sequence
    quoted = '{"actions": ["W"], "step_nums": ["\u22122"]}'
    q = parse_response(quoted)
    assert q.sequence == parse_response('{"actions": ["W"], "step_nums": [-2]}').sequence
    assert "answer.actions[0]: numeric string '\u22122' read as -2" in q.repairs
    for text in (bare, quoted):
        with pytest.raises(ParseError):
            parse_response(text, strict=True)
    prose = 'Move "\u2212" nothing: {"actions": ["W"], "step_nums": [x]}'  # still unreadable: the first error
    assert not parse_response(prose).ok


@pytest.mark.parametrize("text,repair", [
    ('[{"step_1": {"actions": ["W"], "step_nums": [2]}}, {"step_2": {"actions": ["D"], "step_nums": [1]}}]',
     "$: a list of one-step objects read as one object of steps"),
    ('{"steps": [{"step_1": {"actions": ["W"], "step_nums": [2]}}, {"step_2": {"actions": ["D"], "step_nums": [1]}}]}',
     "steps: a list of one-step objects read as one object of steps"),
    ('{"2": {"actions": ["D"], "step_nums": [1]}, "1": {"actions": ["W"], "step_nums": [2]}}',
     "$: numeric keys read as step_N"),
])
def test_steps_written_as_a_list_of_objects_or_under_numeric_keys(text, repair):
    """Two ways models write the stepped format: read as the stepped answer (ordered by step number), recorded."""
    from spatialact.action_space import ParseError, parse_response

    want = parse_response('{"step_1": {"actions": ["W"], "step_nums": [2]}, '
                          '"step_2": {"actions": ["D"], "step_nums": [1]}}')
    r = parse_response(text)
    assert r.ok and r.format == "stepped" and r.repairs == (repair,) and r.sequence == want.sequence
    with pytest.raises(ParseError):
        parse_response(text, strict=True)
    # a list whose objects repeat a step number is not merged (it would lose a step): read item by item as before
    dup = '[{"step_1": {"actions": ["W"], "step_nums": [2]}}, {"step_1": {"actions": ["D"], "step_nums": [1]}}]'
    assert "read as one object" not in " ".join(parse_response(dup).repairs)
