"""The architecture test (docs/architecture.md): read from the source with ast, imports inside functions counted.

It fails, naming the import, on a circle between packages or between files, on an import against the documented
order of the layers, on a private name imported or read across modules, on the light core importing a heavy
library, on a function over 120 lines, and on a name handed out by a module that is not its home (a re-export
or an alias: ``_architecture.reexports``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from _architecture import (HEAVY, HEAVY_EXEMPT, LAYERS, LIGHT_CORE, SRC, floor_of, imports_not_from_home,
                           read_source, reexports, strongly_connected)
from traj_helpers import smooth_poses, write_tum

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
MAX_FUNCTION_LINES = 120


@pytest.fixture(scope="module")
def source():
    return read_source()


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


def test_imports_follow_the_layers(source):
    bad = []
    for i in source.imports:
        a, b = source.unit(i.module), source.unit(i.target)
        if a == b:
            continue
        fa, fb = floor_of(a), floor_of(b)
        if fa is None or fb is None or fb >= fa:
            bad.append(f"{i.where()}: {a or '(root)'} imports {i.target} ({b or '(root)'}), "
                       f"{'same floor' if fa == fb else 'above it'}")
    assert bad == []


def test_no_circle_between_packages(source):
    edges = defaultdict(set)
    for i in source.imports:
        a, b = source.unit(i.module), source.unit(i.target)
        if a != b:
            edges[a].add(b)
    assert strongly_connected(sorted(edges), edges) == []


def test_no_circle_between_files(source):
    edges = defaultdict(set)
    where = {}
    for i in source.imports:
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


def test_no_module_hands_out_a_name_it_imports():
    """One home per public name: no module re-exports (``__all__``) or aliases (``__getattr__``) another module's
    names; a package's ``__init__`` hands out only names its own modules define."""
    assert reexports() == []


def test_names_are_imported_from_their_home():
    """``from M import name`` only where M defines the name (or M is a package handing out its own names)."""
    assert imports_not_from_home() == []


def test_the_reexport_rule_catches_a_shim(tmp_path):
    """Known answers: a re-export in ``__all__``, an alias ``__getattr__``, a package ``__init__`` that hands out
    a name from outside the package and one that hands out a name its submodule only imports."""
    pkg = tmp_path / "spatialact"
    (pkg / "a").mkdir(parents=True)
    (pkg / "b").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("from .home import f\nfrom .relay import g\n__all__ = ['f', 'g']\n")
    (pkg / "a" / "home.py").write_text("def f():\n    pass\n\n\ndef g():\n    pass\n")
    (pkg / "a" / "relay.py").write_text("from .home import f, g\n\n__all__ = ['g']\n")
    (pkg / "a" / "old.py").write_text("def __getattr__(name):\n    from . import home\n\n"
                                      "    return getattr(home, name)\n")
    (pkg / "b" / "__init__.py").write_text("from ..a.home import f\n__all__ = ['f', 'h']\n\n\n"
                                           "def __getattr__(name):\n    from ..a import home\n\n"
                                           "    return home.g\n")
    (pkg / "a" / "user.py").write_text("from .relay import f\n")
    assert imports_not_from_home(tmp_path) == [
        "spatialact.a:2: g from spatialact.a.relay, which imports it from spatialact.a.home",
        "spatialact.a.user:1: f from spatialact.a.relay, which imports it from spatialact.a.home"]
    assert reexports(tmp_path) == [
        "spatialact.a: __all__ lists 'g', which spatialact.a.relay imports from spatialact.a.home",
        "spatialact.a.old:2: __getattr__ imports spatialact.a.home (an alias)",
        "spatialact.a.relay: __all__ lists 'g', imported from spatialact.a.home",
        "spatialact.b: __all__ lists 'f', imported from spatialact.a.home, outside the package",
        "spatialact.b:6: __getattr__ imports spatialact.a, outside the package (an alias)",
    ]


def test_no_function_over_120_lines(source):
    long = [f"{m}:{line} {name} ({n} lines)" for n, m, line, name in source.functions if n > MAX_FUNCTION_LINES]
    assert long == []


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
