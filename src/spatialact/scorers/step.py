"""Per-step scores (docs/scoring.md, "Per-step scores"), one step at a time, in plain Python floats: the *reference*
implementation.

Everything here works on one step — a predicted and a ground-truth body-frame translation ``p``, ``g`` (metres,
camera axes +X right, +Y down, +Z forward), rotations ``Rp``, ``Rg`` (3×3, the step's rotation in the same body
frame) and gripper states — with scalar ``math`` code, so it can be read line by line against the spec. The array
code in :mod:`spatialact.scorers.batch` is tested against it.

Scores (ε = 1e-9 m, ``u_t`` the unit translation step in metres):

* ``s_d = max(0, 1 − ‖p − g‖ / ‖g‖)``                 relative distance
* ``s_theta = p·g / (‖p‖ ‖g‖)``                      direction cosine, raw in [−1, 1]
* ``s_step = s_d · max(0, s_theta)``                  translation step score
* ``s_rot = max(0, 1 − θ/π)``, ``θ = ∠(Rp Rgᵀ)``      rotation, geodesic angle in the atan2 form
* ``s_grip = 1`` if the gripper states match, else 0

Edge cases: ``‖g‖ < ε`` → ``s_step = max(0, 1 − ‖p‖/u_t)`` and ``s_d = s_theta = 1`` if ``‖p‖ < ε`` else 0;
``‖g‖ ≥ ε`` and ``‖p‖ < ε`` → ``s_d = s_theta = s_step = 0``; a NaN or infinite input makes every score of the
step 0 and sets ``flag`` (so does a unit step ``u_t ≤ 0``). When ``p == g`` exactly, ``s_theta`` is exactly 1 (not the rounded quotient), so a
perfect answer scores exactly 1.

Gripper decision (the spec is silent on a ground truth without a state): when the truth states no gripper
(None) the gripper is *not scored* — ``s_grip`` is reported as 1 and ``grip_scored`` is False, and the
manipulation step score renormalises its weights over translation and rotation. A None prediction where the
truth has a state is a miss (docs/scoring.md).
"""

from __future__ import annotations

import math
from typing import Sequence

from ..vocab import KINDS, PROFILES

__all__ = ["EPS", "DEFAULT_WEIGHTS", "score_step", "step_total", "normalise_weights",
           "parse_weights"]

#: Translations shorter than this (metres) count as "no translation".
EPS = 1e-9
#: Manipulation / hand step weights (translation, rotation, gripper): the spec's default, equal thirds.
DEFAULT_WEIGHTS = (1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0)
#: Step-score profiles handled here (``lmms-eval`` is a whole-answer profile, see :mod:`.lmms_eval`).

_I3 = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


def _finite(*xs: float) -> bool:
    return all(math.isfinite(x) for x in xs)


def _rot_rows(R) -> tuple[tuple[float, float, float], ...]:
    if R is None:
        return _I3
    rows = tuple(tuple(float(R[i][j]) for j in range(3)) for i in range(3))
    return rows


def _geodesic_parts(a, b) -> tuple[float, float]:
    # M[i][j] = sum_k a[i][k] b[j][k]; the same summation order for M[i][j] and M[j][i] keeps M exactly
    # symmetric when a == b, so a perfect match gives sin θ = 0 exactly.
    M = [[a[i][0] * b[j][0] + a[i][1] * b[j][1] + a[i][2] * b[j][2] for j in range(3)] for i in range(3)]
    vx = M[2][1] - M[1][2]
    vy = M[0][2] - M[2][0]
    vz = M[1][0] - M[0][1]
    return 0.5 * math.sqrt(vx * vx + vy * vy + vz * vz), 0.5 * (M[0][0] + M[1][1] + M[2][2] - 1.0)


def geodesic(Rp, Rg) -> float:
    """Angle (radians, [0, π]) of ``Rp Rgᵀ``: ``atan2(‖vee(M − Mᵀ)‖/2, (tr M − 1)/2)``, exactly 0 for ``Rp == Rg``."""
    return math.atan2(*_geodesic_parts(_rot_rows(Rp), _rot_rows(Rg)))


def _grip(g) -> int | None:
    if g is None:
        return None
    g = int(g)
    return None if g < 0 else g


