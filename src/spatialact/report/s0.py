"""s0 of a record, for records written before episodes carried it (docs/results.md, "Skill of older runs").

``eval`` stores each episode's ``s0`` — the score of the null answer, what the ``stay`` baseline answers
(:func:`spatialact.scorers.null_score`), under the run's mode, profile and weights — right after ``score``. A
record written before that has no ``s0``; it still carries its task's ground truth (``gt``) and kind, and s0 needs
nothing else: :func:`rebuilt_s0` scores the null answer against that ground truth exactly as ``eval`` does (the same
function on a task rebuilt from the record's ``gt``, ``kind`` and ``mode``; the task's poses play no part in it,
so the identity stands in for them). Decision: older runs get their skill this way rather than shown as unknown —
it costs one score of a few Stay steps per distinct task. A record without a readable ``gt`` keeps ``s0`` unknown
(None): its episode leaves every skill figure, and the report says how many did. Failures (no score) get no s0.
"""

from __future__ import annotations

import json
import math

import numpy as np

from ..action_space import ActionSequence
from ..records import is_failure
from ..scorers import null_score
from ..tasks import Task

__all__ = ["rebuilt_s0", "fill_s0", "run_profile"]


def run_profile(config: dict) -> tuple[str, object]:
    """The run's step-score ``(profile, weights)`` from its ``config.json`` (``{"config": {...}}`` or the inner
    dict): profile ``"paper"`` and weights None (equal thirds) when the run names none."""
    cfg = config.get("config", config) if isinstance(config, dict) else {}
    cfg = cfg if isinstance(cfg, dict) else {}
    return str(cfg.get("profile") or "paper"), cfg.get("weights")


def _weights(r: dict, default):
    """The weights the record was scored with (its ``weights`` field: three finite numbers), else ``default``."""
    w = r.get("weights")
    if isinstance(w, list) and len(w) == 3 and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                   and math.isfinite(x) for x in w):
        return tuple(float(x) for x in w)
    return tuple(default) if isinstance(default, (list, tuple)) else None


def rebuilt_s0(r: dict, profile: str = "paper", weights=None, memo: dict | None = None) -> float | None:
    """The s0 ``eval`` would have stored in record ``r``: :func:`spatialact.scorers.null_score` of a task rebuilt
    from its ``gt``, ``kind`` and ``mode`` under ``profile`` and ``weights`` (the record's own ``weights`` field
    wins). None for a failure or a record whose ``gt`` or ``kind`` cannot be read. ``memo`` (a dict) keeps results
    across records of the same task."""
    if is_failure(r) or not isinstance(r.get("gt"), dict):
        return None
    mode = r.get("mode") if r.get("mode") in ("one-shot", "closed-loop") else "one-shot"
    w = _weights(r, weights)
    key = None
    if memo is not None:
        key = (json.dumps(r["gt"], sort_keys=True, default=str), str(r.get("kind")), mode, profile, w)
        if key in memo:
            return memo[key]
    try:
        gt = ActionSequence.from_dict(r["gt"])
        task = Task(id=str(r.get("task_id")), kind=str(r.get("kind")), source=str(r.get("source") or "record"),
                    start_pose=np.eye(4), goal_pose=np.eye(4), gt=gt, sizes=gt.sizes)
        v = float(null_score(task, mode, profile, w))
    except (KeyError, TypeError, ValueError, IndexError):
        v = None
    v = v if v is not None and math.isfinite(v) else None
    if memo is not None:
        memo[key] = v
    return v


def fill_s0(records: list[dict], config: dict) -> tuple[int, int]:
    """Give every answered record of a run its ``s0`` in place: a record that carries one keeps it, one that does
    not gets :func:`rebuilt_s0` under the run's profile and weights (:func:`run_profile`). Returns ``(rebuilt,
    unknown)``: how many answered records got a rebuilt s0, and how many have none (no readable ``gt``)."""
    profile, weights = run_profile(config)
    memo: dict = {}
    rebuilt = unknown = 0
    for r in records:
        if is_failure(r) or r.get("record") == "question":
            continue
        v = r.get("s0")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            continue
        r["s0"] = rebuilt_s0(r, profile, weights, memo)
        if r["s0"] is None:
            unknown += 1
        else:
            rebuilt += 1
    return rebuilt, unknown
