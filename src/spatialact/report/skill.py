"""The figures of a group of episodes that every table, ``report --json`` and the leaderboard show, skill first
(docs/results.md, "Skill in reports"), and what groups and pairs them: the track of a record, its pairing key.

A group's figures (:func:`group_figures`): ``skill`` with its interval (:func:`spatialact.scorers.skill_summary`
over the group's episodes, an episode run several times — ``eval --repeats K`` — counted once with its score and s0
averaged over its repeats, as ``eval``'s own summary does), the paper's raw step ``score`` (mean and bootstrap
interval), ``success`` and ``spl`` (means over the episodes that have them), ``parse_ok`` (the answers that parsed,
over the answered episodes), the blocked-step rate of worlds with walls, failures (``api_errors``, ``errors``), and
tokens and cost. Records are read through the tolerant readers of :mod:`.load`.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..evaluation.stats import summary_of
from ..records import is_failure
from ..scorers import skill_summary
from .load import RunData, as_float, record_value, usage

__all__ = ["track_of", "has_track", "run_config", "run_provenance", "pair_key", "episode_values",
           "group_figures", "blocked_steps", "parse_ok_values", "MIN_PAIRED"]

#: Fewer shared episodes than this in a paired cell: the cell is marked (its interval and p-value are rough).
MIN_PAIRED = 10


def run_config(run: RunData) -> dict:
    """The run's configuration (``config.json``'s ``config``; {} when it has none)."""
    cfg = run.config.get("config", run.config) if isinstance(run.config, dict) else {}
    return cfg if isinstance(cfg, dict) else {}


def run_provenance(run: RunData) -> dict:
    """The run's provenance: its first record's, else ``config.json``'s ({} when neither has one)."""
    recs = run.records or run.all_records
    prov = recs[0].get("provenance") if recs else None
    if not isinstance(prov, dict):
        prov = run.config.get("provenance") if isinstance(run.config, dict) else None
    return prov if isinstance(prov, dict) else {}


@lru_cache(maxsize=8)
def _suite_tracks(suite: str, sha256: str) -> dict:
    """Task id → track of a built-in frozen suite (``meta.track``), when the installed suite file is the one the run
    used (the same SHA-256); {} otherwise or when it cannot be read."""
    try:
        from ..taskgen import builtin_suite, suite_info

        info = suite_info(suite)
        if info.get("sha256") != sha256:
            return {}
        return {t.id: str(t.meta["track"]) for t in builtin_suite(suite) if (t.meta or {}).get("track")}
    except Exception:  # an unknown suite, a version without the suite: the records' own fields decide
        return {}


def _own_track(r: dict) -> str | None:
    tags = r.get("tags") if isinstance(r.get("tags"), dict) else {}
    meta = r.get("meta") if isinstance(r.get("meta"), dict) else {}
    for v in (tags.get("track"), r.get("track"), meta.get("track")):
        if isinstance(v, str) and v:
            return v
    prov = r.get("provenance") if isinstance(r.get("provenance"), dict) else {}
    suite, sha = prov.get("suite"), prov.get("suite_sha256")
    if isinstance(suite, str) and isinstance(sha, str):
        return _suite_tracks(suite, sha).get(str(r.get("task_id")))
    return None


def track_of(r: dict) -> str:
    """The benchmark track of a record (nav, manip, hand, game, camera): its task's ``track`` (a tag, a record
    field, ``meta.track``, or the frozen suite's task named in its provenance), else its kind."""
    return _own_track(r) or str(r.get("kind"))


def has_track(r: dict) -> bool:
    """Whether the record's track is its task's own, not its kind standing in."""
    return _own_track(r) is not None