def score_step(p: Sequence[float], g: Sequence[float], Rp=None, Rg=None, grip_p=None, grip_g=None,
               unit_t: float = 0.0626) -> dict:
    """Score one step. Returns ``{"s_d", "s_theta", "s_step", "s_rot", "s_grip", "grip_scored", "flag"}``.

    ``p``, ``g``: predicted / ground-truth body-frame translations (3,), metres. ``Rp``, ``Rg``: rotations
    (3×3 nested sequences or arrays; None = identity). ``grip_p``, ``grip_g``: None (or −1) for no state, 0 open,
    1 closed. ``unit_t``: the task's unit translation step (metres), used when the truth does not translate.
    """
    px, py, pz = (float(x) for x in p)
    gx, gy, gz = (float(x) for x in g)
    a, b = _rot_rows(Rp), _rot_rows(Rg)
    gp, gg = _grip(grip_p), _grip(grip_g)
    grip_scored = gg is not None
    s_grip = 1.0 if gg is None else (1.0 if gp == gg else 0.0)
    unit_t = float(unit_t)
    flagged = {"s_d": 0.0, "s_theta": 0.0, "s_step": 0.0, "s_rot": 0.0, "s_grip": 0.0,
               "grip_scored": grip_scored, "flag": True}
    flat = [px, py, pz, gx, gy, gz, unit_t] + [x for r in a for x in r] + [x for r in b for x in r]
    if not _finite(*flat) or unit_t <= 0.0:
        return flagged

    np_ = math.sqrt(px * px + py * py + pz * pz)
    ng = math.sqrt(gx * gx + gy * gy + gz * gz)
    dx, dy, dz = px - gx, py - gy, pz - gz
    nd = math.sqrt(dx * dx + dy * dy + dz * dz)
    dot = px * gx + py * gy + pz * gz
    sin_t, cos_t = _geodesic_parts(a, b)
    if not _finite(np_, ng, nd, dot, sin_t, cos_t):
        return flagged  # finite but so large that squares overflow: as good as infinite
    if ng < EPS:
        # A translation below ε is no translation: both below ε is a perfect match, exactly 1.
        s_step = 1.0 if np_ < EPS else max(0.0, 1.0 - np_ / unit_t)
        s_d = s_theta = 1.0 if np_ < EPS else 0.0
    elif np_ < EPS:
        s_d = s_theta = s_step = 0.0
    else:
        s_d = max(0.0, 1.0 - nd / ng)
        if nd == 0.0:
            s_theta = 1.0  # p == g: exactly 1, not the rounded quotient
        else:
            s_theta = min(1.0, max(-1.0, dot / (np_ * ng)))
        s_step = s_d * max(0.0, s_theta)
    theta = math.atan2(sin_t, cos_t)
    s_rot = max(0.0, 1.0 - theta / math.pi)
    return {"s_d": s_d, "s_theta": s_theta, "s_step": s_step, "s_rot": s_rot, "s_grip": s_grip,
            "grip_scored": grip_scored, "flag": False}


def normalise_weights(weights=None) -> tuple[float, float, float]:
    """Weights ``(w_t, w_r, w_g)`` → non-negative floats summing to 1 (None → equal thirds).

    Raises ValueError for a wrong length, a negative or non-finite weight, or translation and rotation both 0
    (a step score from the gripper alone is not a motion score).
    """
    if weights is None:
        return DEFAULT_WEIGHTS
    try:
        w = tuple(float(x) for x in weights)
    except (TypeError, ValueError):
        raise ValueError(f"weights must be three numbers (translation, rotation, gripper), got {weights!r}") from None
    if len(w) != 3:
        raise ValueError(f"weights must be three numbers (translation, rotation, gripper), got {len(w)}")
    if not all(math.isfinite(x) and x >= 0 for x in w):
        raise ValueError(f"weights must be finite and non-negative, got {w}")
    if w[0] + w[1] <= 0:
        raise ValueError(f"weights must give translation or rotation a positive weight, got {w}")
    s = w[0] + w[1] + w[2]
    return (w[0] / s, w[1] / s, w[2] / s)


def parse_weights(text: str) -> tuple[float, float, float]:
    """``"wt,wr,wg"`` (the CLI's ``--weights``) → normalised weights."""
    parts = [x.strip() for x in str(text).split(",")]
    if len(parts) != 3:
        raise ValueError(f"--weights: expected three comma-separated numbers wt,wr,wg, got {text!r}")
    try:
        vals = [float(x) for x in parts]
    except ValueError:
        raise ValueError(f"--weights: not numbers: {text!r}") from None
    return normalise_weights(vals)


def step_total(scores: dict, kind: str = "nav", profile: str = "paper", weights=None) -> float:
    """The step score (docs/scoring.md) from :func:`score_step`'s dict.

    * ``nav``, profile ``paper``: ``s_step``;
    * ``nav``, profile ``paper+rot``: ``(w_t·s_step + w_r·s_rot) / (w_t + w_r)`` — ``(s_step + s_rot)/2`` with
      the default weights;
    * ``manip`` / ``hand`` (either profile): ``w_t·s_step + w_r·s_rot + w_g·s_grip``, with the gripper term
      dropped and the weights renormalised when the truth states no gripper.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    if scores.get("flag"):
        return 0.0
    wt, wr, wg = normalise_weights(weights)
    if kind == "nav":
        if profile == "paper":
            return scores["s_step"]
        return (wt * scores["s_step"] + wr * scores["s_rot"]) / (wt + wr)
    if not scores.get("grip_scored", True):
        return (wt * scores["s_step"] + wr * scores["s_rot"]) / (wt + wr)
    # Divided by the same sum of weights, so that all-ones gives exactly 1 whatever the rounding of the weights.
    return (wt * scores["s_step"] + wr * scores["s_rot"] + wg * scores["s_grip"]) / (wt + wr + wg)
