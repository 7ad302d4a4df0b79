"""Batch scoring (docs/scoring.md, "Batch scoring"): the per-step scores over N steps at once, numpy float64 or torch.

The formulas, edge cases and decisions are those of :mod:`spatialact.scorers.step` (the per-record reference,
which the tests compare this module against): translations ``p``, ``g`` (N, 3) in metres in the body frame of
the pose each step starts from, rotations ``Rp``, ``Rg`` (N, 3, 3), gripper states (N,) with −1 for "not stated".

numpy: float64, vectorised over blocks of steps small enough to stay in the CPU cache (no per-step Python).
torch: float64 on CUDA when it is available (else CPU), or on the ``device`` given; torch is imported only here,
inside the call, so the light core never needs it. With ``backend="torch"`` the results are torch tensors on that
device; with ``backend="numpy"`` numpy arrays.
"""

from __future__ import annotations

import math

import numpy as np

from ..records import STEP_SCORE_FIELDS
from ..vocab import KINDS, PROFILES
from .step import EPS, normalise_weights

__all__ = ["score_steps_batch", "step_totals_batch", "score_episodes_batch", "sequence_arrays", "rotations_from_motions",
           "BLOCK", "KIND_CODES"]

#: Steps per numpy block: the block's temporaries stay in cache (measured best between 8K and 32K).
BLOCK = 16384
#: Integer codes for task kinds in array form.
KIND_CODES = {k: i for i, k in enumerate(KINDS)}

_KEYS = STEP_SCORE_FIELDS


def rotations_from_motions(motions) -> np.ndarray:
    """Rotation matrices (N, 3, 3) of body-frame motions (N, 6) ``(tx, ty, tz, tilt, pan, roll)``.

    ``R = R_y(pan) R_x(tilt) R_z(roll)`` written out element by element (same matrix as
    :func:`spatialact.geometry.ptr_to_matrix`, without the three matrix products).
    """
    m = np.asarray(motions, dtype=np.float64).reshape(-1, 6)
    ct, st = np.cos(m[:, 3]), np.sin(m[:, 3])
    cp, sp = np.cos(m[:, 4]), np.sin(m[:, 4])
    cr, sr = np.cos(m[:, 5]), np.sin(m[:, 5])
    R = np.empty((len(m), 3, 3))
    spst, cpst = sp * st, cp * st
    R[:, 0, 0] = cp * cr + spst * sr
    R[:, 0, 1] = spst * cr - cp * sr
    R[:, 0, 2] = sp * ct
    R[:, 1, 0] = ct * sr
    R[:, 1, 1] = ct * cr
    R[:, 1, 2] = -st
    R[:, 2, 0] = cpst * sr - sp * cr
    R[:, 2, 1] = sp * sr + cpst * cr
    R[:, 2, 2] = cp * ct
    return R


def _as_grip(x, n: int) -> np.ndarray | None:
    if x is None:
        return None
    a = np.asarray([(-1 if v is None else v) for v in x] if isinstance(x, (list, tuple)) else x)
    a = a.astype(np.int64, copy=False).reshape(-1)
    if a.shape != (n,):
        raise ValueError(f"gripper array must have shape ({n},), got {a.shape}")
    return a


