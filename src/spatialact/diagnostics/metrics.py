"""The diagnostic figures as plain functions on numbers and action sequences (docs/diagnostics.md).

* :func:`rpdr` — Spatial457's relative performance dropping rate between consecutive difficulty levels, capped at 1;
* :func:`chance_normalised` — a score placed between the random and the oracle calibration rows;
* :func:`viewpoint_delta` — 3DSRBench's relative drop from common to uncommon viewpoints;
* :func:`label_counts`, :func:`label_cv`, :func:`normalised_label_cv` — Spatial457's coefficient of variation of the
  predicted labels (a label is a motion primitive present in a step);
* :func:`lr_units`, :func:`lr_bias` — the left/right bias of FlipEval over Truck, Pan and Roll units;
* :func:`step_signs`, :func:`sign_confusion` — the −/0/+ confusion matrix per motion axis.

Conventions. A *zero denominator gives NaN*, never an exception and never 0: a level nobody scored on has no drop
rate, a model that predicts nothing has no bias. Scores are floats in [0, 1]; NaN inputs propagate to NaN.
Motion axes are ``AXES = (truck, pedestal, dolly, tilt, pan, roll)`` in the body frame (OpenCV axes: +X right,
+Y down, +Z forward); "left" is the negative side of the three axes a mirror flips — Truck Left (−X), Pan Left
(negative about +Y) and Roll CW (negative about +Z: the image turns clockwise, the camera's left side dips).
A vector-format step (continuous motion) counts ``|motion| / unit`` units on an axis, and a primitive is present in
it when that is at least half a unit (the count it rounds to is not 0).

Light core only (numpy): no simulator, no plotting.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

from ..action_space import AXES, MOTION_PRIMITIVES, ActionSequence, Primitive, Step

__all__ = ["rpdr", "chance_normalised", "viewpoint_delta", "label_counts", "label_cv", "normalised_label_cv",
           "lr_units", "lr_bias", "step_signs", "sign_confusion", "LEFT_PRIMITIVES", "RIGHT_PRIMITIVES",
           "SIGN_LABELS", "PRESENT_AT_UNITS"]

#: The primitives a mirror turns into their opposite, split by side (see the module docstring).
LEFT_PRIMITIVES = (Primitive.TRUCK_LEFT, Primitive.PAN_LEFT, Primitive.ROLL_CW)
RIGHT_PRIMITIVES = (Primitive.TRUCK_RIGHT, Primitive.PAN_RIGHT, Primitive.ROLL_CCW)
#: Rows and columns of a sign confusion matrix.
SIGN_LABELS = ("-", "0", "+")
#: A vector step's axis counts as a present primitive from this many units on (it rounds to a non-zero count).
PRESENT_AT_UNITS = 0.5

_COL = {p: k for k, p in enumerate(MOTION_PRIMITIVES)}
_LEFT = np.array([_COL[p] for p in LEFT_PRIMITIVES])
_RIGHT = np.array([_COL[p] for p in RIGHT_PRIMITIVES])


def _floats(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _scalar_or_array(a: np.ndarray, like) -> float | np.ndarray:
    return float(a) if np.ndim(like) == 0 else a


# ----- levels and viewpoints ---------------------------------------------------------------------------------
def rpdr(level_scores: Sequence[float]) -> list[float]:
    """Relative performance dropping rate (Spatial457): ``[S_1, …, S_L]`` → ``[min(1, S_{l+1} / S_l)]`` for
    l = 1 … L−1 (a list of L−1 floats).

    The ratio is capped at 1 (a level scored higher than the one before it is "no drop", not a gain), and it is NaN
    where ``S_l = 0`` (nothing to drop from) or either score is NaN. Scores must be ≥ 0."""
    s = _floats(level_scores).reshape(-1)
    if np.any(s[np.isfinite(s)] < 0):
        raise ValueError(f"rpdr: level scores must be ≥ 0, got {s.tolist()}")
    out = []
    for prev, nxt in zip(s[:-1], s[1:]):
        if not (math.isfinite(prev) and math.isfinite(nxt)) or prev == 0.0:
            out.append(math.nan)
        else:
            out.append(min(1.0, float(nxt) / float(prev)))
    return out


def chance_normalised(score, s_random, s_oracle) -> float | np.ndarray:
    """``(S − S_random) / (S_oracle − S_random)``: 0 at the random baseline, 1 at the oracle (negative below
    random). NaN where the oracle and random rows are equal (no room between them) or an input is NaN.
    Scalars give a float, arrays an array (broadcast)."""
    s, r, o = (_floats(v) for v in (score, s_random, s_oracle))
    den = o - r
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(den != 0.0, (s - r) / np.where(den != 0.0, den, 1.0), np.nan)
    return _scalar_or_array(out, np.broadcast(s, r, o))


def viewpoint_delta(s_common, s_uncommon) -> float | np.ndarray:
    """3DSRBench's relative drop ``δ = (S_uncommon − S_common) / S_common`` (negative: worse from uncommon
    viewpoints). NaN where ``S_common = 0`` or an input is NaN. Scalars give a float, arrays an array."""
    c, u = _floats(s_common), _floats(s_uncommon)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(c != 0.0, (u - c) / np.where(c != 0.0, c, 1.0), np.nan)
    return _scalar_or_array(out, np.broadcast(c, u))


# ----- labels -----------------------------------------------------------------------------------------------
def _step_units(step: Step, units: np.ndarray) -> np.ndarray:
    """The 12 primitive amounts of a step in units (counts, or |motion| / unit on the side of its sign)."""
    if step.counts is not None:
        return np.asarray(step.counts, dtype=np.float64)
    m = np.asarray(step.motion, dtype=np.float64) / units
    out = np.zeros(12)
    out[0::2] = np.maximum(m, 0.0)  # counts column 2·axis is the + primitive, 2·axis+1 the − one
    out[1::2] = np.maximum(-m, 0.0)
    return out


def _as_sequences(seqs) -> list[ActionSequence]:
    if isinstance(seqs, ActionSequence):
        return [seqs]
    out = list(seqs)
    for s in out:
        if not isinstance(s, ActionSequence):
            raise TypeError(f"expected ActionSequence objects, got {type(s).__name__}")
    return out


def label_counts(seqs: ActionSequence | Iterable[ActionSequence]) -> np.ndarray:
    """How many steps each of the 12 motion primitives is present in (``MOTION_PRIMITIVES`` order), over one or
    more sequences: a label is a primitive present in a step, counted once per step whatever its step_num."""
    out = np.zeros(12, dtype=np.int64)
    for seq in _as_sequences(seqs):
        units = seq.sizes.units()
        for step in seq.steps:
            u = _step_units(step, units)
            out += (u >= (1.0 if step.counts is not None else PRESENT_AT_UNITS)).astype(np.int64)
    return out


def label_cv(counts) -> float:
    """Coefficient of variation (Spatial457 eq. 1) of label counts: population standard deviation / mean over all
    labels given (zeros included). 0 when every label is equally frequent; NaN when the mean is 0 (nothing
    predicted) or no label is given."""
    c = _floats(counts).reshape(-1)
    if c.size == 0 or not np.all(np.isfinite(c)):
        return math.nan
    mean = float(c.mean())
    if mean == 0.0:
        return math.nan
    return float(c.std()) / mean


def normalised_label_cv(pred_counts, true_counts) -> float:
    """The CV of ``predicted / true`` count over the labels present in the ground truth (true count > 0): 0 when the
    predictions follow the ground truth's label frequencies whatever they are, so a benchmark's own imbalance does
    not count as the model's bias. NaN when the ground truth has no label or nothing is predicted."""
    p, t = _floats(pred_counts).reshape(-1), _floats(true_counts).reshape(-1)
    if p.shape != t.shape:
        raise ValueError(f"normalised_label_cv: {p.size} predicted counts but {t.size} true counts")
    keep = t > 0
    if not keep.any():
        return math.nan
    return label_cv(p[keep] / t[keep])


