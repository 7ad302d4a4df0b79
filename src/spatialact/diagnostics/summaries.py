"""The diagnostics of a run, from its result records (what ``spatialact report`` and ``eval --flip`` print).

Each function takes the records of one run (dicts as :func:`spatialact.evaluation.read_records` gives them: fields
``task_id``, ``kind``, ``tags``, ``variant``, ``score``, ``reason``, ``pred`` and ``gt`` as
``ActionSequence.to_dict()``) and returns plain JSON-able dicts; intervals are the project's one percentile
bootstrap (:mod:`spatialact.scorers.aggregate`: 1000 resamples, seed 0). Failed episodes (``api_error``,
``error``: no score) are left out everywhere and counted; an answer that did not parse is a result (score 0).

* :func:`flip_summary` — FlipEval: plain, mirrored and paired scores, mirror inconsistency, left/right bias;
* :func:`viewpoint_summary` — S_common, S_uncommon and δ with a paired interval, per kind;
* :func:`ladder_summary` — the score of each difficulty level, RPDR, and the chance-normalised score;
* :func:`bias_summary` — label CV (raw and normalised), left/right bias, sign confusion per axis;
* :func:`run_diagnostics` — all of them for one run.

Tags read (written by the procedural builders, :mod:`spatialact.taskgen.ladder`): ``level`` (``L1`` … ``L5``),
``viewpoint`` (``common`` / ``uncommon``) and ``pair`` (tasks sharing scene and goal).
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from ..action_space import ActionSequence, mirror
from ..records import is_failure as _failed
from ..scorers.aggregate import bootstrap_means, percentile_interval, summarise
from ..vocab import KINDS, LEVELS
from .metrics import (chance_normalised, label_counts, label_cv, lr_bias, normalised_label_cv, rpdr,
                      sign_confusion, viewpoint_delta)
from .mirror import mirror_inconsistency

__all__ = ["flip_summary", "viewpoint_summary", "ladder_summary", "bias_summary", "run_diagnostics",
           "calibration_levels", "record_sequence"]


def _score(r: dict) -> float:
    v = r.get("score")
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f if math.isfinite(f) else math.nan


def _results(records: Iterable[dict], variant: str = "") -> list[dict]:
    """The scored results of one variant (failures left out)."""
    return [r for r in records if (r.get("variant") or "") == variant and not _failed(r)
            and math.isfinite(_score(r))]


def record_sequence(r: dict, field: str = "pred") -> ActionSequence | None:
    """A record's ``pred`` or ``gt`` as an ActionSequence (None when absent or unreadable)."""
    d = r.get(field)
    if not isinstance(d, dict):
        return None
    try:
        return ActionSequence.from_dict(d)
    except (KeyError, TypeError, ValueError):
        return None


def _pair_key(r: dict) -> tuple:
    return (r.get("task_id"), r.get("agent"), r.get("env"), r.get("mode"), r.get("seed"))


def _nan_or(x) -> float | None:
    """JSON-able: NaN → None."""
    if x is None:
        return None
    f = float(x)
    return f if math.isfinite(f) else None


# ----- FlipEval -----------------------------------------------------------------------------------------------
def flip_summary(records: Iterable[dict], n_boot: int = 1000, seed: int = 0) -> dict | None:
    """FlipEval over the episodes run both plain (variant "") and mirrored (variant "mirror"); None when the run
    has no such pair.

    ``plain``, ``mirrored``: mean episode scores (the mirrored answer mirrored back, against the true ground truth);
    ``paired``: the mean of the smaller of the two per episode (an episode counts only as well as its worse side);
    ``inconsistency``: the mean :func:`~spatialact.diagnostics.mirror_inconsistency` over the pairs where both
    answers parsed, ``inconsistency_nan`` the pairs where one did not (counted apart, not as 0 or 1);
    ``bias_pred``: :func:`~spatialact.diagnostics.lr_bias` of the answers *as given* — the plain answers and the
    mirrored answers before they are mirrored back — and ``bias_gt`` the same of the ground truths the agent was
    asked (the plain one and its mirror: 0 by construction, so a non-zero ``bias_pred`` is the agent's own).
    Each mean is ``{"mean", "ci_low", "ci_high", "n"}``."""
    records = list(records)
    plain = {_pair_key(r): r for r in _results(records, "")}
    mirr = {_pair_key(r): r for r in _results(records, "mirror")}
    keys = [k for k in plain if k in mirr]
    if not keys:
        return None
    sp = np.array([_score(plain[k]) for k in keys])
    sm = np.array([_score(mirr[k]) for k in keys])
    inc, n_nan = [], 0
    given, asked = [], []
    for k in keys:
        a, b = plain[k], mirr[k]
        pa, pb = record_sequence(a), record_sequence(b)
        parsed = (a.get("reason") != "parse_error" and b.get("reason") != "parse_error" and pa is not None
                  and pb is not None)
        v = mirror_inconsistency(pa, mirror(pb), kind=a.get("kind") or "nav") if parsed else math.nan
        if math.isfinite(v):
            inc.append(v)
        else:
            n_nan += 1
        for seq in (pa, mirror(pb) if pb is not None else None):
            if seq is not None:
                given.append(seq)
        ga = record_sequence(a, "gt")
        if ga is not None:
            asked += [ga, mirror(ga)]
    return {"n_pairs": len(keys),
            "plain": summarise(sp, n_boot, seed), "mirrored": summarise(sm, n_boot, seed),
            "paired": summarise(np.minimum(sp, sm), n_boot, seed),
            "inconsistency": summarise(np.asarray(inc), n_boot, seed), "inconsistency_nan": n_nan,
            "bias_pred": _nan_or(lr_bias(given)) if given else None,
            "bias_gt": _nan_or(lr_bias(asked)) if asked else None}


