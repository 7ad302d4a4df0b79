"""Episode scores (docs/scoring.md, "Episodes"): steps aligned by index, net-motion errors, and whole answers scored
against tasks.

An episode compares a predicted ActionSequence with the ground truth. Steps are aligned by index over
``K = max(len(pred), len(gt))``; a step present on one side only scores 0 (so padding an answer with extra steps
costs), and the episode score is the mean of the K step scores. Both sequences are also composed into their net
motion (all steps, from the same start), and the net translation error (metres) and net rotation error (radians,
geodesic) between the two are reported.

Decisions where the spec is silent: two empty sequences score 1 (nothing asked, nothing done); a navigation
episode reports ``s_grip`` as None (navigation carries no gripper score); profile ``paper+rot`` changes only the
navigation step score (the manipulation score already weighs rotation).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from .. import geometry
from ..action_space import ActionSequence, parse_response
from ..records import STEP_SCORE_FIELDS
from ..vocab import KINDS, PROFILES
from .step import normalise_weights, score_step, step_total

__all__ = ["EpisodeScore", "score_episode", "score_answer", "net_errors", "ANSWER_PROFILES"]

#: Profiles :func:`score_answer` accepts.
ANSWER_PROFILES = PROFILES + ("lmms-eval",)
_SCORE_KEYS = STEP_SCORE_FIELDS


@dataclass(frozen=True)
class EpisodeScore:
    """The score of one episode (immutable).

    ``total``: the episode score in [0, 1] (mean of the K step scores). ``per_step``: one dict per aligned step
    (``k``, ``status`` = ``scored`` | ``missing`` (no predicted step) | ``extra`` (no ground-truth step), the five
    scores, ``total``, ``flag``). ``s_d`` … ``s_grip``: episode means over the K steps (``s_theta`` the mean raw
    cosine; ``s_grip`` None for navigation). ``net_translation_error`` (m) and ``net_rotation_error`` (rad): the
    composed predicted motion against the composed ground truth. ``weights``: the normalised
    (translation, rotation, gripper) weights used. ``flags``: notes on steps with non-finite inputs.
    """

    total: float
    per_step: tuple = ()
    s_d: float = 0.0
    s_theta: float = 0.0
    s_step: float = 0.0
    s_rot: float = 0.0
    s_grip: float | None = None
    net_translation_error: float = 0.0
    net_rotation_error: float = 0.0
    n_pred: int = 0
    n_gt: int = 0
    weights: tuple = field(default=(1 / 3, 1 / 3, 1 / 3))
    profile: str = "paper"
    kind: str = "nav"
    flags: tuple = ()

    # the short names of the result record (docs/results.md)
    @property
    def translation(self) -> float:
        """Mean translation step score ``s_step``."""
        return self.s_step

    @property
    def rotation(self) -> float:
        """Mean rotation score ``s_rot``."""
        return self.s_rot

    @property
    def gripper(self) -> float | None:
        """Mean gripper score ``s_grip`` (None for navigation)."""
        return self.s_grip

    def to_dict(self) -> dict:
        """A JSON-able dict (tuples become lists)."""
        d = asdict(self)
        d["per_step"] = [dict(x) for x in self.per_step]
        d["weights"] = list(self.weights)
        d["flags"] = list(self.flags)
        return d


def _pose_parts(seq: ActionSequence):
    T = seq.to_poses()[-1]
    return T[:3, 3], T[:3, :3]


def net_errors(pred: ActionSequence, gt: ActionSequence) -> tuple[float, float]:
    """(translation error m, rotation error rad) between the composed motions of two sequences from one start."""
    tp, Rp = _pose_parts(pred)
    tg, Rg = _pose_parts(gt)
    return float(np.linalg.norm(tp - tg)), float(geometry.geodesic_angle(Rp, Rg))


def _zero_step(k: int, status: str, nav: bool) -> dict:
    return {"k": k, "status": status, "s_d": 0.0, "s_theta": 0.0, "s_step": 0.0, "s_rot": 0.0,
            "s_grip": None if nav else 0.0, "total": 0.0, "flag": False}


def score_episode(pred: ActionSequence, gt: ActionSequence, kind: str = "nav", profile: str = "paper",
                  weights=None) -> EpisodeScore:
    """Score a predicted sequence against the ground truth (per-record reference code, docs/scoring.md).

    Each sequence's steps are turned into motions with its own unit sizes; ``gt.sizes.translation`` is the
    ``u_t`` of the zero-translation rule. ``kind``: ``nav`` | ``manip`` | ``hand``; ``profile``: ``paper`` |
    ``paper+rot``; ``weights``: (w_t, w_r, w_g), normalised (default equal thirds).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES} for score_episode (the lmms-eval profile scores "
                         f"answer text: use score_answer or score_lmms_eval), got {profile!r}")
    if not isinstance(pred, ActionSequence) or not isinstance(gt, ActionSequence):
        raise TypeError("score_episode takes two ActionSequence objects")
    w = normalise_weights(weights)
    nav = kind == "nav"
    mp, mg = pred.as_motions(), gt.as_motions()
    gp, gg = pred.grippers(), gt.grippers()
    n_p, n_g = len(mp), len(mg)
    K = max(n_p, n_g)
    u_t = gt.sizes.translation
    per_step, flags = [], []
    for k in range(K):
        if k >= n_p:
            per_step.append(_zero_step(k, "missing", nav))
            continue
        if k >= n_g:
            per_step.append(_zero_step(k, "extra", nav))
            continue
        Rp = geometry.ptr_to_matrix(mp[k, 4], mp[k, 3], mp[k, 5])
        Rg = geometry.ptr_to_matrix(mg[k, 4], mg[k, 3], mg[k, 5])
        r = score_step(mp[k, :3], mg[k, :3], Rp, Rg, int(gp[k]), int(gg[k]), unit_t=u_t)
        total = step_total(r, kind, profile, w)
        if r["flag"]:
            flags.append(f"step {k + 1}: non-finite input, scored 0")
        per_step.append({"k": k, "status": "scored", **{key: r[key] for key in _SCORE_KEYS},
                         "total": total, "flag": r["flag"]})
        if nav:
            per_step[-1]["s_grip"] = None
    if K == 0:
        means = {key: 1.0 for key in _SCORE_KEYS}
        total = 1.0
    else:
        means = {key: math.fsum(s[key] for s in per_step) / K for key in _SCORE_KEYS if key != "s_grip"}
        means["s_grip"] = math.fsum(s["s_grip"] or 0.0 for s in per_step) / K
        total = math.fsum(s["total"] for s in per_step) / K
    if nav:
        means["s_grip"] = None
    et, er = net_errors(pred, gt)
    return EpisodeScore(total=float(total), per_step=tuple(per_step), **means, net_translation_error=et,
                        net_rotation_error=er, n_pred=n_p, n_gt=n_g, weights=w, profile=profile, kind=kind,
                        flags=tuple(flags))