def pair_key(record: dict, provenance: dict | None = None, config: dict | None = None) -> tuple:
    """The episode a record answers, for pairing runs (docs/results.md, "Paired comparison"): (the suite's SHA-256,
    else the task file's, else the task source the configuration names — ``suite:default:seed=0`` —, task id,
    variant, mode, profile). ``provenance`` defaults to the record's, ``config`` (``config.json``'s ``config``) to
    {}: profile ``paper``."""
    prov = provenance if isinstance(provenance, dict) else record.get("provenance")
    prov = prov if isinstance(prov, dict) else {}
    cfg = config if isinstance(config, dict) else {}
    source = (prov.get("suite_sha256") or cfg.get("suite_sha256") or prov.get("task_file_sha256")
              or cfg.get("tasks_sha256") or cfg.get("tasks") or prov.get("task_file"))
    return (source, str(record.get("task_id")), str(record.get("variant") or ""), str(record.get("mode")),
            str(cfg.get("profile") or "paper"))


def episode_values(records, key=lambda r: (str(r.get("task_id")), str(r.get("variant") or ""),
                                           str(r.get("mode")))) -> dict:
    """Per episode (``key(record)``; default task, variant, mode) the means over its repeats of ``score``, ``s0``
    and ``success`` (NaN where none of its records has the figure: a failure has no score, an episode without
    execution no success)."""
    groups: dict = {}
    for r in records:
        groups.setdefault(key(r), []).append(r)
    out = {}
    for k, rs in groups.items():
        vals = {}
        for name in ("score", "s0", "success"):
            v = [as_float(record_value(r, name)) for r in rs if not is_failure(r)]
            v = [x for x in v if math.isfinite(x)]
            vals[name] = float(np.mean(v)) if v else math.nan
        out[k] = vals
    return out


def blocked_steps(records) -> tuple[int, int]:
    """(blocked steps, executed steps) over the records that carry ``blocked`` (worlds with walls)."""
    flags = [bool(b) for r in records if isinstance(r.get("blocked"), list) for b in r["blocked"]]
    return sum(flags), len(flags)


def parse_ok_values(records) -> list[bool]:
    """Per answered episode whether its answer parsed (failures have no answer and are left out)."""
    oks = (r.get("ok", (r.get("parse") or {}).get("ok")) for r in records if not is_failure(r))
    return [bool(v) for v in oks if v is not None]


def _rate(values) -> dict:
    v = [float(x) for x in values]
    return {"mean": float(np.mean(v)) if v else None, "n": len(v)}


def group_figures(records: list[dict], n_boot: int = 1000, seed: int = 0) -> dict:
    """The figures of a group of episode records (module docstring): ``episodes``, ``skill`` ({skill, lo, hi, n,
    score, s0}), ``score`` ({mean, ci_low, ci_high, n}), ``success``, ``spl``, ``parse_ok`` ({mean, n}),
    ``blocked`` ({steps, executed, rate}), ``api_errors``, ``errors`` (failures), ``prompt_tokens``,
    ``completion_tokens``, ``cost_usd``. A figure without data is None (mean) or NaN (skill)."""
    eps = list(episode_values(records).values())
    sk = skill_summary([e["score"] for e in eps], [e["s0"] for e in eps], n_boot=n_boot, seed=seed)
    succ = [record_value(r, "success") for r in records if not is_failure(r)]
    spl = [as_float(record_value(r, "spl")) for r in records if not is_failure(r)]
    nb, ns = blocked_steps(records)
    return {"episodes": len(records), "skill": sk,
            "score": summary_of((as_float(record_value(r, "score")) for r in records), n_boot, seed).to_dict(),
            "success": _rate(bool(v) for v in succ if v is not None),
            "spl": _rate(v for v in spl if math.isfinite(v)),
            "parse_ok": _rate(parse_ok_values(records)),
            "blocked": {"steps": nb, "executed": ns, "rate": nb / ns if ns else None},
            "api_errors": sum(1 for r in records if r.get("reason") == "api_error"),
            "errors": sum(1 for r in records if is_failure(r)),
            "prompt_tokens": sum(usage(r, "prompt_tokens") for r in records),
            "completion_tokens": sum(usage(r, "completion_tokens") for r in records),
            "cost_usd": sum(usage(r, "cost_usd") for r in records)}