# ----- viewpoints ----------------------------------------------------------------------------------------------
def _delta_interval(c: np.ndarray, u: np.ndarray, n_boot: int, seed: int, level: float = 0.95):
    """Paired percentile interval of δ = (mean u − mean c) / mean c: whole pairs resampled together; resamples
    whose common mean is 0 (δ undefined) are left out."""
    if len(c) < 2:
        d = viewpoint_delta(float(c.mean()), float(u.mean())) if len(c) else math.nan
        return d, d
    means = bootstrap_means(np.stack([c, u], axis=1), n_boot, seed)
    d = viewpoint_delta(means[:, 0], means[:, 1])
    d = d[np.isfinite(d)]
    if d.size == 0:
        return math.nan, math.nan
    return percentile_interval(d, level)


def viewpoint_summary(records: Iterable[dict], n_boot: int = 1000, seed: int = 0) -> dict | None:
    """Viewpoint robustness per kind (and ``all``) over the plain episodes tagged ``viewpoint`` common / uncommon
    that pair up by their ``pair`` tag (same scene and goal); None when there is no pair.

    Per kind: ``n_pairs``, ``common`` and ``uncommon`` (mean scores with intervals, over the pairs), ``delta`` =
    (S_uncommon − S_common) / S_common (None where S_common = 0) and its paired bootstrap interval
    ``delta_ci``; ``unpaired``: tagged episodes without a partner (left out)."""
    recs = [r for r in _results(records, "") if (r.get("tags") or {}).get("viewpoint") in ("common", "uncommon")]
    groups: dict[tuple, dict] = {}
    unpaired = {}
    for r in recs:
        tags = r["tags"]
        pair = tags.get("pair")
        if pair is None:
            unpaired[r.get("kind")] = unpaired.get(r.get("kind"), 0) + 1
            continue
        groups.setdefault((r.get("kind"), str(pair)), {})[tags["viewpoint"]] = r
    out = {}
    by_kind: dict[str, list[tuple[float, float]]] = {}
    for (kind, _), g in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if "common" in g and "uncommon" in g:
            by_kind.setdefault(kind, []).append((_score(g["common"]), _score(g["uncommon"])))
        else:
            unpaired[kind] = unpaired.get(kind, 0) + 1
    if not by_kind:
        return None
    kinds = [k for k in KINDS if k in by_kind] + sorted(k for k in by_kind if k not in KINDS)
    rows = [(k, by_kind[k]) for k in kinds]
    if len(kinds) > 1:
        rows.append(("all", [p for k in kinds for p in by_kind[k]]))
    for kind, pairs in rows:
        a = np.asarray(pairs, dtype=np.float64)
        c, u = a[:, 0], a[:, 1]
        delta = viewpoint_delta(float(c.mean()), float(u.mean()))
        lo, hi = _delta_interval(c, u, n_boot, seed)
        out[kind] = {"n_pairs": len(a), "common": summarise(c, n_boot, seed), "uncommon": summarise(u, n_boot, seed),
                     "delta": _nan_or(delta), "delta_ci": [_nan_or(lo), _nan_or(hi)],
                     "unpaired": int(unpaired.get(kind, 0)) if kind != "all" else int(sum(unpaired.values()))}
    return out


