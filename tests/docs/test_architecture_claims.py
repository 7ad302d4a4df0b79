"""The claims of docs/architecture.md's "One owner per concept" table that a test can check, read from the source
with ``ast`` and exact patterns (nothing is imported):

- every module or folder the table names exists, and every name it puts in brackets beside a module is defined
  there (``Class.method``: the class and the method; a dotted module path: that module);
- rotations from angles (a cosine and a sine of one angle in one function, scipy's ``spatial.transform``, PyBullet's
  Euler and quaternion helpers) are written in ``geometry.py`` and in the files the table's geometry row lists as
  deliberate exceptions — no other file, and no listed file without them;
- the pinhole formula (``f·X/Z + c``, ``(u − c)/f``, a focal length over a depth) is written in ``envs/camera.py``
  and in the files the table's camera row lists — no other file, and no listed file without it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "src" / "spatialact"
DOC = ROOT / "docs" / "architecture.md"
PATH = re.compile(r"`([\w/]+(?:\.py|\.json|/))`")
BRACKETED = re.compile(r"`([\w/]+(?:\.py|/))` \(([^()]*)\)")
NAME = re.compile(r"`([A-Za-z_][\w.]*)`")

# Functions with a cosine and a sine of one angle that build no rotation: headings (cos a, sin a) of a walk or a
# camera looking along them, points on circles and spheres of a mesh, a light's direction.
NOT_ROTATIONS = {
    ("envs/doom/explorer.py", "_choose"): "the explorer's candidate headings",
    ("envs/doom/explorer.py", "_act"): "the explorer's heading and its right",
    ("envs/free_camera.py", "random_start"): "a start heading for look_at",
    ("envs/gl/meshes.py", "sphere_part"): "a sphere's vertices",
    ("envs/gl/meshes.py", "cylinder_part"): "a cylinder's circle",
    ("envs/scenes.py", "_light"): "the light's direction",
    ("taskgen/l4_suite.py", "camera_path"): "a path's headings for look_at",
    ("taskgen/ladder.py", "_common_nav_start"): "a start heading for look_at",
    ("taskgen/ladder.py", "_manip_camera"): "an eye on an orbit, for look_at",
}
PYBULLET_ROTATIONS = {"getQuaternionFromEuler", "getEulerFromQuaternion", "getMatrixFromQuaternion",
                      "getQuaternionSlerp", "getAxisAngleFromQuaternion", "getQuaternionFromAxisAngle",
                      "getDifferenceQuaternion", "rotateVector"}
# The pinhole formula on one line: a focal length (fx, fy, K[0, 0], K[1, 1]) and a principal point (cx, cy,
# K[0, 2], K[1, 2]), or a focal length and a depth z.
F = r"(?:(?<!\w)(?:\w+\.)?f[xy]\b|K\[[01], ?[01]\])"
C = r"(?:(?<!\w)(?:\w+\.)?c[xy]\b|K\[[01], ?2\])"
PINHOLE = [
    re.compile(rf"{F}\s*\*[^#\n]{{0,80}}/[^#\n]{{0,80}}\+\s*{C}"),                # f·X/Z + c
    re.compile(rf"-\s*{C}\s*\)\s*(?:\*\s*[\w.]+\s*)?/\s*{F}"),                   # (u − c)/f, (u − c)·z/f
    re.compile(rf"{F}\s*/\s*z\b|\bz\s*/\s*{F}"),                                   # f/z, z/f
]


def _sources():
    for p in sorted(PKG.rglob("*.py")):
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:  # removed while the folder was listed
            continue
        yield p.relative_to(PKG).as_posix(), text


def _owner_rows() -> list[tuple[str, str]]:
    """(concept, its one place) of each row of the "One owner per concept" table."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## One owner per concept")
    end = text.find("\n## ", start + 1)
    rows = []
    for line in text[start:end if end > 0 else len(text)].splitlines():
        if line.startswith("| ") and not line.startswith(("| concept", "| ---")):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            assert len(cells) == 2, line
            rows.append((cells[0], cells[1]))
    assert len(rows) > 20
    return rows


def _row(word: str) -> str:
    (row,) = [concept + " | " + place for concept, place in _owner_rows() if concept.startswith(word)]
    return row


def _listed(row: str, owner: str) -> set[str]:
    """The .py files a row names besides its owner."""
    return {p for p in PATH.findall(row) if p.endswith(".py") and not p.startswith("tests/")} - {owner}


def _defined(path: str, name: str) -> bool:
    files = [PKG / path] if path.endswith(".py") else sorted((PKG / path).rglob("*.py"))
    pattern = re.compile(rf"^\s*(?:async def|def|class) {re.escape(name)}\b|^{re.escape(name)}\s*[:=]"
                         rf"|[\"']{re.escape(name)}[\"']", re.M)   # or a name given as a string (a tool's)
    return any(pattern.search(f.read_text(encoding="utf-8")) for f in files)


