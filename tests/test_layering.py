"""The architecture test (docs/architecture.md): read from the source with ast, imports inside functions counted.

It fails, naming the import, on a circle between packages or between files, on an import against the documented
order of the layers, on a private name imported or read across modules, on the light core importing a heavy
library, and on a function over 120 lines. The deprecated aliases of docs/architecture.md (a module's
``__getattr__`` that warns and imports a name from its new home above) are the only exemption.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from _architecture import (HEAVY, HEAVY_EXEMPT, LAYERS, LIGHT_CORE, SRC, documented_aliases, floor_of, read_source,
                           strongly_connected)
from traj_helpers import smooth_poses, write_tum

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
MAX_FUNCTION_LINES = 120


@pytest.fixture(scope="module")
def source():
    return read_source()


@pytest.fixture(scope="module")
def aliases():
    return documented_aliases(DOC)


def _counted(imports, aliases):
    """Imports that count: all but those inside the ``__getattr__`` of a documented deprecated alias."""
    return [i for i in imports if not (i.in_function == "__getattr__" and i.module in aliases)]


def test_every_unit_has_a_floor(source):
    units = {source.unit(m) for m in source.modules}
    placed = {u for floor in LAYERS for u in floor}
    assert units - placed == set(), "units without a place in LAYERS and docs/architecture.md"
    assert placed - units == set(), "LAYERS names units that do not exist"


def test_the_documented_order_is_the_tested_one():
    rows = []
    inside = False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            inside = line.strip() == "## Layers"
            continue
        if inside and line.startswith("| ") and not line.startswith("| floor") and not line.startswith("| ---"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            units = tuple("" if u == "(root)" else u.strip("`").removesuffix(".py").removesuffix("/")
                          for u in cells[1].split(", "))
            rows.append((int(cells[0]), units))
    assert [u for _, u in sorted(rows)] == LAYERS


def test_imports_follow_the_layers(source, aliases):
    bad = []
    for i in _counted(source.imports, aliases):
        a, b = source.unit(i.module), source.unit(i.target)
        if a == b:
            continue
        fa, fb = floor_of(a), floor_of(b)
        if fa is None or fb is None or fb >= fa:
            bad.append(f"{i.where()}: {a or '(root)'} imports {i.target} ({b or '(root)'}), "
                       f"{'same floor' if fa == fb else 'above it'}")
    assert bad == []


def test_no_circle_between_packages(source, aliases):
    edges = defaultdict(set)
    for i in _counted(source.imports, aliases):
        a, b = source.unit(i.module), source.unit(i.target)
        if a != b:
            edges[a].add(b)
    assert strongly_connected(sorted(edges), edges) == []


def test_no_circle_between_files(source, aliases):
    edges = defaultdict(set)
    where = {}
    for i in _counted(source.imports, aliases):
        if i.target in source.modules and i.target != i.module:
            edges[i.module].add(i.target)
            where.setdefault((i.module, i.target), i.where())
    circles = strongly_connected(sorted(source.modules), edges)
    named = [[where[(a, b)] + f" → {b}" for a in c for b in c if (a, b) in where] for c in circles]
    assert named == []


def test_no_private_name_crosses_modules(source):
    assert [f"{m}:{line}: {what}" for m, line, what in source.private_reads] == []


def test_the_light_core_imports_no_heavy_library(source):
    bad = []
    for i in source.external:
        if source.unit(i.module) in LIGHT_CORE and i.target in HEAVY:
            if i.in_function is not None and (i.module, i.target) in HEAVY_EXEMPT:
                continue
            bad.append(f"{i.where()}: {i.module} imports {i.target}")
    assert bad == []


def test_using_the_light_core_loads_no_heavy_library(tmp_path):
    code = ("import sys, json\n"
            "from spatialact.action_space import parse_response\n"
            "from spatialact.scorers import score_episode, score_steps_batch\n"
            "from spatialact.tasks import load_tasks\n"
            "import spatialact.records, spatialact.trajectories\n"
            "r = parse_response('{\"actions\": [\"Dolly In\"], \"step_nums\": [2]}')\n"
            "print(score_episode(r.sequence, r.sequence, kind='nav').total)\n"
            "print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    total, mods = out.stdout.splitlines()
    assert float(total) == 1.0
    assert set(json.loads(mods)) & set(HEAVY) == set()


def test_no_function_over_120_lines(source):
    long = [f"{m}:{line} {name} ({n} lines)" for n, m, line, name in source.functions if n > MAX_FUNCTION_LINES]
    assert long == []


def test_documented_aliases_are_the_only_upward_imports(source, aliases):
    """Every documented alias module really has a ``__getattr__`` that imports from above (no stale rows)."""
    upward = {i.module for i in source.imports if i.in_function == "__getattr__"
              and floor_of(source.unit(i.target)) is not None
              and floor_of(source.unit(i.target)) > floor_of(source.unit(i.module))}
    assert aliases == upward


def _alias_rows():
    rows, inside = [], False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            inside = "deprecated" in line.lower()
            continue
        if inside and line.startswith("| `spatialact"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            names = [n.strip("` ") for n in cells[1].split(",")]
            rows.append((cells[0].strip("`"), names, cells[2].strip("`")))
    return rows


@pytest.mark.parametrize("module,names,home", _alias_rows())
def test_every_documented_alias_warns_and_gives_the_moved_object(module, names, home):
    import importlib

    old = importlib.import_module(module)
    for name in names:
        with pytest.warns(DeprecationWarning, match=re.escape(home)):
            obj = getattr(old, name)
        assert obj is _lookup(home, name)


def _lookup(home, name):
    """A moved name in its new home: the package, or the submodule that defines it."""
    import importlib
    import pkgutil

    pkg = importlib.import_module(home)
    if hasattr(pkg, name):
        return getattr(pkg, name)
    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"{home}.{info.name}")
        if name in vars(mod):
            return vars(mod)[name]
    return None


# ----- the readers stay below the task code ---------------------------------------------------------------------------
SRC_DIR = str(SRC)


def test_importing_and_using_the_readers_imports_no_task_code(tmp_path):
    P, t = smooth_poses(30, 30.0, 0)
    write_tum(tmp_path / "cam.txt", t, P)
    code = ("import sys, json\n"
            "from spatialact.trajectories import load_trajectory\n"
            f"traj = load_trajectory({str(tmp_path / 'cam.txt')!r})\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('spatialact'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": SRC_DIR, "PATH": "/usr/bin:/bin"})
    mods = json.loads(out.stdout)
    assert "spatialact.trajectories.generic" in mods  # the TUM reader ran
    above = [m for m in mods if m.count(".") and m.split(".")[1] in ("tasks", "action_space", "envs", "agents", "scorers",
                                                    "evaluation", "cli")]
    assert above == []


def test_extraction_and_building_names_stay_importable_from_trajectories():
    """The old names are deprecated aliases: the same objects, each with a DeprecationWarning naming its new path."""
    import spatialact.tasks.extraction as ex
    import spatialact.tasks.from_trajectory as ft

    with pytest.warns(DeprecationWarning, match=r"spatialact\.tasks\.extract_actions"):
        from spatialact.trajectories import extract_actions
    with pytest.warns(DeprecationWarning, match=r"use spatialact\.tasks\.extraction\.keyframe_indices"):
        from spatialact.trajectories import keyframe_indices
    with pytest.warns(DeprecationWarning, match=r"use spatialact\.tasks\.tasks_from_trajectory"):
        from spatialact.trajectories import tasks_from_trajectory
    with pytest.warns(DeprecationWarning):
        from spatialact.trajectories import Extraction, quantisation_bound, replay

    assert extract_actions is ex.extract_actions and replay is ex.replay and Extraction is ex.Extraction
    assert keyframe_indices is ex.keyframe_indices and quantisation_bound is ex.quantisation_bound
    assert tasks_from_trajectory is ft.tasks_from_trajectory
    assert np.isclose(quantisation_bound(ex.StepSizes(0.02, 0.1))[0], np.sqrt(3) / 2 * 0.02)