# ----- ladder ---------------------------------------------------------------------------------------------------
def _level_means(records: Iterable[dict]) -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = {}
    for r in _results(records, ""):
        level = (r.get("tags") or {}).get("level")
        if level in LEVELS:
            out.setdefault(r.get("kind"), {}).setdefault(level, []).append(_score(r))
    return out


def calibration_levels(records: Iterable[dict]) -> dict[str, dict[str, float]]:
    """``{kind: {level: mean score}}`` of a calibration run (random or oracle) for :func:`ladder_summary`."""
    return {k: {lv: float(np.mean(v)) for lv, v in d.items()} for k, d in _level_means(records).items()}


def ladder_summary(records: Iterable[dict], calibration: dict | None = None, n_boot: int = 1000,
                   seed: int = 0) -> dict | None:
    """The difficulty ladder per kind over the plain episodes tagged ``level`` L1 … L5; None when there is none.

    Per kind: ``levels`` (the levels present, in order), ``scores`` (``{level: {mean, ci_low, ci_high, n}}``),
    ``rpdr`` (``{"L1→L2": value, …}`` between consecutive levels: :func:`~spatialact.diagnostics.rpdr`, None where
    undefined or a level is missing) and, when ``calibration = {"random": {kind: {level: S}}, "oracle": …}`` has
    both rows for a level, ``normalised`` (``{level: (S − S_random) / (S_oracle − S_random)}``)."""
    means = _level_means(records)
    if not means:
        return None
    out = {}
    for kind in [k for k in KINDS if k in means] + sorted(k for k in means if k not in KINDS):
        lv = means[kind]
        present = [level for level in LEVELS if level in lv]
        scores = {level: summarise(np.asarray(lv[level]), n_boot, seed) for level in present}
        seq = [scores[level]["mean"] if level in scores else math.nan for level in LEVELS]
        ratios = rpdr(seq)
        rp = {f"{LEVELS[i]}→{LEVELS[i + 1]}": _nan_or(v) for i, v in enumerate(ratios)
              if LEVELS[i] in scores and LEVELS[i + 1] in scores}
        entry = {"levels": present, "scores": scores, "rpdr": rp}
        if calibration:
            rnd = (calibration.get("random") or {}).get(kind) or {}
            orc = (calibration.get("oracle") or {}).get(kind) or {}
            norm = {level: _nan_or(chance_normalised(scores[level]["mean"], rnd[level], orc[level]))
                    for level in present if level in rnd and level in orc}
            if norm:
                entry["normalised"] = norm
        out[kind] = entry
    return out


# ----- bias ----------------------------------------------------------------------------------------------------
def bias_summary(records: Iterable[dict]) -> dict | None:
    """Prediction bias over the plain episodes whose answer parsed (None when there is none): ``label_cv`` (CV of
    the predicted label counts over the 12 primitives, zeros included), ``label_cv_gt`` (the same of the ground
    truth, for reference), ``label_cv_normalised`` (CV of predicted / true count over the labels present in the
    ground truth), ``bias_pred`` / ``bias_gt`` (left/right bias of the answers and of the ground truth),
    ``pred_counts`` / ``gt_counts`` (12 label counts, ``MOTION_PRIMITIVES`` order) and ``confusion``
    ([axis][true sign][predicted sign] counts, axes ``AXES``, signs −, 0, +)."""
    preds, gts = [], []
    for r in _results(records, ""):
        if r.get("reason") == "parse_error":
            continue
        p, g = record_sequence(r), record_sequence(r, "gt")
        if p is None or g is None:
            continue
        preds.append(p)
        gts.append(g)
    if not preds:
        return None
    pc, gc = label_counts(preds), label_counts(gts)
    return {"n": len(preds), "label_cv": _nan_or(label_cv(pc)), "label_cv_gt": _nan_or(label_cv(gc)),
            "label_cv_normalised": _nan_or(normalised_label_cv(pc, gc)),
            "bias_pred": _nan_or(lr_bias(preds)), "bias_gt": _nan_or(lr_bias(gts)),
            "pred_counts": pc.tolist(), "gt_counts": gc.tolist(), "confusion": sign_confusion(preds, gts).tolist()}


def run_diagnostics(records: Iterable[dict], calibration: dict | None = None) -> dict:
    """Every diagnostic of one run: ``{"flip", "viewpoint", "ladder", "bias"}`` (each None when the run has no
    episode it applies to)."""
    records = list(records)
    return {"flip": flip_summary(records), "viewpoint": viewpoint_summary(records),
            "ladder": ladder_summary(records, calibration), "bias": bias_summary(records)}
