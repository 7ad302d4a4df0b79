"""The public API, frozen: the names each public package exports (its ``__all__``) are listed in
tests/public_api.json, so that adding, removing or renaming one is a visible decision (a change to that file,
and a line in CHANGELOG.md) rather than a side effect.

After a deliberate change: ``SPATIALACT_UPDATE_API=1 pytest tests/docs/test_public_api.py`` rewrites the file.
"""

from __future__ import annotations

import importlib
import json
import os
import warnings
from pathlib import Path

import pytest

FROZEN = Path(__file__).resolve().parents[1] / "public_api.json"
PUBLIC = ("action_space", "trajectories", "tasks", "scorers", "records", "vocab", "geometry", "image_files",
          "jsonline", "cache", "schema_compiler", "envs", "taskgen", "agents", "diagnostics", "evaluation",
          "questions", "report", "export")

# The entry points users, notebooks and outside checks call (the README's, and every notebook's): each must stay
# exported by the package named, whatever else changes.
ENTRY_POINTS = {
    "action_space": ["Primitive", "StepSizes", "Step", "ActionSequence", "parse_response", "ParseError", "mirror"],
    "scorers": ["score_episode", "score_steps_batch", "aggregate_episodes", "score_lmms_eval", "to_lmms_extra_info",
                "score_file"],
    "trajectories": ["Trajectory", "load_trajectory"],
    "tasks": ["extract_actions", "replay", "load_tasks", "save_tasks"],
    "evaluation": ["load_run"],
    "diagnostics": ["rpdr", "label_cv", "circular_eval", "viewpoint_delta", "mirror_inconsistency", "MirrorWrapper"],
    "envs": ["make_env", "replay_trajectory", "execute_sequence"],
    "taskgen": ["procedural_tasks", "ladder_tasks", "viewpoint_pairs", "builtin_suite"],
    "agents": ["make_agent"],
    "report": ["make_report"],
}


def _exports() -> dict[str, list[str]]:
    return {name: sorted(importlib.import_module(f"spatialact.{name}").__all__) for name in PUBLIC}


def test_the_exported_names_are_the_frozen_ones():
    now = _exports()
    if os.environ.get("SPATIALACT_UPDATE_API"):
        FROZEN.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    frozen = json.loads(FROZEN.read_text(encoding="utf-8"))
    changes = {}
    for name in sorted(set(now) | set(frozen)):
        added = sorted(set(now.get(name, ())) - set(frozen.get(name, ())))
        removed = sorted(set(frozen.get(name, ())) - set(now.get(name, ())))
        if added or removed:
            changes[name] = {"added": added, "removed": removed}
    assert changes == {}, "the public API changed: if on purpose, update tests/public_api.json (see the docstring)"


@pytest.mark.parametrize("package", PUBLIC)
def test_every_exported_name_resolves_without_a_deprecation(package):
    mod = importlib.import_module(f"spatialact.{package}")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        missing = [n for n in mod.__all__ if not hasattr(mod, n)]
    assert missing == []


def test_the_entry_points_are_exported():
    now = _exports()
    assert {p: [n for n in names if n not in now[p]] for p, names in ENTRY_POINTS.items()} == \
        {p: [] for p in ENTRY_POINTS}


@pytest.mark.parametrize("package", PUBLIC)
def test_every_exported_function_and_class_is_defined_in_its_package(package):
    """A package hands out its own names only (docs/architecture.md, "One home per name"): no function or class it
    exports is defined in another package (the lazy ``__getattr__`` maps are checked here, where ast cannot)."""
    import inspect

    mod = importlib.import_module(f"spatialact.{package}")
    foreign = [f"{name} ({obj.__module__})" for name in mod.__all__
               for obj in [getattr(mod, name)]
               if (inspect.isfunction(obj) or inspect.isclass(obj))
               and not (obj.__module__ == mod.__name__ or obj.__module__.startswith(mod.__name__ + "."))]
    assert foreign == []
