"""Evaluation: episodes, the runner, built-in suites, the results store and reports (SPEC §8).

Imports are lazy so that ``from spatialact.evaluation import load_run`` in a notebook does not start a
simulator.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "EpisodeConfig": "episode", "run_episode": "episode", "episode_key": "episode", "record_key": "episode",
    "check_runnable": "episode", "execution_limit": "episode", "is_failure": "episode",
    "TaskInputError": "episode",
    "AgentSpec": "runner", "run_eval": "runner", "RunSummary": "runner", "TaskNotRunnable": "runner",
    "EndpointUnreachable": "runner",
    "builtin_suite": "suites", "SUITES": "suites",
    "RunStore": "results", "load_run": "results", "read_records": "results", "export_parquet": "results",
    "provenance": "results", "find_runs": "results", "RunStoreError": "results", "RunConfigError": "results",
    "make_report": "report",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'spatialact.evaluation' has no attribute {name!r}")


def __dir__():
    return __all__
