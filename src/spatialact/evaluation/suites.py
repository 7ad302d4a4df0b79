"""Built-in task suites: procedural scenes with exact ground truth, rebuilt from their seeds on any machine.

A suite is named ``NAME`` or ``NAME:N`` (N tasks of each kind). ``default`` is what ``spatialact demo`` runs:
navigation in procedural rooms, Franka manipulation on a tabletop and a floating hand, small enough that every
baseline agent runs through it in a few minutes on two cores.
"""

from __future__ import annotations

from ..tasks import Task

__all__ = ["SUITES", "builtin_suite", "is_suite"]

# name -> tasks per kind
SUITES: dict[str, dict[str, int]] = {
    "default": {"nav": 4, "manip": 3, "hand": 3},
    "nav": {"nav": 10},
    "manip": {"manip": 10},
    "hand": {"hand": 10},
    "full": {"nav": 40, "manip": 30, "hand": 30},
}


def is_suite(spec: str) -> bool:
    return spec.split(":", 1)[0] in SUITES


def builtin_suite(spec: str = "default", seed: int = 0) -> list[Task]:
    """The tasks of a built-in suite: ``"default"``, ``"nav:20"`` (20 navigation tasks), ...

    Deterministic: the same spec and seed give the same tasks (scenes, poses, ground truth)."""
    name, _, n = spec.partition(":")
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}; built-in suites: {', '.join(SUITES)}")
    counts = dict(SUITES[name])
    if n:
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"suite {spec!r}: the part after ':' must be a positive number of tasks per kind")
        counts = {k: int(n) for k in counts}
    from ..envs import procedural_tasks

    tasks: list[Task] = []
    for i, (kind, k) in enumerate(counts.items()):
        tasks += procedural_tasks(kind, k, seed=seed * 1000 + i)
    return tasks
