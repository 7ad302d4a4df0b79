"""Task generation, above the environments: procedural suites, the difficulty ladder and viewpoint pairs, the
built-in suites, replay scenes for trajectory tasks and the whole trajectory → task pipeline.

It builds tasks through the environments' public world methods (:mod:`spatialact.envs.world`); it imports
``envs``, ``tasks``, ``action_space`` and ``trajectories``, nothing above them. Names load on first use, so
``spatialact.taskgen.suites`` (the suite table) does not import the simulator.

* :func:`procedural_tasks` — random reachable goals in seeded scenes (:mod:`.procedural`);
* :func:`ladder_tasks`, :func:`viewpoint_pairs` — the diagnostic sets (:mod:`.ladder`);
* :func:`builtin_suite`, :data:`SUITES`, :func:`is_suite`, :func:`suite_info` — the built-in suites (:mod:`.suites`),
  the frozen benchmark suite ``l4-v1`` among them (:mod:`.l4_suite`, docs/benchmark.md);
* :func:`attach_replay_scenes` — replay scenes, and the pairs the simulator cannot run dropped
  (:mod:`.replay_scenes`);
* :func:`build_trajectory_tasks` — the trajectory → task file pipeline (:mod:`.trajectory_tasks`).
"""

from __future__ import annotations

import importlib

__all__ = ["procedural_tasks", "TASK_VARIANTS", "ladder_tasks", "viewpoint_pairs", "LEVEL_FACTORS", "LADDER_KINDS",
           "UNCOMMON_FACTORS", "builtin_suite", "is_suite", "suite_info", "SUITES", "DIAGNOSTIC_SUITES",
           "FROZEN_SUITES", "MAX_PER_KIND",
           "attach_replay_scenes", "build_trajectory_tasks", "TrajectoryTasks", "NoTasks"]

_HOME = {"procedural_tasks": "procedural", "TASK_VARIANTS": "procedural",
         "ladder_tasks": "ladder", "viewpoint_pairs": "ladder", "LEVEL_FACTORS": "ladder", "LADDER_KINDS": "ladder",
         "UNCOMMON_FACTORS": "ladder",
         "builtin_suite": "suites", "is_suite": "suites", "suite_info": "suites", "SUITES": "suites",
         "DIAGNOSTIC_SUITES": "suites", "FROZEN_SUITES": "suites", "MAX_PER_KIND": "suites",
         "attach_replay_scenes": "replay_scenes",
         "build_trajectory_tasks": "trajectory_tasks", "TrajectoryTasks": "trajectory_tasks",
         "NoTasks": "trajectory_tasks"}


def __getattr__(name):
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
