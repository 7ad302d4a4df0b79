"""Reads spatialact's source with ``ast`` (nothing is imported) and answers the architecture test's questions:
which module imports which (imports inside functions included), which private names cross modules, which
third-party libraries the light core imports, how long functions are.

The documented order of the layers lives in docs/architecture.md; :data:`LAYERS` is the same list, and a test
checks that the two agree.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = "spatialact"

# The floors, lowest first. A unit (a top-level module or package of spatialact) may import units on lower floors
# only; units on one floor do not import each other. "" is the root package (``spatialact/__init__.py``).
LAYERS: list[tuple[str, ...]] = [
    ("",),
    ("vocab",),
    ("geometry",),
    ("cache",),
    ("jsonline",),
    ("outputs",),
    ("image_files",),
    ("schema_compiler",),
    ("records",),
    ("trajectories", "action_space"),
    ("tasks",),
    ("scorers",),
    ("envs",),
    ("taskgen",),
    ("agents",),
    ("diagnostics",),
    ("evaluation",),
    ("questions",),
    ("report",),
    ("export",),
    ("cli",),
]

# The light core: what a user who only scores a file installs (numpy, scipy, jsonschema, tqdm, orjson).
LIGHT_CORE = ("", "vocab", "geometry", "cache", "jsonline", "outputs", "image_files", "schema_compiler", "records", "trajectories",
              "action_space", "tasks", "scorers")
HEAVY = ("pybullet", "pybullet_data", "torch", "gymnasium", "moderngl", "glcontext", "openai", "transformers",
         "ray", "habitat_sim", "vizdoom", "trimesh", "cv2", "matplotlib", "pandas", "stable_baselines3")
# Optional backends of the light core: a heavy library imported inside this function only, when asked for.
HEAVY_EXEMPT = {("spatialact.scorers.batch", "torch")}

# Private names of other objects that are public API of the standard library (namedtuple, os, enum).
FOREIGN_UNDERSCORE_API = {"_replace", "_asdict", "_fields", "_make", "_field_defaults", "_exit", "_missing_",
                          "_value_", "_name_", "_member_map_"}


@dataclass
class Import:
    module: str          # the importing module
    target: str          # the spatialact module (or package) imported, or a third-party top-level name
    line: int
    in_function: str | None  # the enclosing function's name, None at module level
    names: tuple[str, ...] = ()

    def where(self) -> str:
        return f"{self.module}:{self.line}"


@dataclass
class Source:
    modules: dict[str, Path] = field(default_factory=dict)
    packages: set[str] = field(default_factory=set)
    imports: list[Import] = field(default_factory=list)      # spatialact imports
    external: list[Import] = field(default_factory=list)     # third-party imports
    private_reads: list[tuple[str, int, str]] = field(default_factory=list)  # (module, line, what)
    functions: list[tuple[int, str, int, str]] = field(default_factory=list)  # (lines, module, line, name)

    def unit(self, module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else ""


def _module_name(path: Path, root: Path = SRC) -> tuple[str, bool]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts = parts[:-1]
    return ".".join(parts), is_pkg


def _resolve(module: str, is_pkg: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_pkg:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


class _Visitor(ast.NodeVisitor):
    def __init__(self, src: Source, module: str, is_pkg: bool, defined: set[str], elsewhere: set[str]):
        self.src, self.module, self.is_pkg, self.defined = src, module, is_pkg, defined
        self.elsewhere = elsewhere  # private names other spatialact modules define
        self.stack: list[str] = []

    def _func(self) -> str | None:
        return self.stack[-1] if self.stack else None

    def visit_FunctionDef(self, node):
        self.src.functions.append((node.end_lineno - node.lineno + 1, self.module, node.lineno, node.name))
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def _add(self, target: str, line: int, names=()):
        imp = Import(self.module, target, line, self._func(), tuple(names))
        (self.src.imports if target == PKG or target.startswith(PKG + ".") else self.src.external).append(imp)

    def visit_Import(self, node):
        for a in node.names:
            self._add(a.name if a.name.startswith(PKG) else a.name.split(".")[0], node.lineno)

    def visit_ImportFrom(self, node):
        target = _resolve(self.module, self.is_pkg, node.level, node.module)
        if not (target == PKG or target.startswith(PKG + ".")):
            self._add(target.split(".")[0], node.lineno)
            return
        plain = []
        for a in node.names:
            sub = f"{target}.{a.name}"
            if sub in self.src.modules:
                self._add(sub, node.lineno)
            else:
                plain.append(a.name)
                if a.name.startswith("_") and not a.name.startswith("__"):
                    self.src.private_reads.append((self.module, node.lineno, f"from {target} import {a.name}"))
        if plain:
            self._add(target, node.lineno, plain)

    def visit_Attribute(self, node):
        name = node.attr
        if name.startswith("_") and not name.startswith("__") and name not in FOREIGN_UNDERSCORE_API:
            obj = node.value
            own = isinstance(obj, ast.Name) and obj.id in ("self", "cls")
            own = own or (isinstance(obj, ast.Call) and isinstance(obj.func, ast.Name) and obj.func.id == "super")
            if not own and name not in self.defined and name in self.elsewhere:
                self.src.private_reads.append((self.module, node.lineno, ast.unparse(node)))
        self.generic_visit(node)

    def visit_Call(self, node):
        f = node.func
        if (isinstance(f, ast.Name) and f.id in ("getattr", "hasattr", "setattr") and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            name = node.args[1].value
            if (name.startswith("_") and not name.startswith("__") and name not in self.defined
                    and name in self.elsewhere):
                self.src.private_reads.append((self.module, node.lineno, f"{f.id}(…, {name!r})"))
        self.generic_visit(node)


def _defined_names(tree: ast.AST) -> set[str]:
    """Every name a module defines: functions, classes, variables, attributes it sets on ``self`` / ``cls``,
    arguments, keywords and imported names."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif (isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name)
              and n.value.id in ("self", "cls")):
            out.add(n.attr)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, ast.keyword) and n.arg:
            out.add(n.arg)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split(".")[0])
    return out


