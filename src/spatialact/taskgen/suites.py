"""Built-in task suites: procedural scenes with exact ground truth, rebuilt from their seeds on any machine.

A suite is named ``NAME`` or ``NAME:N``. ``default`` is what ``spatialact demo`` runs: navigation in procedural
rooms, Franka manipulation on a tabletop and a floating hand, small enough that every baseline agent runs through
it in a few minutes on two cores. ``nav``, ``manip``, ``hand`` and ``full`` are more of the same (N: tasks per
kind).

Diagnostic suites (``docs/diagnostics.md``), navigation and manipulation:

* ``ladder`` — the difficulty ladder, levels L1–L5 (N: tasks per level and kind; default 2);
* ``viewpoint`` — pairs of tasks sharing scene and goal, from a common and an uncommon viewpoint (N: pairs per
  kind; default 4);
* ``diagnostics`` — one task per ladder level and one viewpoint pair per kind (N of each): the demo's subset.

Fixed suites, shipped as task files (the same tasks whatever the seed):

* ``game`` — navigation in real Doom levels (freedoom2.wad MAP01–MAP03, 10 tasks each, version 1; GameNav, needs
  the ``game`` extra): :mod:`spatialact.taskgen.game_suite` (N: the first N tasks of each map).
"""

from __future__ import annotations

from ..tasks import Task

__all__ = ["SUITES", "DIAGNOSTIC_SUITES", "FILE_SUITES", "MAX_PER_KIND", "builtin_suite", "is_suite"]

# name -> tasks per kind
SUITES: dict[str, dict[str, int]] = {
    "default": {"nav": 4, "manip": 3, "hand": 3},
    "nav": {"nav": 10},
    "manip": {"manip": 10},
    "hand": {"hand": 10},
    "full": {"nav": 40, "manip": 30, "hand": 30},
}
# name -> {builder: {kind: how many}} (ladder: tasks per level; viewpoint: pairs)
DIAGNOSTIC_SUITES: dict[str, dict[str, dict[str, int]]] = {
    "ladder": {"ladder": {"nav": 2, "manip": 2}},
    "viewpoint": {"viewpoint": {"nav": 4, "manip": 4}},
    "diagnostics": {"ladder": {"nav": 1, "manip": 1}, "viewpoint": {"nav": 1, "manip": 1}},
}

#: name -> what the shipped task file holds (fixed suites: the seed does not change them)
FILE_SUITES: dict[str, str] = {"game": "navigation in freedoom2.wad MAP01-MAP03 (GameNav), version 1"}


MAX_PER_KIND = 100_000  # a typo of a few more digits is refused, not generated for hours


def is_suite(spec: str) -> bool:
    """Whether ``spec`` (``NAME`` or ``NAME:N``) names a built-in suite."""
    name = spec.split(":", 1)[0]
    return name in SUITES or name in DIAGNOSTIC_SUITES or name in FILE_SUITES


def builtin_suite(spec: str = "default", seed: int = 0) -> list[Task]:
    """The tasks of a built-in suite: ``"default"``, ``"nav:20"`` (20 navigation tasks), ``"ladder:3"`` (3 tasks
    per level and kind), ...

    Deterministic: the same spec and seed give the same tasks (scenes, poses, ground truth); a fixed suite
    (``game``, ``game:N``: the first N tasks of each map) is the same whatever the seed."""
    name, _, n = spec.partition(":")
    if name not in SUITES and name not in DIAGNOSTIC_SUITES and name not in FILE_SUITES:
        known = ", ".join(list(SUITES) + list(DIAGNOSTIC_SUITES) + list(FILE_SUITES))
        raise ValueError(f"unknown suite {name!r}; built-in suites: {known}")
    if n and (not n.isdigit() or not 1 <= int(n) <= MAX_PER_KIND):
        raise ValueError(f"suite {spec[:60]!r}: the part after ':' must be a number of tasks per kind from 1 to "
                         f"{MAX_PER_KIND:,}")
    if name in FILE_SUITES:
        from .game_suite import game_suite_tasks

        return game_suite_tasks(int(n) if n else None)
    if name in DIAGNOSTIC_SUITES:
        from .ladder import ladder_tasks, viewpoint_pairs

        builders = {"ladder": ladder_tasks, "viewpoint": viewpoint_pairs}
        tasks: list[Task] = []
        for i, (builder, counts) in enumerate(DIAGNOSTIC_SUITES[name].items()):
            for j, (kind, k) in enumerate(counts.items()):
                tasks += builders[builder](kind, int(n) if n else k, seed=seed * 1000 + 10 * i + j)
        return tasks
    counts = dict(SUITES[name])
    if n:
        counts = {k: int(n) for k in counts}
    from .procedural import procedural_tasks

    tasks = []
    for i, (kind, k) in enumerate(counts.items()):
        tasks += procedural_tasks(kind, k, seed=seed * 1000 + i)
    return tasks
