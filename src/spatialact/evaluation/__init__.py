"""Evaluation: episodes, the runner and the results store (docs/evaluation.md); the built-in suites are
:mod:`spatialact.taskgen`, reports :mod:`spatialact.report`.

Imports are lazy so that ``from spatialact.evaluation import load_run`` in a notebook does not start a
simulator.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "EpisodeConfig": "episode", "run_episode": "episode", "check_runnable": "episode",
    "execution_limit": "episode", "TaskInputError": "episode",
    "AgentSpec": "runner", "run_eval": "runner", "RunSummary": "runner", "TaskNotRunnable": "runner",
    "EndpointUnreachable": "runner",
    "RunStore": "results", "load_run": "results", "read_records": "results", "export_parquet": "results",
    "provenance": "results", "find_runs": "results", "RunStoreError": "results", "RunConfigError": "results",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'spatialact.evaluation' has no attribute {name!r}")


def __dir__():
    return __all__