def test_every_path_of_the_table_exists():
    missing = [p for _, place in _owner_rows() for p in PATH.findall(place)
               if not (PKG / p).exists() and not (ROOT / p).exists()]
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_name_in_brackets_is_defined_in_its_module():
    checked, missing = 0, []
    for concept, place in _owner_rows():
        for path, inner in BRACKETED.findall(concept + " | " + place):
            for name in NAME.findall(inner):
                if "/" in name or name.endswith((".json", ".py")):
                    continue
                first, _, rest = name.partition(".")
                if rest and ((PKG / first).is_dir() or (PKG / f"{first}.py").exists()):
                    ok = (PKG / f"{name.replace('.', '/')}.py").exists()      # a module, e.g. evaluation.stats
                else:
                    ok = _defined(path, first) and (not rest or _defined(path, rest))
                checked += 1
                if not ok:
                    missing.append(f"{path}: {name}")
    assert checked > 15
    assert not missing, f"docs/architecture.md names what its module does not define: {missing}"


def _trig_pairs(tree: ast.AST) -> set[str]:
    """Functions (by name; "<module>" for top-level code) holding a cos and a sin of one same argument."""
    found: dict[str, dict[str, set[str]]] = {}

    def walk(node, fn):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else fn
            if isinstance(child, ast.Call) and len(child.args) == 1:
                f = child.func
                k = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
                if k in ("cos", "sin"):
                    found.setdefault(fn, {}).setdefault(ast.dump(child.args[0]), set()).add(k)
            walk(child, name)

    walk(tree, "<module>")
    return {fn for fn, args in found.items() if any(ks == {"cos", "sin"} for ks in args.values())}


def rotation_files() -> tuple[set[str], set[tuple[str, str]]]:
    """The files that write rotations from angles, and the (file, function) cos/sin pairs found."""
    files, pairs = set(), set()
    for path, text in _sources():
        tree = ast.parse(text)
        for fn in _trig_pairs(tree):
            pairs.add((path, fn))
            if (path, fn) not in NOT_ROTATIONS:
                files.add(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("scipy.spatial.transform"):
                files.add(path)
            elif isinstance(node, ast.Import) and any(a.name.startswith("scipy.spatial.transform") for a in node.names):
                files.add(path)
            elif isinstance(node, ast.Attribute) and node.attr in PYBULLET_ROTATIONS:
                files.add(path)
    return files, pairs


def test_trig_pairs_are_found():
    tree = ast.parse("import math\ndef r(a):\n    return [[math.cos(a), -math.sin(a)]]\n"
                     "def h(a, b):\n    return math.cos(a), math.sin(b)\n")
    assert _trig_pairs(tree) == {"r"}


def test_rotations_are_written_where_the_doc_says():
    files, pairs = rotation_files()
    listed = _listed(_row("frames, rotations"), "geometry.py")
    assert "geometry.py" in files
    assert files - {"geometry.py"} - listed == set(), "rotations from angles outside geometry.py and the listed files"
    assert listed - files == set(), "docs/architecture.md lists files that write no rotation"
    assert set(NOT_ROTATIONS) - pairs == set(), "NOT_ROTATIONS names functions without a cos/sin pair"


def pinhole_files() -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for path, text in _sources():
        for i, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            if code.lstrip().startswith(("``", "\"", "'")) or "``" in code:
                continue  # docstrings write the formula as words
            if any(p.search(code) for p in PINHOLE):
                out.setdefault(path, []).append(i)
    return out


def test_pinhole_patterns():
    hits = ["u = fx * X / Z + cx", "cam.fx * pc[..., 0] / zf + cam.cx", "(x - cam.cx) / cam.fx * z",
            "x = (u - K[0, 2]) * z / K[0, 0]", "(cols - K[0, 2]) / K[0, 0]",
            "truck_px = t * fx / z", "v = K[1, 1] * y / zb + K[1, 2]"]
    misses = ["fy = 1.2 * fx", "xfx * a / b + cx", "self.fx * sx", "K = np.array([[fx, 0.0, cx]])", "return fx, fy"]
    assert all(any(p.search(h) for p in PINHOLE) for h in hits)
    assert not any(p.search(m) for p in PINHOLE for m in misses)


def test_the_pinhole_formula_is_written_where_the_doc_says():
    found = pinhole_files()
    listed = _listed(_row("the camera"), "envs/camera.py")
    assert "envs/camera.py" in found
    outside = {p: lines for p, lines in found.items() if p != "envs/camera.py" and p not in listed}
    assert not outside, f"the pinhole formula outside envs/camera.py and the listed files (file: lines): {outside}"
    assert listed - set(found) == set(), "docs/architecture.md lists files that do not write the formula"