def _check(p, g, Rp, Rg, unit_t):
    p = np.asarray(p, dtype=np.float64)
    g = np.asarray(g, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 3 or g.shape != p.shape:
        raise ValueError(f"p and g must both have shape (N, 3), got {p.shape} and {g.shape}")
    n = len(p)
    Rs = []
    for name, R in (("Rp", Rp), ("Rg", Rg)):
        if R is not None:
            R = np.asarray(R, dtype=np.float64)
            if R.shape != (n, 3, 3):
                raise ValueError(f"{name} must have shape ({n}, 3, 3), got {R.shape}")
        Rs.append(R)
    u = np.asarray(unit_t, dtype=np.float64)
    if u.ndim not in (0, 1) or (u.ndim == 1 and u.shape != (n,)):
        raise ValueError(f"unit_t must be a number or an array of shape ({n},), got {u.shape}")
    return p, g, Rs[0], Rs[1], u


def score_steps_batch(p, g, Rp=None, Rg=None, grip_p=None, grip_g=None, unit_t=0.0626,
                      backend: str = "numpy", device=None) -> dict:
    """Per-step scores of N steps at once.

    ``p``, ``g``: (N, 3) predicted / ground-truth translations, metres. ``Rp``, ``Rg``: (N, 3, 3) rotations or
    None (identity). ``grip_p``, ``grip_g``: (N,) ints (0 open, 1 closed, −1 not stated) or None (no states).
    ``unit_t``: unit translation step(s), metres: a number or (N,). ``backend``: ``"numpy"`` or ``"torch"``
    (``device`` defaults to CUDA when available, else CPU).

    Returns a dict of (N,) arrays ``s_d``, ``s_theta``, ``s_step``, ``s_rot``, ``s_grip`` (float64),
    ``grip_scored`` and ``flag`` (bool: a NaN or infinite input, all scores of that step 0).
    """
    if backend == "torch":
        return _score_torch(p, g, Rp, Rg, grip_p, grip_g, unit_t, device)
    if backend != "numpy":
        raise ValueError(f"backend must be 'numpy' or 'torch', got {backend!r}")
    p, g, Rp, Rg, u = _check(p, g, Rp, Rg, unit_t)
    n = len(p)
    out = {k: np.empty(n) for k in _KEYS}
    out["flag"] = np.empty(n, dtype=bool)
    ws = _Workspace(min(n, BLOCK))
    with np.errstate(all="ignore"):
        for a in range(0, n, BLOCK):
            b = min(n, a + BLOCK)
            _np_block(p[a:b], g[a:b], None if Rp is None else Rp[a:b], None if Rg is None else Rg[a:b],
                      u if u.ndim == 0 else u[a:b], out, a, b, ws)
    _grip_scores(out, _as_grip(grip_p, n), _as_grip(grip_g, n))
    return out


def _grip_scores(out: dict, gp, gg) -> None:
    n = len(out["flag"])
    if gg is None:
        out["s_grip"] = np.where(out["flag"], 0.0, 1.0)
        out["grip_scored"] = np.zeros(n, dtype=bool)
        return
    scored = gg >= 0
    if gp is None:
        match = ~scored
    else:
        match = (gp == gg) | ~scored
    out["s_grip"] = np.where(out["flag"], 0.0, match.astype(np.float64))
    out["grip_scored"] = scored


class _Workspace:
    """Scratch arrays reused from block to block (fresh large arrays would page-fault on every block)."""

    def __init__(self, n: int):
        self.r9 = np.empty((n, 9))
        self.t3 = np.empty((n, 3))
        self.ones9 = np.ones(9)
        self.ones3 = np.ones(3)


def _rowsum_sq(x: np.ndarray, buf: np.ndarray, ones: np.ndarray) -> np.ndarray:
    # Σ_j x_ij² as a BLAS matrix-vector product: far faster than x.sum(axis=1) over 3 or 9 columns.
    np.multiply(x, x, out=buf)
    return buf @ ones


def _np_block(p, g, Rp, Rg, u, out, a, b, ws: _Workspace) -> None:
    n = len(p)
    t3, r9 = ws.t3[:n], ws.r9[:n]
    np2 = _rowsum_sq(p, t3, ws.ones3)
    ng2 = _rowsum_sq(g, t3, ws.ones3)
    np.multiply(p, g, out=t3)
    dot = t3 @ ws.ones3
    np.subtract(p, g, out=t3)
    nd2 = _rowsum_sq(t3, t3, ws.ones3)

    # Rotation: ‖Rp − Rg‖²_F = 2·tr(I − Rp Rgᵀ) = 8 sin²(θ/2), so θ = 2·asin(‖Rp − Rg‖_F / √8). For rotation
    # matrices this is the reference's geodesic angle (its atan2 form): exactly 0 when Rp == Rg, accurate near 0,
    # within ~1e-8 rad near π. One asin per step instead of nine 3-vector dot products and an atan2.
    if Rp is None and Rg is None:
        D = np.zeros(n)
    else:
        if Rp is None or Rg is None:
            np.subtract(np.eye(3) if Rp is None else Rp, np.eye(3) if Rg is None else Rg, out=r9.reshape(n, 3, 3))
        else:
            np.subtract(Rp.reshape(n, 9), Rg.reshape(n, 9), out=r9)
        D = _rowsum_sq(r9, r9, ws.ones9)

    np_, ng, nd = np.sqrt(np2), np.sqrt(ng2), np.sqrt(nd2)
    flag = np2 + ng2
    flag += nd2
    flag += dot
    flag += D
    flag += u
    flag = ~np.isfinite(flag) | (u <= 0.0)

    s_rot = out["s_rot"][a:b]
    th = np.sqrt(D * 0.125)
    np.minimum(th, 1.0, out=th)
    np.arcsin(th, out=th)
    np.multiply(th, -2.0 / math.pi, out=s_rot)
    s_rot += 1.0
    np.maximum(s_rot, 0.0, out=s_rot)

    s_d = out["s_d"][a:b]
    np.divide(nd, ng, out=s_d)
    np.subtract(1.0, s_d, out=s_d)
    np.maximum(s_d, 0.0, out=s_d)
    s_theta = out["s_theta"][a:b]
    np.multiply(np_, ng, out=s_theta)
    np.divide(dot, s_theta, out=s_theta)
    np.clip(s_theta, -1.0, 1.0, out=s_theta)
    s_theta[nd2 == 0.0] = 1.0  # p == g: exactly 1, not the rounded quotient
    s_step = out["s_step"][a:b]
    np.maximum(s_theta, 0.0, out=s_step)
    s_step *= s_d

    # ‖g‖ < ε: s_step from the unit step, s_d = s_θ = 1 only if ‖p‖ < ε too; ‖p‖ < ε alone: all 0.
    g0, p0 = ng < EPS, np_ < EPS
    if g0.any() or p0.any():
        both0 = (g0 & p0).astype(np.float64)
        s_step[:] = np.where(g0, np.where(p0, 1.0, np.maximum(0.0, 1.0 - np_ / u)), np.where(p0, 0.0, s_step))
        s_d[:] = np.where(g0, both0, np.where(p0, 0.0, s_d))
        s_theta[:] = np.where(g0, both0, np.where(p0, 0.0, s_theta))
    if flag.any():
        for x in (s_d, s_theta, s_step, s_rot):
            x[flag] = 0.0
    out["flag"][a:b] = flag


def _torch_device(torch, device):
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _score_torch(p, g, Rp, Rg, grip_p, grip_g, unit_t, device) -> dict:
    import torch  # optional dependency: imported only for this backend

    dev = _torch_device(torch, device)

    def t(x):
        if isinstance(x, torch.Tensor):
            return x.to(device=dev, dtype=torch.float64)
        return torch.as_tensor(np.asarray(x, dtype=np.float64), device=dev)

    p, g = t(p), t(g)
    if p.ndim != 2 or p.shape[1] != 3 or g.shape != p.shape:
        raise ValueError(f"p and g must both have shape (N, 3), got {tuple(p.shape)} and {tuple(g.shape)}")
    n = p.shape[0]
    u = t(unit_t)
    eye = torch.eye(3, dtype=torch.float64, device=dev).expand(n, 3, 3)
    A = eye if Rp is None else t(Rp)
    B = eye if Rg is None else t(Rg)
    if A.shape != (n, 3, 3) or B.shape != (n, 3, 3):
        raise ValueError(f"Rp and Rg must have shape ({n}, 3, 3)")
    px, py, pz = p.unbind(1)
    gx, gy, gz = g.unbind(1)
    dx, dy, dz = px - gx, py - gy, pz - gz
    np_ = torch.sqrt(px * px + py * py + pz * pz)
    ng = torch.sqrt(gx * gx + gy * gy + gz * gz)
    nd = torch.sqrt(dx * dx + dy * dy + dz * dz)
    dot = px * gx + py * gy + pz * gz

    dR = (A - B).reshape(n, 9)
    D = (dR * dR).sum(dim=1)  # ‖Rp − Rg‖²_F = 8 sin²(θ/2), as in the numpy backend
    theta = 2.0 * torch.asin(torch.clamp(torch.sqrt(D * 0.125), max=1.0))
    flag = ~torch.isfinite(np_ + ng + nd + dot + u + D) | (u <= 0.0)
    zero = torch.zeros((), dtype=torch.float64, device=dev)
    one = torch.ones((), dtype=torch.float64, device=dev)
    g0, p0 = ng < EPS, np_ < EPS
    s_d = torch.clamp(1.0 - nd / ng, min=0.0)
    s_theta = torch.where(nd == 0.0, one, torch.clamp(dot / (np_ * ng), -1.0, 1.0))
    s_step = s_d * torch.clamp(s_theta, min=0.0)
    s_step = torch.where(g0, torch.where(p0, torch.ones_like(s_step), torch.clamp(1.0 - np_ / u, min=0.0)),
                         torch.where(p0, zero, s_step))
    both0 = (g0 & p0).to(torch.float64)
    s_d = torch.where(g0, both0, torch.where(p0, zero, s_d))
    s_theta = torch.where(g0, both0, torch.where(p0, zero, s_theta))
    s_rot = torch.clamp(1.0 - theta / math.pi, min=0.0)
    out = {k: torch.where(flag, zero, v) for k, v in
           (("s_d", s_d), ("s_theta", s_theta), ("s_step", s_step), ("s_rot", s_rot))}
    gg = None if grip_g is None else torch.as_tensor(_as_grip(grip_g, n), device=dev)
    gp = None if grip_p is None else torch.as_tensor(_as_grip(grip_p, n), device=dev)
    if gg is None:
        out["s_grip"] = torch.where(flag, zero, one)
        out["grip_scored"] = torch.zeros(n, dtype=torch.bool, device=dev)
    else:
        scored = gg >= 0
        match = ~scored if gp is None else (gp == gg) | ~scored
        out["s_grip"] = torch.where(flag, zero, match.to(torch.float64))
        out["grip_scored"] = scored
    out["flag"] = flag
    return out


def step_totals_batch(scores: dict, kind="nav", profile: str = "paper", weights=None) -> np.ndarray:
    """Step scores (N,) from :func:`score_steps_batch`'s dict (numpy arrays), as :func:`.step.step_total`.

    ``kind``: one kind for all steps (``"nav"``, ``"manip"``, ``"hand"``) or an (N,) array of
    :data:`KIND_CODES`.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    wt, wr, wg = normalise_weights(weights)
    s_step, s_rot, s_grip = scores["s_step"], scores["s_rot"], scores["s_grip"]
    tr = (wt * s_step + wr * s_rot) / (wt + wr)
    manip = np.where(scores["grip_scored"], (wt * s_step + wr * s_rot + wg * s_grip) / (wt + wr + wg), tr)
    nav = s_step if profile == "paper" else tr
    if isinstance(kind, str):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        total = nav if kind == "nav" else manip
    else:
        total = np.where(np.asarray(kind) == KIND_CODES["nav"], nav, manip)
    return np.where(scores["flag"], 0.0, total)


# ------------------------------------------------------------------------------------------------------------
# Episodes in batch
# ------------------------------------------------------------------------------------------------------------
def sequence_arrays(seq) -> tuple[np.ndarray, np.ndarray]:
    """An ActionSequence as ``(motions (K, 6) float64, grippers (K,) int64 with −1 = not stated)``.

    Same numbers as ``seq.as_motions()`` / ``seq.grippers()``, built with one array operation for count steps.
    """
    steps = seq.steps
    if not steps:
        return np.zeros((0, 6)), np.zeros(0, dtype=np.int64)
    grip = np.fromiter((-1 if s.gripper is None else s.gripper for s in steps), dtype=np.int64, count=len(steps))
    if all(s.counts is not None for s in steps):
        c = np.array([s.counts for s in steps], dtype=np.int64).reshape(len(steps), 6, 2)
        return (c[:, :, 0] - c[:, :, 1]) * seq.sizes.units(), grip
    return seq.as_motions(), grip


def _compose(motions: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Net (t (E, 3), R (E, 3, 3)) of each episode's motions composed in order: T ← T @ Δ_k, from the identity."""
    E = len(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    Rk = rotations_from_motions(motions)
    t = np.zeros((E, 3))
    R = np.broadcast_to(np.eye(3), (E, 3, 3)).copy()
    for k in range(int(lengths.max()) if E else 0):
        act = np.nonzero(lengths > k)[0]
        rows = offsets[act] + k
        Ra = R[act]
        t[act] = t[act] + np.einsum("nij,nj->ni", Ra, motions[rows, :3])
        R[act] = Ra @ Rk[rows]
    return t, R


def _geodesic_np(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    from .. import geometry

    return geometry.geodesic_angle(A, B)


def score_episodes_batch(pred_motions, pred_grippers, pred_lengths, gt_motions, gt_grippers, gt_lengths,
                         kinds, unit_t, profile: str = "paper", weights=None, backend: str = "numpy",
                         device=None) -> dict:
    """Episode scores of E episodes at once (docs/scoring.md, "Episodes", in array form;
    :func:`.episode.score_episode` is the per-record reference).

    ``pred_motions`` (ΣKp, 6) and ``gt_motions`` (ΣKg, 6): every episode's body-frame step motions
    ``(tx, ty, tz, tilt, pan, roll)`` concatenated in episode order; ``*_grippers`` (ΣK,) ints, −1 = not stated;
    ``*_lengths`` (E,) steps per episode; ``kinds`` (E,) :data:`KIND_CODES` (or one kind name); ``unit_t`` (E,)
    or a number: each episode's unit translation step (m).

    Returns (E,) arrays: ``total``, ``s_d``, ``s_theta``, ``s_step``, ``s_rot``, ``s_grip`` (NaN for navigation),
    ``net_translation_error`` (m), ``net_rotation_error`` (rad), ``n_pred``, ``n_gt``, ``n_flagged``.
    """
    pm = np.asarray(pred_motions, dtype=np.float64).reshape(-1, 6)
    gm = np.asarray(gt_motions, dtype=np.float64).reshape(-1, 6)
    lp = np.asarray(pred_lengths, dtype=np.int64).reshape(-1)
    lg = np.asarray(gt_lengths, dtype=np.int64).reshape(-1)
    E = len(lp)
    if len(lg) != E or lp.sum() != len(pm) or lg.sum() != len(gm):
        raise ValueError("lengths do not match the motion arrays")
    gpa = np.asarray(pred_grippers, dtype=np.int64).reshape(-1)
    gga = np.asarray(gt_grippers, dtype=np.int64).reshape(-1)
    if isinstance(kinds, str):
        kinds = np.full(E, KIND_CODES[kinds])
    kinds = np.asarray(kinds, dtype=np.int64).reshape(-1)
    u_ep = np.broadcast_to(np.asarray(unit_t, dtype=np.float64), (E,))

    # Aligned step pairs: episode e, index j < min(len_pred, len_gt).
    m = np.minimum(lp, lg)
    K = np.maximum(lp, lg)
    op = np.concatenate([[0], np.cumsum(lp)[:-1]]).astype(np.int64) if E else lp
    og = np.concatenate([[0], np.cumsum(lg)[:-1]]).astype(np.int64) if E else lg
    ep = np.repeat(np.arange(E), m)
    start = np.repeat(np.cumsum(m) - m, m)
    j = np.arange(len(ep)) - start
    rp, rg = op[ep] + j, og[ep] + j
    P, G = pm[rp], gm[rg]
    s = score_steps_batch(P[:, :3], G[:, :3], rotations_from_motions(P), rotations_from_motions(G),
                          gpa[rp], gga[rg], u_ep[ep], backend=backend, device=device)
    if backend == "torch":
        s = {k: v.cpu().numpy() for k, v in s.items()}
    tot = step_totals_batch(s, kinds[ep], profile, weights)

    out = {}
    safe = np.maximum(K, 1)
    nav = kinds == KIND_CODES["nav"]
    for key, vals in (("total", tot), ("s_d", s["s_d"]), ("s_theta", s["s_theta"]), ("s_step", s["s_step"]),
                      ("s_rot", s["s_rot"]), ("s_grip", s["s_grip"])):
        out[key] = np.bincount(ep, weights=vals, minlength=E) / safe
        out[key][K == 0] = 1.0  # two empty sequences: nothing asked, nothing done
    out["s_grip"] = np.where(nav, np.nan, out["s_grip"])
    out["n_flagged"] = np.bincount(ep, weights=s["flag"].astype(np.float64), minlength=E).astype(np.int64)
    tp, Rp = _compose(pm, lp)
    tg, Rg = _compose(gm, lg)
    out["net_translation_error"] = np.sqrt(((tp - tg) ** 2).sum(axis=1))
    out["net_rotation_error"] = _geodesic_np(Rp, Rg)
    out["n_pred"], out["n_gt"] = lp.copy(), lg.copy()
    return out