def read_source(root: Path = SRC) -> Source:
    src = Source()
    files = sorted((root / PKG).rglob("*.py"))
    for p in files:
        name, is_pkg = _module_name(p, root)
        src.modules[name] = p
        if is_pkg:
            src.packages.add(name)
    trees = {p: ast.parse(p.read_text(encoding="utf-8"), filename=str(p)) for p in files}
    defined = {p: _defined_names(t) for p, t in trees.items()}
    for p in files:
        name, is_pkg = _module_name(p, root)
        elsewhere = {n for q, names in defined.items() if q != p for n in names if n.startswith("_")}
        _Visitor(src, name, is_pkg, defined[p], elsewhere).visit(trees[p])
    return src


def strongly_connected(nodes, edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of more than one node (circles)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def floor_of(unit: str) -> int | None:
    for i, floor in enumerate(LAYERS):
        if unit in floor:
            return i
    return None


_ALIAS_ROW = re.compile(r"^\|\s*`(spatialact[\w.]*)`\s*\|")


def documented_aliases(doc: Path) -> set[str]:
    """Modules named in the first column of docs/architecture.md's deprecated-alias table."""
    out, inside = set(), False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            inside = "deprecated" in line.lower()
            continue
        m = _ALIAS_ROW.match(line) if inside else None
        if m:
            out.add(m.group(1))
    return out


# ----- re-exports: every public name has one home -------------------------------------------------------------------
def _top_level(tree: ast.Module):
    """The statements run at import: the module's own, and those inside top-level ``if`` / ``try`` blocks."""
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        yield node
        if isinstance(node, (ast.If, ast.Try)):
            todo[:0] = [*node.body, *getattr(node, "handlers", ()), *node.orelse, *getattr(node, "finalbody", ())]
        elif isinstance(node, ast.ExceptHandler):
            todo[:0] = node.body


def _bindings(module: str, is_pkg: bool, tree: ast.Module) -> tuple[set[str], dict[str, str]]:
    """(names the module defines itself, {name: the module it was imported from}) at module level."""
    defined, imported = set(), {}
    for node in _top_level(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_pkg, node.level, node.module)
            for a in node.names:
                imported[a.asname or a.name] = target
        elif isinstance(node, ast.Import):
            for a in node.names:
                imported[a.asname or a.name.split(".")[0]] = a.name
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                defined.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return defined, {k: v for k, v in imported.items() if k not in defined}


def _dunder_all(tree: ast.Module) -> list[str]:
    """The string constants of ``__all__`` (a literal, or ``sorted(...)`` of one)."""
    for node in _top_level(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return [n.value for n in ast.walk(node.value) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return []


def _getattr_imports(module: str, is_pkg: bool, tree: ast.Module) -> list[tuple[int, str]]:
    """(line, target) of each import inside the module-level ``__getattr__`` (``importlib.import_module`` of a
    literal or an f-string counts: its target is the literal text before the first placeholder)."""
    out = []
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name == "__getattr__"):
            continue
        for n in ast.walk(node):
            if isinstance(n, ast.ImportFrom):
                target = _resolve(module, is_pkg, n.level, n.module)
                # ``from .. import taskgen``: the module imported is the name
                out.extend((n.lineno, f"{target}.{a.name}" if n.module is None else target) for a in n.names)
            elif isinstance(n, ast.Import):
                out.extend((n.lineno, a.name) for a in n.names if a.name.split(".")[0] == PKG)
            elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "import_module"
                  and n.args):
                out.append((n.lineno, "(dynamic)"))
    return out


def reexports(root: Path = SRC) -> list[str]:
    """Every name a module hands out that it imported from another module, one line each:

    * a module that is not a package's ``__init__`` and lists in ``__all__`` a name it imports rather than defines,
      or has a module-level ``__getattr__`` that imports (an alias to another module's attribute);
    * a package's ``__init__`` that lists in ``__all__`` a name imported from outside the package, or a name that
      the submodule it imports it from imports in turn, or whose ``__getattr__`` imports from outside the package.

    The root package (``spatialact/__init__.py``) holds the version only and is not read.
    """
    files = sorted((root / PKG).rglob("*.py"))
    info = {}
    for p in files:
        name, is_pkg = _module_name(p, root)
        tree = ast.parse(p.read_text(encoding="utf-8"), filename=str(p))
        info[name] = (is_pkg, tree, *_bindings(name, is_pkg, tree))
    bad = []
    for name, (is_pkg, tree, defined, imported) in sorted(info.items()):
        if name == PKG:
            continue
        exported = _dunder_all(tree)
        inside = name + "." if is_pkg else None
        for n in exported:
            if n not in imported:
                continue
            src = imported[n]
            if not is_pkg:
                bad.append(f"{name}: __all__ lists {n!r}, imported from {src}")
            elif src != name and not src.startswith(inside):
                bad.append(f"{name}: __all__ lists {n!r}, imported from {src}, outside the package")
            elif src in info and not info[src][0] and n in info[src][3]:
                bad.append(f"{name}: __all__ lists {n!r}, which {src} imports from {info[src][3][n]}")
        for line, target in _getattr_imports(name, is_pkg, tree):
            if not is_pkg:
                bad.append(f"{name}:{line}: __getattr__ imports {target} (an alias)")
            elif target != "(dynamic)" and target != name and not target.startswith(inside):
                bad.append(f"{name}:{line}: __getattr__ imports {target}, outside the package (an alias)")
    return bad


def imports_not_from_home(root: Path = SRC) -> list[str]:
    """``from M import name`` anywhere in spatialact (imports inside functions included) where ``M`` is a module, not
    a package, that does not define ``name`` but imports it: the name is to be imported from its home."""
    files = sorted((root / PKG).rglob("*.py"))
    info, trees = {}, {}
    for p in files:
        name, is_pkg = _module_name(p, root)
        trees[name] = (is_pkg, ast.parse(p.read_text(encoding="utf-8"), filename=str(p)))
        info[name] = (is_pkg, *_bindings(name, is_pkg, trees[name][1]))
    bad = []
    for name, (is_pkg, tree) in sorted(trees.items()):
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _resolve(name, is_pkg, node.level, node.module)
            if target not in info or info[target][0]:
                continue
            for a in node.names:
                if a.name in info[target][2]:
                    bad.append(f"{name}:{node.lineno}: {a.name} from {target}, which imports it from "
                               f"{info[target][2][a.name]}")
    return bad
