"""CircularEval (3DSRBench after MMBench; docs/diagnostics.md): an option-style question counts as right only if it is
answered right under every rotation of its options.

A question with options ``[o_0, …, o_{n−1}]`` is asked ``n`` times; rotation ``r`` shows ``o_r, o_{r+1}, …`` as
A, B, … (:func:`spatialact.questions.rotate_options`), so the correct option stands at every letter once and an
agent that always answers "A" is right under at most one rotation — never under all of them.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["circular_eval", "circular_correct"]


def _row(x, i: int) -> np.ndarray:
    a = np.asarray(x, dtype=object).reshape(-1)
    if a.size == 0:
        raise ValueError(f"circular_eval: question {i} has no rotations")
    for j, v in enumerate(a):
        if isinstance(v, (bool, np.bool_)):
            continue
        if isinstance(v, (int, np.integer)) and v in (0, 1):
            continue
        raise ValueError(f"circular_eval: question {i}, rotation {j}: expected a bool (right or wrong), got {v!r}")
    return a.astype(bool)


def circular_correct(correct) -> np.ndarray:
    """Per question, whether it is right under every rotation: ``correct`` as for :func:`circular_eval` →
    (n_questions,) bool."""
    if isinstance(correct, np.ndarray) and correct.dtype == bool:
        if correct.ndim != 2:
            raise ValueError(f"circular_eval: expected (n_questions, n_rotations) bools, got shape {correct.shape}")
        if correct.shape[0] and not correct.shape[1]:
            raise ValueError("circular_eval: questions with no rotations")
        return correct.all(axis=1)
    rows = list(correct)
    return np.array([bool(_row(r, i).all()) for i, r in enumerate(rows)], dtype=bool)


def circular_eval(correct) -> float:
    """The fraction of questions right under every rotation of their options.

    ``correct``: (n_questions, n_rotations) bools — whether each rotation's answer was right — or a sequence of
    per-question sequences when questions have different numbers of options (a judgment has two rotations, a
    four-option question four). A question wrong under any one rotation is wrong; a rotation without an answer
    must be passed as False (not left out). NaN when there are no questions. Entries other than bools (or 0 / 1)
    raise ValueError naming the question and rotation.
    """
    per_q = circular_correct(correct)
    return float(per_q.mean()) if per_q.size else math.nan
