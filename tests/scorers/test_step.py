"""Per-step scores (docs/scoring.md): known answers worked out by hand, edge cases, and the step totals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from spatialact import geometry
from spatialact.scorers.step import (DEFAULT_WEIGHTS, geodesic, normalise_weights, parse_weights, score_step,
                                     step_total)

NAN, INF = float("nan"), float("inf")


def s(p, g, **kw):
    return score_step(p, g, **kw)


# ---------------------------------------------------------------- translation ----------------------------------
def test_perfect_translation_is_exactly_one():
    r = s([0.1, -0.37, 0.0626 * 3], [0.1, -0.37, 0.0626 * 3])
    assert (r["s_d"], r["s_theta"], r["s_step"], r["s_rot"]) == (1.0, 1.0, 1.0, 1.0)
    assert r["flag"] is False


def test_half_length_same_direction():
    # ‖p − g‖ = 0.1, ‖g‖ = 0.2 → s_d = 0.5; same direction → s_θ = 1; s_step = 0.5.
    r = s([0.1, 0, 0], [0.2, 0, 0])
    assert r["s_d"] == pytest.approx(0.5, abs=1e-15)
    assert r["s_theta"] == 1.0
    assert r["s_step"] == pytest.approx(0.5, abs=1e-15)


def test_three_four_five():
    # g = (0.4, 0, 0), p = (0.4, 0.3, 0): ‖p − g‖ = 0.3 → s_d = 1 − 0.3/0.4 = 0.25;
    # ‖p‖ = 0.5, p·g = 0.16 → s_θ = 0.16 / (0.5·0.4) = 0.8; s_step = 0.25 · 0.8 = 0.2.
    r = s([0.4, 0.3, 0], [0.4, 0, 0])
    assert r["s_d"] == pytest.approx(0.25, abs=1e-12)
    assert r["s_theta"] == pytest.approx(0.8, abs=1e-12)
    assert r["s_step"] == pytest.approx(0.2, abs=1e-12)


def test_perpendicular():
    # ‖p − g‖ = 0.2·√2 > ‖g‖ → s_d = 0; s_θ = 0.
    r = s([0, 0.2, 0], [0.2, 0, 0])
    assert r["s_d"] == 0.0 and r["s_theta"] == pytest.approx(0.0, abs=1e-15) and r["s_step"] == 0.0


def test_opposite_directions():
    r = s([-0.1, 0, 0.1], [0.1, 0, -0.1])
    assert r["s_theta"] == pytest.approx(-1.0, abs=1e-15)  # raw cosine, not clipped at 0
    assert r["s_d"] == 0.0 and r["s_step"] == 0.0


def test_overshoot_scores_like_undershoot():
    # 1.5·g and 0.5·g are both 0.5·‖g‖ away.
    a, b = s([0.3, 0, 0], [0.2, 0, 0]), s([0.1, 0, 0], [0.2, 0, 0])
    assert a["s_step"] == pytest.approx(0.5) and b["s_step"] == pytest.approx(0.5)


def test_zero_ground_truth_zero_prediction():
    r = s([0, 0, 0], [0, 0, 0])
    assert (r["s_d"], r["s_theta"], r["s_step"]) == (1.0, 1.0, 1.0)


def test_zero_ground_truth_uses_unit_step():
    # ‖g‖ < ε: s_step = max(0, 1 − ‖p‖/u_t); half a unit → 0.5; s_d = s_θ = 0 since ‖p‖ ≥ ε.
    r = s([0, 0.0313, 0], [0, 0, 0], unit_t=0.0626)
    assert r["s_step"] == pytest.approx(0.5, abs=1e-15)
    assert r["s_d"] == 0.0 and r["s_theta"] == 0.0
    assert s([0, 0, 0.2], [0, 0, 0], unit_t=0.0626)["s_step"] == 0.0
    # below ε counts as zero on both sides
    r = s([1e-10, 0, 0], [0, 5e-10, 0], unit_t=0.0626)
    assert (r["s_d"], r["s_theta"]) == (1.0, 1.0)
    assert r["s_step"] == 1.0  # both below ε: no translation on either side, a perfect match


def test_zero_prediction_nonzero_truth():
    r = s([0, 0, 0], [0, 0, 0.0626])
    assert (r["s_d"], r["s_theta"], r["s_step"]) == (0.0, 0.0, 0.0)


# ---------------------------------------------------------------- rotation -------------------------------------
def test_rotation_quarter_turn_and_half_turn():
    r = s([0.1, 0, 0], [0.1, 0, 0], Rp=geometry.rot_z(math.pi / 2), Rg=np.eye(3))
    assert r["s_rot"] == pytest.approx(0.5, abs=1e-15)
    # 180°, exactly representable: diag(1, −1, −1) → θ = π → s_rot = 0.
    r = s([0.1, 0, 0], [0.1, 0, 0], Rp=np.diag([1.0, -1.0, -1.0]), Rg=np.eye(3))
    assert r["s_rot"] == 0.0
    # 180° about an oblique axis, both rotated away from the identity
    Rg = geometry.rot_y(0.3)
    Rp = Rotation.from_rotvec(np.array([1.0, 2.0, -0.5]) / math.sqrt(5.25) * math.pi).as_matrix() @ Rg
    assert s([0.1, 0, 0], [0.1, 0, 0], Rp=Rp, Rg=Rg)["s_rot"] == pytest.approx(0.0, abs=1e-7)


def test_rotation_none_is_identity():
    assert s([1, 0, 0], [1, 0, 0], Rp=None, Rg=geometry.rot_x(math.pi / 4))["s_rot"] == pytest.approx(0.75)
    assert s([1, 0, 0], [1, 0, 0])["s_rot"] == 1.0


def test_geodesic_matches_scipy():
    rng = np.random.default_rng(1)
    A, B = Rotation.random(50, random_state=rng), Rotation.random(50, random_state=rng)
    for a, b in zip(A, B):
        assert geodesic(a.as_matrix(), b.as_matrix()) == pytest.approx((a * b.inv()).magnitude(), abs=1e-9)
        assert geodesic(a.as_matrix(), a.as_matrix()) == 0.0


def test_small_angle_is_accurate():
    # The atan2 form keeps a 1e-8 rad error (arccos would give 0 or ~1e-8 with large relative error).
    t = geodesic(geometry.rot_y(1e-8), np.eye(3))
    assert t == pytest.approx(1e-8, rel=1e-6)


# ---------------------------------------------------------------- gripper --------------------------------------
@pytest.mark.parametrize("gp,gg,want,scored", [(1, 1, 1.0, True), (0, 0, 1.0, True), (0, 1, 0.0, True),
                                               (None, 1, 0.0, True), (-1, 0, 0.0, True), (1, None, 1.0, False),
                                               (None, None, 1.0, False)])
def test_gripper(gp, gg, want, scored):
    r = s([0.1, 0, 0], [0.1, 0, 0], grip_p=gp, grip_g=gg)
    assert r["s_grip"] == want and r["grip_scored"] is scored


# ---------------------------------------------------------------- NaN / inf ------------------------------------
@pytest.mark.parametrize("where", ["p", "g", "Rp", "Rg", "unit"])
@pytest.mark.parametrize("bad", [NAN, INF, -INF])
def test_non_finite_inputs_score_zero_and_are_flagged(where, bad):
    p, g = [0.1, 0.0, 0.0], [0.1, 0.0, 0.0]
    Rp, Rg, u = np.eye(3), np.eye(3), 0.0626
    if where == "p":
        p[1] = bad
    elif where == "g":
        g[2] = bad
    elif where == "Rp":
        Rp = Rp.copy(); Rp[0, 1] = bad
    elif where == "Rg":
        Rg = Rg.copy(); Rg[2, 2] = bad
    else:
        u = bad
    r = s(p, g, Rp=Rp, Rg=Rg, grip_p=1, grip_g=1, unit_t=u)
    assert r["flag"] is True
    for k in ("s_d", "s_theta", "s_step", "s_rot", "s_grip"):
        assert r[k] == 0.0
    assert step_total(r, "manip") == 0.0 and step_total(r, "nav", "paper+rot") == 0.0


# ---------------------------------------------------------------- totals ---------------------------------------
def test_nav_totals():
    r = s([0.1, 0, 0], [0.2, 0, 0], Rp=geometry.rot_y(math.pi / 2))  # s_step 0.5, s_rot 1 − (π/2)/π = 0.5
    assert step_total(r, "nav", "paper") == pytest.approx(0.5)
    r2 = s([0.2, 0, 0], [0.2, 0, 0], Rp=geometry.rot_y(math.pi / 2))  # s_step 1, s_rot 0.5
    assert step_total(r2, "nav", "paper") == 1.0
    assert step_total(r2, "nav", "paper+rot") == pytest.approx(0.75)
    # weights change the nav paper+rot mix: w_t : w_r = 1 : 3 → (1 + 3·0.5)/4
    assert step_total(r2, "nav", "paper+rot", weights=(1, 3, 5)) == pytest.approx(0.625)


def test_manip_totals():
    # s_step 1, s_rot 0.5, gripper miss → (1 + 0.5 + 0)/3
    r = s([0.2, 0, 0], [0.2, 0, 0], Rp=geometry.rot_y(math.pi / 2), grip_p=0, grip_g=1)
    assert step_total(r, "manip") == pytest.approx(0.5)
    assert step_total(r, "hand", "paper+rot") == pytest.approx(0.5)
    assert step_total(r, "manip", weights=(2, 1, 1)) == pytest.approx((2 + 0.5) / 4)
    # no gripper truth: renormalised over translation and rotation
    r = s([0.2, 0, 0], [0.2, 0, 0], Rp=geometry.rot_y(math.pi / 2), grip_p=1, grip_g=None)
    assert step_total(r, "manip") == pytest.approx(0.75)


def test_perfect_total_is_exactly_one_for_awkward_weights():
    r = s([0.1, 0.2, 0.3], [0.1, 0.2, 0.3], grip_p=1, grip_g=1)
    for w in [(0.1, 0.2, 0.7), (1, 1, 1), (3, 7, 11), (0.3, 0.3, 0.4), None]:
        assert step_total(r, "manip", weights=w) == 1.0
        assert step_total(r, "nav", "paper+rot", weights=w) == 1.0


def test_weights_validation():
    assert normalise_weights(None) == DEFAULT_WEIGHTS
    assert normalise_weights((2, 1, 1)) == (0.5, 0.25, 0.25)
    assert parse_weights("1, 1,2") == (0.25, 0.25, 0.5)
    for bad in [(1, 1), (-1, 1, 1), (0, 0, 1), (NAN, 1, 1), "abc"]:
        with pytest.raises(ValueError):
            normalise_weights(bad)
    with pytest.raises(ValueError, match="--weights"):
        parse_weights("1,x,2")
    with pytest.raises(ValueError):
        step_total({"s_step": 1}, "car")
    with pytest.raises(ValueError):
        step_total({"s_step": 1}, "nav", "lmms-eval")


def test_non_positive_unit_step_is_flagged():
    for u in (0.0, -0.1):
        r = s([0.1, 0, 0], [0, 0, 0], unit_t=u)
        assert r["flag"] is True and r["s_step"] == 0.0