# ----- left / right ----------------------------------------------------------------------------------------
def lr_units(seqs: ActionSequence | Iterable[ActionSequence]) -> tuple[float, float]:
    """``(n_left, n_right)``: units of Truck Left + Pan Left + Roll CW, and of Truck Right + Pan Right + Roll CCW,
    summed over the steps of one or more sequences (step_nums, not steps: ``Truck Left ×3`` is 3)."""
    left = right = 0.0
    for seq in _as_sequences(seqs):
        units = seq.sizes.units()
        for step in seq.steps:
            u = _step_units(step, units)
            left += float(u[_LEFT].sum())
            right += float(u[_RIGHT].sum())
    return left, right


def lr_bias(seqs: ActionSequence | Iterable[ActionSequence]) -> float:
    """Left/right bias ``(n_left − n_right) / (n_left + n_right)`` over Truck, Pan and Roll units (:func:`lr_units`):
    +1 only left, −1 only right, 0 balanced; NaN when no unit moves left or right."""
    left, right = lr_units(seqs)
    tot = left + right
    return (left - right) / tot if tot > 0 else math.nan


# ----- sign confusion ---------------------------------------------------------------------------------------
def step_signs(seq: ActionSequence, n: int | None = None) -> np.ndarray:
    """(n, 6) int signs −1 / 0 / +1 of the net motion per axis (``AXES`` order) of each step, padded with 0 (no
    motion) up to ``n`` steps. A counts step's sign is that of its net count; a vector step's is that of its
    motion where it reaches half a unit, else 0."""
    n = len(seq) if n is None else int(n)
    out = np.zeros((max(n, 0), 6), dtype=np.int64)
    units = seq.sizes.units()
    for k, step in enumerate(seq.steps[:n]):
        if step.counts is not None:
            out[k] = np.sign(step.signed_counts())
        else:
            m = np.asarray(step.motion, dtype=np.float64) / units
            out[k] = np.where(np.abs(m) >= PRESENT_AT_UNITS, np.sign(m), 0).astype(np.int64)
    return out


def sign_confusion(pred: ActionSequence | Iterable[ActionSequence],
                   gt: ActionSequence | Iterable[ActionSequence]) -> np.ndarray:
    """Confusion counts (6, 3, 3) ``[axis, true sign, predicted sign]`` (signs in ``SIGN_LABELS`` order −, 0, +;
    axes in ``AXES`` order) over pairs of sequences, steps aligned by index as the scores align them
    (docs/scoring.md): over ``max(len(pred), len(gt))`` steps, a missing step counting as no motion (sign 0)."""
    preds, gts = _as_sequences(pred), _as_sequences(gt)
    if len(preds) != len(gts):
        raise ValueError(f"sign_confusion: {len(preds)} predicted sequences but {len(gts)} ground truths")
    out = np.zeros((len(AXES), 3, 3), dtype=np.int64)
    ax = np.arange(len(AXES))
    for p, g in zip(preds, gts):
        k = max(len(p), len(g))
        sp, sg = step_signs(p, k) + 1, step_signs(g, k) + 1
        for row_g, row_p in zip(sg, sp):
            np.add.at(out, (ax, row_g, row_p), 1)
    return out
