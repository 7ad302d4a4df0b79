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

The frozen benchmark suite (docs/benchmark.md; :mod:`spatialact.taskgen.l4_suite`), a versioned task file whose
SHA-256 identifies a run's tasks:

* ``l4-v1`` — tracks nav, manip, hand, game and camera; ``l4-v1/<track>`` one track;
* ``l4-v1-lite`` — its small split for quick checks (the first tasks of each track); ``l4-v1-lite/<track>``.

:func:`suite_info` says what identifies a suite's tasks (name, version, track, the file's SHA-256, the pins).
"""

from __future__ import annotations

from ..tasks import Task

__all__ = ["SUITES", "DIAGNOSTIC_SUITES", "FILE_SUITES", "FROZEN_SUITES", "MAX_PER_KIND", "builtin_suite", "is_suite",
           "suite_info"]

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
#: name -> what it is (frozen suites: a name with ``/<track>`` runs one track; docs/benchmark.md)
FROZEN_SUITES: dict[str, str] = {
    "l4-v1": "the frozen benchmark suite, version 1: nav, manip, hand, game and camera tracks",
    "l4-v1-lite": "the small split of l4-v1 for quick checks (the first tasks of each track)",
}


MAX_PER_KIND = 100_000  # a typo of a few more digits is refused, not generated for hours


def _known() -> str:
    return ", ".join(list(SUITES) + list(DIAGNOSTIC_SUITES) + list(FILE_SUITES) + list(FROZEN_SUITES))


def is_suite(spec: str) -> bool:
    """Whether ``spec`` (``NAME``, ``NAME:N``, or a frozen suite's ``NAME/<track>``) names a built-in suite."""
    from .l4_suite import is_frozen_spec, parse_frozen_spec

    if is_frozen_spec(spec):
        try:
            parse_frozen_spec(spec)
        except ValueError:
            return False
        return True
    name = spec.split(":", 1)[0]
    return name in SUITES or name in DIAGNOSTIC_SUITES or name in FILE_SUITES


def _check(spec: str) -> tuple[str, str]:
    """(name, N text) of a generated or file suite's spec, or a one-line ValueError."""
    name, _, n = spec.partition(":")
    if name not in SUITES and name not in DIAGNOSTIC_SUITES and name not in FILE_SUITES:
        raise ValueError(f"unknown suite {name[:60]!r}; built-in suites: {_known()}")
    if n and (not n.isdigit() or not 1 <= int(n) <= MAX_PER_KIND):
        raise ValueError(f"suite {spec[:60]!r}: the part after ':' must be a number of tasks per kind from 1 to "
                         f"{MAX_PER_KIND:,}")
    return name, n


def suite_info(spec: str) -> dict:
    """What identifies a built-in suite's tasks: ``name``, ``version``, ``track``, ``sha256``, ``pins``,
    ``n_tasks`` (and ``split`` for the frozen suite).

    The frozen suite (``l4-v1``, ``l4-v1/nav``, ``l4-v1-lite``, ...): version 1, the track or None, the SHA-256 of
    the shipped task file (one file holds every track and the lite split), the pins (``image_size``,
    ``renderer``, ``render_quality``, ``prompt_version``, ``profile``) and the number of tasks. The ``game`` file
    suite: version 1 and its file's SHA-256, no pins. Generated suites (``default``, ``nav:20``, ``ladder``, ...):
    no version, SHA-256 or pins (their tasks are rebuilt from the seed), and ``n_tasks`` as generated. An unknown
    suite raises a one-line ValueError."""
    from .l4_suite import frozen_suite_info, is_frozen_spec

    if is_frozen_spec(spec):
        return frozen_suite_info(spec)
    name, n = _check(spec)
    info = {"name": name, "version": None, "track": None, "sha256": None, "pins": None, "n_tasks": None}
    if name in FILE_SUITES:
        import hashlib

        from .game_suite import game_suite_tasks, suite_path

        info.update(version=1, sha256=hashlib.sha256(suite_path().read_bytes()).hexdigest(),
                    n_tasks=len(game_suite_tasks(int(n) if n else None)))
    elif name in DIAGNOSTIC_SUITES:
        per = {"ladder": 5, "viewpoint": 2}  # tasks per unit of N: five levels; two views a pair
        info["n_tasks"] = sum(per[b] * (int(n) if n else k) for b, counts in DIAGNOSTIC_SUITES[name].items()
                              for k in counts.values())
    else:
        info["n_tasks"] = sum(int(n) if n else k for k in SUITES[name].values())
    return info


def builtin_suite(spec: str = "default", seed: int = 0) -> list[Task]:
    """The tasks of a built-in suite: ``"default"``, ``"nav:20"`` (20 navigation tasks), ``"ladder:3"`` (3 tasks
    per level and kind), ...

    Deterministic: the same spec and seed give the same tasks (scenes, poses, ground truth); a fixed suite
    (``game``, ``game:N``: the first N tasks of each map) and the frozen suite (``l4-v1``, ``l4-v1/<track>``,
    ``l4-v1-lite``, ``l4-v1-lite/<track>``: read from the shipped file, its SHA-256 checked) are the same whatever
    the seed."""
    from .l4_suite import frozen_suite_tasks, is_frozen_spec

    if is_frozen_spec(spec):
        return frozen_suite_tasks(spec)
    name, n = _check(spec)
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