def score_answer(response: str, task, profile: str = "paper", weights=None) -> dict:
    """Score one model answer (text) against a task; never raises for a bad answer.

    The answer is parsed leniently with the task's unit sizes and cap. Returns ``score`` (the headline: the
    profile's episode score; 0 when nothing parsed), ``ok``, ``reason`` (None, or ``"parse_error"``), ``error``,
    ``repairs``, ``n_repairs``, ``format``, ``pred`` (the parsed sequence's ``to_dict()``), ``task_id``, plus
    every item of :meth:`EpisodeScore.to_dict` (``total``, ``per_step``, ``s_d`` …). With profile
    ``lmms-eval`` the headline ``score`` is lmms-eval's (on :func:`to_lmms_extra_info` of the task), its
    whole result dict is under ``lmms``, and the EpisodeScore items are those of profile ``paper``.
    """
    if profile not in ANSWER_PROFILES:
        raise ValueError(f"profile must be one of {ANSWER_PROFILES}, got {profile!r}")
    pr = parse_response(response, strict=False, sizes=task.sizes, cap=task.gt.cap)
    ep = score_episode(pr.sequence, task.gt, kind=task.kind,
                       profile="paper" if profile == "lmms-eval" else profile, weights=weights)
    out = {"task_id": task.id, "score": float(ep.total) if pr.ok else 0.0, "ok": bool(pr.ok),
           "reason": None if pr.ok else "parse_error", "error": pr.error, "repairs": list(pr.repairs),
           "n_repairs": pr.n_repairs, "format": pr.format, "pred": pr.sequence.to_dict()}
    out.update(ep.to_dict())
    if profile == "lmms-eval":
        from .lmms_eval import INVALID_RESPONSE, score_lmms_eval, to_lmms_extra_info

        r = score_lmms_eval(response, to_lmms_extra_info(task), kind="nav" if task.kind == "nav" else "manip")
        out["lmms"] = r
        out["score"] = float(r.get("score", 0.0))
        err = r.get("error")
        out["ok"] = err is None
        out["reason"] = None if err is None else ("parse_error" if err == INVALID_RESPONSE else "lmms_error")
        out["error"] = err
        out["profile"] = "lmms-eval"
    return out
