"""Batch scoring (docs/scoring.md) against the per-record reference, numpy and torch; property tests (hypothesis)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from spatialact import geometry
from spatialact.action_space import ActionSequence, Step, StepSizes
from spatialact.scorers import (KIND_CODES, score_episode, score_episodes_batch, score_step, score_steps_batch,
                                sequence_arrays, step_total, step_totals_batch)

KEYS = ("s_d", "s_theta", "s_step", "s_rot", "s_grip")


def _random_case(n, seed):
    """Random steps with every edge case mixed in: equal, zero, opposite, 180°, NaN, inf, grippers −1/0/1."""
    rng = np.random.default_rng(seed)
    p = rng.normal(scale=0.2, size=(n, 3))
    g = rng.normal(scale=0.2, size=(n, 3))
    Rp = Rotation.random(n, random_state=seed).as_matrix()
    Rg = Rotation.random(n, random_state=seed + 1).as_matrix()
    k = n // 10
    p[:k] = g[:k]                                 # exact translation
    Rp[:k] = Rg[:k]                               # exact rotation
    g[k:2 * k] = 0.0                              # zero truth
    p[int(1.5 * k):int(2.5 * k)] = 0.0            # zero prediction (some with zero truth too)
    p[2 * k:3 * k] = -g[2 * k:3 * k]              # opposite
    Rp[3 * k:4 * k] = Rg[3 * k:4 * k] @ np.diag([1.0, -1.0, -1.0])  # 180° error
    p[4 * k, 1] = np.nan
    g[4 * k + 1, 0] = np.inf
    Rp[4 * k + 2, 2, 2] = -np.inf
    Rg[4 * k + 3, 0, 1] = np.nan
    p[4 * k + 4] = 1e200                          # finite, but squares overflow
    p[5 * k:6 * k] = g[5 * k:6 * k] + rng.normal(scale=1e-12, size=(k, 3))  # nearly exact
    gp = rng.integers(-1, 2, n)
    gg = rng.integers(-1, 2, n)
    u = rng.uniform(0.01, 0.1, n)
    u[4 * k + 5] = 0.0                            # a non-positive unit step
    return p, g, Rp, Rg, gp, gg, u


def _reference(p, g, Rp, Rg, gp, gg, u):
    rows = [score_step(p[i], g[i], Rp[i], Rg[i], gp[i], gg[i], u[i]) for i in range(len(p))]
    return {k: np.array([r[k] for r in rows], dtype=np.float64) for k in KEYS + ("grip_scored", "flag")}, rows


def _check_against_reference(got, ref, tol=1e-9):
    for k in KEYS:
        a = np.asarray(got[k], dtype=np.float64)
        assert np.all(np.isfinite(a)), k
        # s_rot uses the asin form in batch: ~1e-8 rad near 180° against the reference's atan2
        assert np.max(np.abs(a - ref[k])) <= (1e-7 if k == "s_rot" else tol), k
    assert np.array_equal(np.asarray(got["flag"]), ref["flag"].astype(bool))
    assert np.array_equal(np.asarray(got["grip_scored"]), ref["grip_scored"].astype(bool))


def test_numpy_batch_matches_reference_with_edge_cases():
    case = _random_case(3000, 7)
    got = score_steps_batch(*case[:4], grip_p=case[4], grip_g=case[5], unit_t=case[6])
    ref, rows = _reference(*case)
    _check_against_reference(got, ref)
    k = 300
    assert np.all(got["s_step"][:k] == 1.0) and np.all(got["s_rot"][:k] == 1.0)  # exactly 1
    assert got["flag"].sum() == 6
    for kind in ("nav", "manip", "hand"):
        for prof in ("paper", "paper+rot"):
            tot = step_totals_batch(got, kind, prof, weights=(0.2, 0.5, 0.3))
            want = [step_total(r, kind, prof, (0.2, 0.5, 0.3)) for r in rows]
            assert np.max(np.abs(tot - want)) <= 1e-7


def test_numpy_batch_block_boundaries(monkeypatch):
    import spatialact.scorers.batch as B

    case = _random_case(1000, 3)
    whole = score_steps_batch(*case[:4], grip_p=case[4], grip_g=case[5], unit_t=case[6])
    monkeypatch.setattr(B, "BLOCK", 77)
    blocked = score_steps_batch(*case[:4], grip_p=case[4], grip_g=case[5], unit_t=case[6])
    for k in KEYS + ("flag",):
        assert np.array_equal(whole[k], blocked[k])


def test_optional_rotations_and_grippers():
    p = np.array([[0.1, 0, 0], [0, 0, 0]])
    r = score_steps_batch(p, p)
    assert np.all(r["s_rot"] == 1.0) and np.all(r["s_grip"] == 1.0) and not r["grip_scored"].any()
    r = score_steps_batch(p, p, Rp=np.stack([geometry.rot_z(math.pi / 2)] * 2))
    assert r["s_rot"] == pytest.approx([0.5, 0.5])
    r = score_steps_batch(p, p, grip_p=None, grip_g=[1, None])
    assert list(r["s_grip"]) == [0.0, 1.0] and list(r["grip_scored"]) == [True, False]
    with pytest.raises(ValueError):
        score_steps_batch(np.zeros((2, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError):
        score_steps_batch(p, p, Rp=np.zeros((3, 3, 3)))
    with pytest.raises(ValueError):
        score_steps_batch(p, p, backend="jax")


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_torch_matches_numpy(device):
    torch = pytest.importorskip("torch")
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    case = _random_case(2000, 11)
    ref_np = score_steps_batch(*case[:4], grip_p=case[4], grip_g=case[5], unit_t=case[6])
    got = score_steps_batch(*case[:4], grip_p=case[4], grip_g=case[5], unit_t=case[6], backend="torch",
                            device=device)
    assert isinstance(got["s_d"], torch.Tensor) and got["s_d"].dtype == torch.float64
    assert got["s_d"].device.type == device
    got = {k: v.cpu().numpy() for k, v in got.items()}
    for k in KEYS:
        assert np.max(np.abs(got[k] - ref_np[k])) <= 1e-6, k
    assert np.array_equal(got["flag"], ref_np["flag"]) and np.array_equal(got["grip_scored"], ref_np["grip_scored"])
    ref, _ = _reference(*case)
    _check_against_reference(got, ref)


def test_torch_default_device_and_tensor_inputs():
    torch = pytest.importorskip("torch")
    p = torch.tensor([[0.1, 0.0, 0.0]], dtype=torch.float32)
    r = score_steps_batch(p, p, backend="torch")
    want = "cuda" if torch.cuda.is_available() else "cpu"
    assert r["s_step"].device.type == want and float(r["s_step"][0]) == 1.0


# ---------------------------------------------------------------- properties -----------------------------------
finite = st.floats(-5.0, 5.0, allow_nan=False, width=64)
vec = st.tuples(finite, finite, finite)
rotvec = st.tuples(st.floats(-3.2, 3.2), st.floats(-3.2, 3.2), st.floats(-3.2, 3.2))
grip = st.sampled_from([-1, 0, 1])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(p=vec, g=vec, rp=rotvec, rg=rotvec, gp=grip, gg=grip, u=st.floats(0.001, 1.0))
def test_scores_in_range_and_batch_agrees(p, g, rp, rg, gp, gg, u):
    Rp = Rotation.from_rotvec(rp).as_matrix()
    Rg = Rotation.from_rotvec(rg).as_matrix()
    ref = score_step(p, g, Rp, Rg, gp, gg, u)
    got = score_steps_batch(np.array([p]), np.array([g]), Rp[None], Rg[None], [gp], [gg], u)
    for k in KEYS:
        lo = -1.0 if k == "s_theta" else 0.0
        assert lo <= ref[k] <= 1.0 and lo <= got[k][0] <= 1.0
        assert abs(got[k][0] - ref[k]) <= (1e-7 if k == "s_rot" else 1e-9)
    for kind in ("nav", "manip"):
        assert 0.0 <= step_total(ref, kind, "paper+rot") <= 1.0


@settings(max_examples=100, deadline=None)
@given(g=vec, rg=rotvec, gg=grip, u=st.floats(0.001, 1.0))
def test_perfect_answer_scores_exactly_one(g, rg, gg, u):
    Rg = Rotation.from_rotvec(rg).as_matrix()
    ref = score_step(g, g, Rg, Rg, gg, gg, u)
    got = score_steps_batch(np.array([g]), np.array([g]), Rg[None], Rg[None], [gg], [gg], u)
    for kind in ("nav", "manip", "hand"):
        for prof in ("paper", "paper+rot"):
            assert step_total(ref, kind, prof) == 1.0
            assert step_totals_batch(got, kind, prof)[0] == 1.0
    assert ref["s_step"] == ref["s_rot"] == ref["s_grip"] == 1.0


@settings(max_examples=100, deadline=None)
@given(p=vec, g=vec, rp=rotvec, rg=rotvec, q=rotvec)
def test_invariant_under_a_common_rotation(p, g, rp, rg, q):
    Q = Rotation.from_rotvec(q).as_matrix()
    Rp, Rg = Rotation.from_rotvec(rp).as_matrix(), Rotation.from_rotvec(rg).as_matrix()
    a = score_step(p, g, Rp, Rg)
    b = score_step(Q @ np.array(p), Q @ np.array(g), Q @ Rp, Q @ Rg)
    for k in KEYS:
        assert b[k] == pytest.approx(a[k], abs=1e-7)
    P = np.array([p, Q @ np.array(p)])
    G = np.array([g, Q @ np.array(g)])
    c = score_steps_batch(P, G, np.stack([Rp, Q @ Rp]), np.stack([Rg, Q @ Rg]))
    for k in KEYS:
        assert c[k][1] == pytest.approx(c[k][0], abs=1e-7)


# ---------------------------------------------------------------- episodes in batch ----------------------------
def _random_sequence(rng, sizes, vector=False):
    n = int(rng.integers(0, 5))
    steps = []
    for _ in range(n):
        g = [None, 0, 1][int(rng.integers(0, 3))]
        if vector:
            steps.append(Step.from_motion(rng.normal(scale=0.05, size=6), g))
        else:
            steps.append(Step.from_signed(rng.integers(-4, 5, 6) * (rng.random(6) < 0.5), g))
    return ActionSequence(tuple(steps), sizes)


@pytest.mark.parametrize("profile", ["paper", "paper+rot"])
def test_episode_batch_matches_score_episode(profile):
    rng = np.random.default_rng(2)
    kinds, preds, gts = [], [], []
    for i in range(150):
        kind = ["nav", "manip", "hand"][i % 3]
        sizes = StepSizes.for_kind(kind)
        gt = _random_sequence(rng, sizes)
        pred = gt if i % 7 == 0 else _random_sequence(rng, sizes, vector=i % 5 == 0)
        kinds.append(kind), preds.append(pred), gts.append(gt)
    arr = [sequence_arrays(s) for s in preds], [sequence_arrays(s) for s in gts]
    for s, (m, gr) in zip(preds + gts, arr[0] + arr[1]):
        assert np.array_equal(m, s.as_motions()) and np.array_equal(gr, s.grippers())
    out = score_episodes_batch(
        np.concatenate([m for m, _ in arr[0]]), np.concatenate([g for _, g in arr[0]]), [len(s) for s in preds],
        np.concatenate([m for m, _ in arr[1]]), np.concatenate([g for _, g in arr[1]]), [len(s) for s in gts],
        [KIND_CODES[k] for k in kinds], [s.sizes.translation for s in gts], profile=profile, weights=(1, 2, 1))
    for i, (pred, gt, kind) in enumerate(zip(preds, gts, kinds)):
        e = score_episode(pred, gt, kind, profile, weights=(1, 2, 1))
        assert out["total"][i] == pytest.approx(e.total, abs=1e-7)
        for k in ("s_d", "s_theta", "s_step", "s_rot"):
            assert out[k][i] == pytest.approx(getattr(e, k), abs=1e-7)
        if kind == "nav":
            assert math.isnan(out["s_grip"][i]) and e.s_grip is None
        else:
            assert out["s_grip"][i] == pytest.approx(e.s_grip, abs=1e-12)
        assert out["net_translation_error"][i] == pytest.approx(e.net_translation_error, abs=1e-9)
        assert out["net_rotation_error"][i] == pytest.approx(e.net_rotation_error, abs=1e-7)
        assert (out["n_pred"][i], out["n_gt"][i]) == (e.n_pred, e.n_gt)
        if pred is gt:
            assert out["total"][i] == 1.0


def test_light_core_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys, numpy as np, spatialact.scorers as s, spatialact.cli.score; "
            "s.score_steps_batch(np.zeros((2, 3)), np.ones((2, 3))); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
