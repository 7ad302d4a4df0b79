"""CircularEval (docs/questions.md) against hand-computed cases: a question is right only if right under every
rotation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spatialact.diagnostics import circular_eval
from spatialact.diagnostics.circular import circular_correct


def test_hand_computed_cases():
    # three questions, four rotations each: only the first is right under all of them
    c = np.array([[True, True, True, True],
                  [True, False, True, True],   # wrong under one rotation: wrong
                  [False, False, False, False]])
    assert circular_eval(c) == pytest.approx(1 / 3)
    assert circular_correct(c).tolist() == [True, False, False]
    # plain accuracy of the same answers would be 7/12; CircularEval is never above it
    assert circular_eval(c) <= c.mean()
    assert circular_eval([[True, True]]) == 1.0
    assert circular_eval([[False, True]]) == 0.0
    assert circular_eval([[True]]) == 1.0


def test_always_a_is_right_under_one_rotation_only():
    # the correct option stands at every letter once over the n rotations; an agent answering "A" is right under
    # exactly one of them, so it scores 0 under CircularEval for any n ≥ 2 (chance: (1/n)^n)
    for n in (2, 3, 4, 5):
        rows = [[(r == k) for r in range(n)] for k in range(n)]  # correct option first shown at letter k
        assert circular_eval(rows) == 0.0


def test_ragged_rows_judgment_and_four_options():
    rows = [[True, True], [True, True, True, True], [True, True, False, True], [0, 1]]
    assert circular_eval(rows) == pytest.approx(2 / 4)


def test_empty_and_bad_input():
    assert math.isnan(circular_eval([]))
    assert math.isnan(circular_eval(np.zeros((0, 4), dtype=bool)))
    with pytest.raises(ValueError, match="question 1, rotation 2"):
        circular_eval([[True, True, True], [True, False, None]])
    with pytest.raises(ValueError, match="question 0, rotation 0"):
        circular_eval([[0.5, 1]])
    with pytest.raises(ValueError, match="no rotations"):
        circular_eval([[True], []])
    with pytest.raises(ValueError, match="shape"):
        circular_eval(np.ones(3, dtype=bool))
