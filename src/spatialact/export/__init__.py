"""Exports of spatialact's tasks for other evaluation tools, above the task generation, the agents' prompts and the
scorers (docs/architecture.md), below the command line.

* :func:`export_source` — the tasks of a built-in suite or a task file, with what an export records of them;
* :func:`export_lmms_eval` — one-shot tasks as an lmms-eval task folder: a task per track, their group, the items
  as Parquet with their views, and a ``utils.py`` that scores answers with spatialact's scorer and gives each
  track's skill (:mod:`.lmms_eval`; the functions the folder calls at run time: :mod:`.lmms_task`);
  ``spatialact export lmms-eval`` is its command (docs/lmms_eval_profile.md, "Export to lmms-eval");
* :mod:`.openai_batch` — one-shot tasks as an OpenAI Batch API input file (``spatialact prompt --format
  openai-batch``) and the provider's output file read back as answers (``spatialact score``; docs/scoring.md,
  "Scoring a provider's batch output");
* :mod:`.views` — the first observation of an eval episode of a task (what a model agent sees), the one function
  ``spatialact prompt``, the lmms-eval export and the batch file build their views with.

Names load on first use: lmms-eval's process imports :mod:`.lmms_task` (light core only) through this package.
"""

from __future__ import annotations

import importlib

__all__ = ["export_lmms_eval", "export_source", "ExportSource", "ExportError", "track_of", "group_name"]

_HOME = {name: "lmms_eval" for name in __all__}


def __getattr__(name):
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
