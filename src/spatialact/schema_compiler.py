"""A fast checker compiled from a JSON Schema (the subset of Draft 2020-12 the shipped schemas use).

A general utility at the foundation of the package (it imports nothing from spatialact): the task files
(:mod:`spatialact.tasks.validation`) and the question files (:mod:`spatialact.questions.record`) are checked with
it. Their shipped schemas (``task.schema.json``, ``questions.schema.json``) are the contract; the ``jsonschema``
package validates a 2 KB task record in milliseconds, too slow for large task files. :func:`compile_schema` turns
a schema, once, into

* generated Python source that answers only "valid?" (:attr:`CompiledSchema.is_valid`): one function per schema
  node, leaf schemas inlined, arrays of numbers checked with C builtins (``min``, ``max``, ``sum``) — the path every
  valid record takes;
* nested closures that say *why* a record is invalid (:meth:`CompiledSchema.problems`: paths and messages), run only
  on a record the predicate rejects.

So the checks *are* the schema's: no second hand-maintained copy of every bound. Tests
(``tests/test_tasks_validation.py``, ``tests/test_schema_compiler.py``) mutate real records thousands of times, and
generate schemas and values, and assert that both and ``jsonschema`` accept and reject exactly the same values.

Supported keywords: ``type``, ``enum``, ``const``, ``minimum``, ``maximum``, ``exclusiveMinimum``,
``exclusiveMaximum``, ``minLength``, ``maxLength``, ``pattern``, ``properties``, ``required``,
``additionalProperties``, ``propertyNames``, ``maxProperties``, ``dependentRequired``, ``items``, ``minItems``,
``maxItems``, ``uniqueItems``, ``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``, local ``$ref``
and boolean schemas; any other validation keyword is refused when the schema is compiled, so the schema cannot
quietly use a keyword this checker would ignore. ``errorMessage`` (as in ajv-errors: a string, or an object keyed
by keyword) replaces the message of a failed value keyword with a sentence a person can act on.

Where the two differ, on purpose, outside JSON: a NaN fails every numeric bound here (JSON has no NaN; the file
loaders refuse it while parsing), and numbers are Python ``int``/``float`` (numpy scalars other than float64 are
not JSON numbers).
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable

__all__ = ["compile_schema", "CompiledSchema", "Problems", "SchemaCompileError", "format_path"]

# A check returns None when the value is valid, else a list of (path, message); a path is a tuple of keys and indices
# relative to the value checked. Building no list on the valid path is what makes the checker fast.
Problems = list[tuple[tuple, str]]
Check = Callable[[Any], "Problems | None"]

_ANNOTATIONS = {"$schema", "$id", "$comment", "$defs", "title", "description", "default", "examples", "errorMessage",
                "deprecated", "readOnly", "writeOnly"}
_VALUE_KEYWORDS = ("type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
                   "maxLength", "pattern", "not", "anyOf", "oneOf", "uniqueItems")
_SUPPORTED = set(_VALUE_KEYWORDS) | {"properties", "required", "additionalProperties", "propertyNames", "maxProperties",
                                    "dependentRequired", "items", "minItems", "maxItems", "allOf", "if", "then",
                                    "else", "$ref"}
_SIMPLE_KEY = re.compile(r"[A-Za-z0-9_:+-]+")


class SchemaCompileError(ValueError):
    """The schema uses something the compiled checker does not implement."""


def format_path(path: tuple) -> str:
    """``('gt', 'steps', 3, 'counts')`` → ``gt.steps.3.counts``; odd keys (dots, control characters) are quoted."""
    if not path:
        return "(record)"
    parts = []
    for p in path:
        if isinstance(p, int):
            parts.append(str(p))
        elif _SIMPLE_KEY.fullmatch(p):
            parts.append(p)
        else:
            parts.append(ascii(p[:60]))
    return ".".join(parts)


def _short(x: Any, n: int = 60) -> str:
    """A one-line, bounded ``ascii`` rendering of an untrusted value for a message."""
    if isinstance(x, (dict, list)):
        return f"a JSON object with {len(x)} fields" if isinstance(x, dict) else f"a JSON array of {len(x)} entries"
    if isinstance(x, str) and len(x) > n:
        return ascii(x[:n]) + f"... ({len(x)} characters)"
    if isinstance(x, float):
        return repr(x)
    if isinstance(x, int) and not isinstance(x, bool) and abs(x) > 10 ** 30:
        return f"an integer of {len(str(abs(x)))} digits"
    return ascii(x)


def _num(v: float | int) -> str:
    """A bound as a person reads it: 1000000, 3.141592653589793, 1e+15."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e7:
        return str(int(v))
    return repr(v)


def _type_name(x: Any) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "a boolean"
    if isinstance(x, (int, float)):
        return "a number"
    if isinstance(x, str):
        return "a string"
    if isinstance(x, list):
        return "an array"
    if isinstance(x, dict):
        return "an object"
    return f"a {type(x).__name__}"


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_integer(x: Any) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return True
    return isinstance(x, float) and x.is_integer()


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "null": lambda x: x is None,
    "boolean": lambda x: isinstance(x, bool),
    "number": _is_number,
    "integer": _is_integer,
}
_TYPE_WORDS = {"object": "an object", "array": "an array", "string": "a string", "null": "null",
               "boolean": "a boolean", "number": "a number", "integer": "an integer"}


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality as JSON Schema defines it: 1 == 1.0, but true is not 1; arrays and objects compare deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, dict)) or isinstance(b, (list, dict)):
        return False
    if _is_number(a) and _is_number(b):
        return a == b
    return type(a) is type(b) and a == b


def _prefixed(key, problems: Problems) -> Problems:
    return [((key,) + p, m) for p, m in problems]


_NOT_MESSAGE = "must not match the forbidden form"


def _message_source(em: Any) -> Callable[[str, str], str]:
    """``message(keyword, default)``: the ``errorMessage`` of a failed keyword (ajv-errors: a string for every
    keyword, or an object keyed by keyword), else ``default``."""
    def message(keyword: str, default: str) -> str:
        if isinstance(em, str):
            return em
        if isinstance(em, dict) and keyword in em:
            return em[keyword]
        return default
    return message


def _all_checks(checks: list[Check]) -> Check:
    """One check running ``checks`` in order and joining their problems."""
    if not checks:
        return lambda x: None
    if len(checks) == 1:
        return checks[0]
    checks_t = tuple(checks)

    def check_all(x):
        out = None
        for c in checks_t:
            r = c(x)
            if r:
                out = r if out is None else out + r
        return out
    return check_all


# ----- value keywords: type, enum, const -------------------------------------------------------------------------
def _value_checks(schema: dict, message: Callable[[str, str], str]) -> list[Check]:
    """``type``, ``enum`` and ``const``: what the value must be."""
    checks: list[Check] = []
    if "type" in schema:
        names = [schema["type"]] if isinstance(schema["type"], str) else list(schema["type"])
        checks.append(_type_check(names, message("type", "")))
    if "enum" in schema:
        checks.append(_enum_check(list(schema["enum"]), message("enum", "")))
    if "const" in schema:
        value = schema["const"]
        checks.append(_const_check(value, message("const", f"must be {value!r}")))
    return checks


def _type_check(names: list[str], msg: str) -> Check:
    preds = tuple(_TYPES[n] for n in names)
    words = " or ".join(_TYPE_WORDS[n] for n in names)

    def check_type(x):
        for p in preds:
            if p(x):
                return None
        return [((), msg or f"expected {words}, got {_type_name(x)}")]
    return check_type


def _enum_check(options: list, msg: str) -> Check:
    allowed = ", ".join("null" if o is None else repr(o) for o in options)
    if all(isinstance(o, str) or o is None for o in options):
        option_set = frozenset(options)

        def check_enum(x):
            if (x is None or isinstance(x, str)) and x in option_set:
                return None
            return [((), msg or f"must be one of {allowed}, got {_short(x)}")]
        return check_enum

    def check_enum_json(x):
        for o in options:
            if _json_equal(x, o):
                return None
        return [((), msg or f"must be one of {allowed}, got {_short(x)}")]
    return check_enum_json


def _const_check(value: Any, msg: str) -> Check:
    def check_const(x):
        return None if _json_equal(x, value) else [((), f"{msg}, got {_short(x)}")]
    return check_const


# ----- numbers and strings ---------------------------------------------------------------------------------------
def _number_checks(schema: dict, message: Callable[[str, str], str]) -> list[Check]:
    """``minimum`` / ``exclusiveMinimum`` and ``maximum`` / ``exclusiveMaximum`` (one lower and one upper bound):
    they apply to numbers only; a NaN fails them."""
    if not any(k in schema for k in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")):
        return []
    lo = schema.get("minimum", schema.get("exclusiveMinimum", -math.inf))
    lo_strict = "exclusiveMinimum" in schema
    hi = schema.get("maximum", schema.get("exclusiveMaximum", math.inf))
    hi_strict = "exclusiveMaximum" in schema
    if ("minimum" in schema and "exclusiveMinimum" in schema) or (
            "maximum" in schema and "exclusiveMaximum" in schema):
        raise SchemaCompileError("use one lower and one upper bound per schema")
    text_lo = message("exclusiveMinimum" if lo_strict else "minimum",
                      f"must be {'>' if lo_strict else '≥'} {_num(lo)}")
    text_hi = message("exclusiveMaximum" if hi_strict else "maximum",
                      f"must be {'<' if hi_strict else '≤'} {_num(hi)}")

    def check_bounds(x):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            return None  # bounds apply to numbers only
        if x != x:
            return [((), "must be a finite number, got NaN (JSON has no NaN)")]
        if not ((x > lo) if lo_strict else (x >= lo)):
            return [((), f"{text_lo}, got {_short(x)}")]
        if not ((x < hi) if hi_strict else (x <= hi)):
            return [((), f"{text_hi}, got {_short(x)}")]
        return None
    return [check_bounds]


def _string_checks(schema: dict, message: Callable[[str, str], str]) -> list[Check]:
    """``minLength`` / ``maxLength`` (in code points, as JSON Schema counts) and ``pattern`` (a search): they apply
    to strings only."""
    checks: list[Check] = []
    if "minLength" in schema or "maxLength" in schema:
        mn, mx = schema.get("minLength", 0), schema.get("maxLength", math.inf)
        msg_l = message("maxLength" if "maxLength" in schema else "minLength", "")

        def check_length(x):
            if not isinstance(x, str) or mn <= len(x) <= mx:
                return None
            text = msg_l or (f"must have at least {mn} characters" if len(x) < mn
                             else f"must have at most {mx} characters")
            return [((), f"{text}, got {_short(x)}")]
        checks.append(check_length)
    if "pattern" in schema:
        search = re.compile(schema["pattern"]).search
        msg_p = message("pattern", f"must match {schema['pattern']!r}")

        def check_pattern(x):
            if not isinstance(x, str) or search(x):
                return None
            return [((), f"{msg_p}, got {_short(x)}")]
        checks.append(check_pattern)
    return checks


def _not_check(sub: Any, inner: Check, msg: str) -> Check:
    """``not``; its commonest use, ``{"not": {"type": "string", "pattern": ...}}`` (forbidden characters), searches
    directly."""
    if isinstance(sub, dict) and set(sub) == {"type", "pattern"} and sub["type"] == "string":
        direct = re.compile(sub["pattern"]).search

        def check_not_pattern(x):
            if isinstance(x, str) and direct(x):
                return [((), f"{msg}, got {_short(x)}")]
            return None
        return check_not_pattern

    def check_not(x):
        return [((), f"{msg}, got {_short(x)}")] if inner(x) is None else None
    return check_not


# ----- objects ---------------------------------------------------------------------------------------------------
def _required_check(required: tuple, msg: str) -> Check:
    def check_required(x):
        if not isinstance(x, dict):
            return None
        missing = [k for k in required if k not in x]
        return [((k,), msg) for k in missing] or None
    return check_required


def _dependent_check(deps: dict) -> Check:
    def check_dependent(x):
        if not isinstance(x, dict):
            return None
        out = [((need,), f"missing (required with '{key}')") for key, needs in deps.items() if key in x
               for need in needs if need not in x]
        return out or None
    return check_dependent


def _max_properties_check(mp: int) -> Check:
    def check_max_props(x):
        if isinstance(x, dict) and len(x) > mp:
            return [((), f"has {len(x)} entries, at most {mp} allowed")]
        return None
    return check_max_props


def _names_check(names: Check) -> Check:
    def check_names(x):
        if not isinstance(x, dict):
            return None
        out = []
        for k in x:
            r = names(k)
            if r:
                out += [((k,), f"name {_short(k)}: {m}") for _, m in r]
        return out or None
    return check_names


def _properties_check(prop_checks: tuple, addl_check: Check | None, forbid: bool) -> Check:
    """``properties`` (each known field's check) and ``additionalProperties`` (``addl_check`` for the other fields,
    or ``forbid`` them)."""
    known = frozenset(k for k, _ in prop_checks)
    allowed = ", ".join(k for k, _ in prop_checks)

    def check_object(x):
        if not isinstance(x, dict):
            return None
        out = None
        for k, c in prop_checks:
            if k in x:
                r = c(x[k])
                if r:
                    out = (out or []) + _prefixed(k, r)
        if forbid or addl_check is not None:
            for k in x:
                if k in known:
                    continue
                if forbid:
                    out = (out or []) + [((k,), f"unknown field (allowed: {allowed})")]
                else:
                    r = addl_check(x[k])
                    if r:
                        out = (out or []) + _prefixed(k, r)
        return out
    return check_object


# ----- arrays ----------------------------------------------------------------------------------------------------
def _count_check(mn: int, mx: float) -> Check:
    def check_count(x):
        if not isinstance(x, list) or mn <= len(x) <= mx:
            return None
        if mn == mx:
            return [((), f"must have exactly {mn} entries, got {len(x)}")]
        return [((), f"must have at least {mn} entries, got {len(x)}" if len(x) < mn
                 else f"must have at most {mx} entries, got {len(x)}")]
    return check_count


def _unique_check(x):
    if not isinstance(x, list):
        return None
    for i in range(len(x)):
        for j in range(i):
            if _json_equal(x[i], x[j]):
                return [((i,), f"repeats entry {j} ({_short(x[i])})")]
    return None


class _Compiler:
    def __init__(self, root: dict):
        self.root = root
        self.refs: dict[str, Check] = {}
        self.resolving: set[str] = set()

    # ----- references ---------------------------------------------------------------------------------------
    def resolve(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise SchemaCompileError(f"only local references are supported, got {ref!r}")
        node: Any = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node[part]
        return node

    def ref(self, ref: str) -> Check:
        if ref in self.refs:
            return self.refs[ref]
        if ref in self.resolving:
            raise SchemaCompileError(f"recursive reference {ref!r} is not supported")
        self.resolving.add(ref)
        check = self.compile(self.resolve(ref))
        self.resolving.discard(ref)
        self.refs[ref] = check
        return check

    def declared_types(self, schema: Any) -> set[str] | None:
        """The JSON types a schema admits at most (None: any), following ``$ref`` — for better anyOf messages."""
        if not isinstance(schema, dict):
            return None
        if "$ref" in schema and "type" not in schema:
            return self.declared_types(self.resolve(schema["$ref"]))
        t = schema.get("type")
        if t is None:
            return None
        ts = {t} if isinstance(t, str) else set(t)
        if "integer" in ts:
            ts.add("number")
        return ts

    # ----- compiling ------------------------------------------------------------------------------------------
    def compile(self, schema: Any) -> Check:
        """The check of one schema node: every keyword's check, in a fixed order (so are the problems listed)."""
        if schema is True:
            return lambda x: None
        if schema is False:
            return lambda x: [((), "is not allowed here")]
        if not isinstance(schema, dict):
            raise SchemaCompileError(f"a schema must be an object or a boolean, got {schema!r}")
        unknown = set(schema) - _SUPPORTED - _ANNOTATIONS
        if unknown:
            raise SchemaCompileError(f"keywords {sorted(unknown)} are not supported by the compiled checker")
        message = _message_source(schema.get("errorMessage"))
        checks: list[Check] = []
        if "$ref" in schema:
            checks.append(self.ref(schema["$ref"]))
        checks += _value_checks(schema, message)
        checks += _number_checks(schema, message)
        checks += _string_checks(schema, message)
        checks += self._applicator_checks(schema, message)
        checks += self._object_checks(schema, message)
        checks += self._array_checks(schema)
        return _all_checks(checks)

    def _applicator_checks(self, schema: dict, message: Callable[[str, str], str]) -> list[Check]:
        """``not``, ``anyOf`` / ``oneOf``, ``allOf`` and ``if`` / ``then`` / ``else``: checks made of subschemas."""
        checks: list[Check] = []
        if "not" in schema:
            checks.append(_not_check(schema["not"], self.compile(schema["not"]), message("not", _NOT_MESSAGE)))
        for kw in ("anyOf", "oneOf"):
            if kw in schema:
                branches = [self.compile(s) for s in schema[kw]]
                types = [self.declared_types(s) for s in schema[kw]]
                checks.append(self._combinator(kw, branches, types, message(kw, "")))
        for s in schema.get("allOf", ()):
            checks.append(self.compile(s))
        if "if" in schema:
            cond = self.compile(schema["if"])
            then = self.compile(schema["then"]) if "then" in schema else None
            other = self.compile(schema["else"]) if "else" in schema else None

            def check_if(x):
                branch = then if cond(x) is None else other
                return None if branch is None else branch(x)
            checks.append(check_if)
        return checks

    def _object_checks(self, schema: dict, message: Callable[[str, str], str]) -> list[Check]:
        """``required``, ``dependentRequired``, ``maxProperties``, ``propertyNames``, ``properties`` and
        ``additionalProperties``: each passes a value that is not an object."""
        checks: list[Check] = []
        if "required" in schema:
            checks.append(_required_check(tuple(schema["required"]), message("required", "missing")))
        if "dependentRequired" in schema:
            checks.append(_dependent_check({k: tuple(v) for k, v in schema["dependentRequired"].items()}))
        if "maxProperties" in schema:
            checks.append(_max_properties_check(schema["maxProperties"]))
        if "propertyNames" in schema:
            checks.append(_names_check(self.compile(schema["propertyNames"])))
        props = schema.get("properties")
        addl = schema.get("additionalProperties", True)
        if props is not None or addl is not True:
            prop_checks = tuple((k, self.compile(v)) for k, v in (props or {}).items())
            addl_check = None if addl is True or addl is False else self.compile(addl)
            checks.append(_properties_check(prop_checks, addl_check, forbid=addl is False))
        return checks

    def _array_checks(self, schema: dict) -> list[Check]:
        """``minItems`` / ``maxItems``, ``uniqueItems`` and ``items``: each passes a value that is not an array."""
        checks: list[Check] = []
        if "minItems" in schema or "maxItems" in schema:
            checks.append(_count_check(schema.get("minItems", 0), schema.get("maxItems", math.inf)))
        if schema.get("uniqueItems"):
            checks.append(_unique_check)
        if "items" in schema:
            items = schema["items"]
            if isinstance(items, list):
                raise SchemaCompileError("array-form 'items' is Draft 4-2019; use 'prefixItems'")
            checks.append(self._items(items))
        return checks

    def _combinator(self, kw: str, branches: list[Check], types: list[set[str] | None], em: str) -> Check:
        def check(x):
            results = [b(x) for b in branches]
            n_ok = sum(r is None for r in results)
            if (kw == "anyOf" and n_ok >= 1) or (kw == "oneOf" and n_ok == 1):
                return None
            if kw == "oneOf" and n_ok > 1:
                return [((), em or "matches more than one of the allowed forms")]
            # none matched: when exactly one branch admits this JSON type, its problems say most
            jts = {t for t, is_t in _TYPES.items() if is_t(x)}
            fitting = [r for r, ts in zip(results, types) if ts is not None and ts & jts]
            if len(fitting) == 1 and sum(ts is None for ts in types) == 0:
                return fitting[0]
            return [((), em or "matches none of the allowed forms")]
        return check

    def _items(self, items: Any) -> Check:
        item = self.compile(items)

        def check_items(x, item=item):
            if not isinstance(x, list):
                return None
            out = None
            for i, v in enumerate(x):
                r = item(v)
                if r:
                    out = (out or []) + _prefixed(i, r)
            return out
        return check_items


_SIMPLE_KEYWORDS = {"type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
                    "maxLength", "pattern", "required", "not", "$ref"}


class _Codegen:
    """Generates Python functions that answer only "valid?" — no paths, no messages.

    Valid records (nearly all of them) take this path; the closures of :class:`_Compiler` run only on a record
    this predicate rejects, to say why. Both follow the same keyword semantics, and the agreement test checks
    both against ``jsonschema``. Leaf schemas (type, enum, bounds, lengths, patterns, required) become inline
    expressions; everything else a function per node.
    """

    def __init__(self, root: dict):
        self.root = root
        self.resolver = _Compiler(root)
        self.lines: list[str] = []
        self.env: dict[str, Any] = {"_json_equal": _json_equal, "_is_number": _is_number, "_is_integer": _is_integer,
                                    "_MISSING": object()}
        self.refs: dict[str, str] = {}
        self.n = 0

    def const(self, value: Any) -> str:
        name = f"_c{self.n}"
        self.n += 1
        self.env[name] = value
        return name

    @staticmethod
    def type_expr(names: list[str], v: str) -> str:
        parts = [{
            "object": f"isinstance({v}, dict)",
            "array": f"isinstance({v}, list)",
            "string": f"isinstance({v}, str)",
            "null": f"{v} is None",
            "boolean": f"isinstance({v}, bool)",
            "number": f"(type({v}) is float or type({v}) is int or _is_number({v}))",
            "integer": f"(type({v}) is int or _is_integer({v}))",
        }[t] for t in names]
        return "(" + " or ".join(parts) + ")"

    def is_simple(self, schema: Any) -> bool:
        if isinstance(schema, bool):
            return True
        if set(schema) - _ANNOTATIONS - _SIMPLE_KEYWORDS:
            return False
        if "not" in schema and not self.is_simple(schema["not"]):
            return False
        if "$ref" in schema and not self.is_simple(self.resolver.resolve(schema["$ref"])):
            return False
        return True

    def tests(self, schema: Any, v: str) -> list[str]:
        """Inline boolean expressions (all must hold) for the simple keywords of ``schema``."""
        if schema is True:
            return []
        if schema is False:
            return ["False"]
        out: list[str] = []
        if "$ref" in schema:
            target = self.resolver.resolve(schema["$ref"])
            if self.is_simple(target):
                out += self.tests(target, v)
            else:
                out.append(f"{self.ref(schema['$ref'])}({v})")
        types = None
        if "type" in schema:
            types = [schema["type"]] if isinstance(schema["type"], str) else list(schema["type"])
            out.append(self.type_expr(types, v))
        if "enum" in schema:
            options = list(schema["enum"])
            if all(isinstance(o, str) or o is None for o in options):
                out.append(f"(({v} is None or isinstance({v}, str)) and {v} in {self.const(frozenset(options))})")
            elif all(o is None or (isinstance(o, (str, int, float)) and not isinstance(o, bool)) for o in options):
                # hashable JSON scalars: Python's == is JSON's (1 == 1.0) once booleans are kept out (True == 1)
                out.append(f"(({v} is None or isinstance({v}, (str, int, float))) and not isinstance({v}, bool)"
                           f" and {v} in {self.const(frozenset(options))})")
            else:
                out.append(f"any(_json_equal({v}, o) for o in {self.const(options)})")
        if "const" in schema:
            c = schema["const"]
            if isinstance(c, str):
                out.append(f"(isinstance({v}, str) and {v} == {c!r})")
            elif c is None:
                out.append(f"{v} is None")
            else:
                out.append(f"_json_equal({v}, {self.const(c)})")
        numeric = types is not None and set(types) <= {"number", "integer"}
        bounds = []
        for kw, op in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
            if kw in schema:
                bounds.append(f"{v} {op} {self.const(schema[kw])}")
        if bounds:  # "not a number, or within bounds"; a NaN fails every comparison, as in the closures
            test = " and ".join(bounds)
            out.append(f"({test})" if numeric else f"(not _is_number({v}) or ({test}))")
        strs = []
        if "minLength" in schema:
            strs.append(f"len({v}) >= {int(schema['minLength'])}")
        if "maxLength" in schema:
            strs.append(f"len({v}) <= {int(schema['maxLength'])}")
        if "pattern" in schema:
            strs.append(f"{self.const(re.compile(schema['pattern']).search)}({v}) is not None")
        if strs:
            test = " and ".join(strs)
            out.append(f"({test})" if types == ["string"] else f"(not isinstance({v}, str) or ({test}))")
        if schema.get("required"):
            test = " and ".join(f"{k!r} in {v}" for k in schema["required"])
            out.append(f"({test})" if types == ["object"] else f"(not isinstance({v}, dict) or ({test}))")
        if "not" in schema:
            sub = schema["not"]
            if self.is_simple(sub):
                out.append(f"not {self.expr(sub, v)}")
            else:
                out.append(f"not {self.function(sub)}({v})")
        return out

    def expr(self, schema: Any, v: str) -> str:
        """One inline expression for a simple schema, else a call of its generated function."""
        if self.is_simple(schema):
            t = self.tests(schema, v)
            return "(" + " and ".join(t) + ")" if t else "True"
        return f"{self.function(schema)}({v})"

    def ref(self, ref: str) -> str:
        if ref not in self.refs:
            self.refs[ref] = self.function(self.resolver.resolve(ref))
        return self.refs[ref]

    def function(self, schema: Any) -> str:
        """Emit ``def _fN(x) -> bool`` for ``schema``; returns its name."""
        name = f"_f{self.n}"
        self.n += 1
        body: list[str] = []
        self.emit(schema, "x", body, 1)
        self.lines.append(f"def {name}(x):")
        self.lines.extend(body)
        self.lines.append("    return True")
        return name

    def emit(self, schema: Any, v: str, out: list[str], depth: int) -> None:
        """Append statements that ``return False`` when ``v`` violates ``schema``."""
        pad = "    " * depth
        if isinstance(schema, bool) or self.is_simple(schema):
            e = self.expr(schema, v)
            if e != "True":
                out.append(f"{pad}if not {e}: return False")
            return
        simple = {k: schema[k] for k in schema if k in _SIMPLE_KEYWORDS}
        t = self.tests(simple, v)
        if t:
            out.append(f"{pad}if not ({' and '.join(t)}): return False")
        types = [schema["type"]] if isinstance(schema.get("type"), str) else schema.get("type")
        for sub in schema.get("allOf", ()):
            self.emit(sub, v, out, depth)
        if "anyOf" in schema:
            out.append(f"{pad}if not ({' or '.join(self.expr(s, v) for s in schema['anyOf'])}): return False")
        if "oneOf" in schema:
            out.append(f"{pad}if ({' + '.join(f'bool({self.expr(s, v)})' for s in schema['oneOf'])}) != 1:"
                       f" return False")
        if "if" in schema:
            cond = self.expr(schema["if"], v)
            then = self.expr(schema["then"], v) if "then" in schema else None
            other = self.expr(schema["else"], v) if "else" in schema else None
            if then and other:
                out.append(f"{pad}if not ({then} if {cond} else {other}): return False")
            elif then:
                out.append(f"{pad}if {cond} and not {then}: return False")
            elif other:
                out.append(f"{pad}if not {cond} and not {other}: return False")
        self.emit_object(schema, v, out, depth, types)
        self.emit_array(schema, v, out, depth, types)

    def emit_body(self, schema: Any, v: str, out: list[str], depth: int) -> None:
        """The statements of a block that opened on the line before (``pass`` when ``schema`` asks nothing)."""
        n_before = len(out)
        self.emit(schema, v, out, depth)
        if len(out) == n_before:
            out.append("    " * depth + "pass")

    @staticmethod
    def open_typed(v: str, out: list[str], depth: int, types, json_type: str, prefix: str) -> tuple[str, int, str]:
        """Open the block where ``v`` is of ``json_type`` (an ``isinstance`` test, unless the schema's own type
        already says so) and name ``v`` there ``<prefix><depth>``: returns (indent, depth, name)."""
        pad = "    " * depth
        if types == [json_type]:
            inner, d = pad, depth
        else:
            out.append(f"{pad}if isinstance({v}, {'dict' if json_type == 'object' else 'list'}):")
            inner, d = pad + "    ", depth + 1
        name = f"{prefix}{d}"
        out.append(f"{inner}{name} = {v}")
        return inner, d, name

    def emit_object(self, schema: dict, v: str, out: list[str], depth: int, types) -> None:
        if not {"properties", "additionalProperties", "propertyNames", "maxProperties",
                "dependentRequired"} & set(schema):
            return
        inner, d, o = self.open_typed(v, out, depth, types, "object", "o")
        if "maxProperties" in schema:
            out.append(f"{inner}if len({o}) > {int(schema['maxProperties'])}: return False")
        for k, needs in schema.get("dependentRequired", {}).items():
            cond = " or ".join(f"{n!r} not in {o}" for n in needs)
            out.append(f"{inner}if {k!r} in {o} and ({cond}): return False")
        props = schema.get("properties", {})
        for k, sub in props.items():
            if sub is True:
                continue
            val = f"v{d}"
            out.append(f"{inner}{val} = {o}.get({k!r}, _MISSING)")
            out.append(f"{inner}if {val} is not _MISSING:")
            self.emit_body(sub, val, out, d + 1)
        addl = schema.get("additionalProperties", True)
        known = self.const(frozenset(props))
        if addl is False:
            out.append(f"{inner}if not {o}.keys() <= {known}: return False")
        elif addl is not True:
            out.append(f"{inner}for k{d}, w{d} in {o}.items():")
            out.append(f"{inner}    if k{d} not in {known} and not {self.expr(addl, f'w{d}')}: return False")
        if "propertyNames" in schema:
            out.append(f"{inner}for k{d} in {o}:")
            out.append(f"{inner}    if not {self.expr(schema['propertyNames'], f'k{d}')}: return False")

    def emit_array(self, schema: dict, v: str, out: list[str], depth: int, types) -> None:
        if not {"items", "minItems", "maxItems", "uniqueItems"} & set(schema):
            return
        inner, d, a = self.open_typed(v, out, depth, types, "array", "a")
        if "minItems" in schema or "maxItems" in schema:
            mn, mx = int(schema.get("minItems", 0)), schema.get("maxItems")
            test = f"{mn} <= len({a})" + (f" <= {int(mx)}" if mx is not None else "")
            out.append(f"{inner}if not ({test}): return False")
        items = schema.get("items", True)
        names = self.string_enum(items)
        if names is not None:
            # an array of names (the actions of a step): set operations in C when every entry is a string
            out.append(f"{inner}if set(map(type, {a})) <= {self.const(frozenset({str}))}:")
            out.append(f"{inner}    if not set({a}) <= {self.const(frozenset(names))}: return False")
            if schema.get("uniqueItems"):
                out.append(f"{inner}    if len(set({a})) != len({a}): return False")
            out.append(f"{inner}else:")
            inner += "    "
            d += 1
        if schema.get("uniqueItems"):
            out.append(f"{inner}if set(map(type, {a})) <= {self.const(frozenset({str}))}:")
            out.append(f"{inner}    if len(set({a})) != len({a}): return False")
            out.append(f"{inner}elif any(_json_equal({a}[i], {a}[j]) for i in range(len({a})) for j in range(i)):"
                       f" return False")
        fast = self.numeric_items(items)
        if fast is not None:
            # homogeneous numbers (poses, counts): type and bounds checked by C builtins, not element by element
            types, lo, hi = fast
            tset = self.const(frozenset(types))
            nan_test = "" if types == {int} else f" and (s{d} := sum({a})) == s{d}"
            out.append(f"{inner}if {a} and set(map(type, {a})) <= {tset}:")
            low, high = lo.format(f"min({a})"), hi.format(f"max({a})")
            out.append(f"{inner}    if not ({low} and {high}{nan_test}): return False")
            out.append(f"{inner}else:")
            inner += "    "
            d += 1
        if items is not True:
            e = f"e{d}"
            if self.is_simple(items):
                out.append(f"{inner}for {e} in {a}:")
                out.append(f"{inner}    if not {self.expr(items, e)}: return False")
            else:
                out.append(f"{inner}for {e} in {a}:")
                self.emit_body(items, e, out, d + 1)

    def deref(self, schema: Any) -> Any:
        """The schema a chain of bare ``$ref`` nodes (nothing but annotations beside them) leads to."""
        while isinstance(schema, dict) and set(schema) - _ANNOTATIONS == {"$ref"}:
            schema = self.resolver.resolve(schema["$ref"])
        return schema

    def string_enum(self, items: Any) -> list[str] | None:
        """The names when ``items`` is exactly an enum of strings, else None."""
        items = self.deref(items)
        if (isinstance(items, dict) and set(items) - _ANNOTATIONS == {"enum"}
                and all(isinstance(o, str) for o in items["enum"])):
            return list(items["enum"])
        return None

    def numeric_items(self, items: Any):
        """(python types, lower test, upper test) when ``items`` is a plain bounded number, else None."""
        items = self.deref(items)
        if not isinstance(items, dict) or items.get("type") not in ("number", "integer"):
            return None
        if set(items) - _ANNOTATIONS - {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}:
            return None
        types = {int} if items["type"] == "integer" else {int, float}
        lo, hi = "True", "True"  # templates: {} is the array's min() / max()
        for kw, op in (("minimum", ">="), ("exclusiveMinimum", ">")):
            if kw in items:
                lo = f"{{}} {op} {self.const(items[kw])}"
        for kw, op in (("maximum", "<="), ("exclusiveMaximum", "<")):
            if kw in items:
                hi = f"{{}} {op} {self.const(items[kw])}"
        return types, lo, hi

    def build(self) -> Callable[[Any], bool]:
        top = self.function(self.root)
        source = "\n".join(self.lines)
        code = compile(source, "<spatialact task schema predicate>", "exec")
        exec(code, self.env)  # our own schema, turned into Python once; no input text reaches this
        fn = self.env[top]
        fn.source = source
        return fn


class CompiledSchema:
    """A JSON Schema compiled twice: :meth:`is_valid` (generated code, fast) and :meth:`problems` (says why)."""

    def __init__(self, schema: dict):
        self.schema = schema
        self._check = _Compiler(schema).compile(schema)  # also refuses unsupported keywords
        self.is_valid: Callable[[Any], bool] = _Codegen(schema).build()

    def problems(self, value: Any) -> Problems:
        """``[(path, message), ...]``, empty when ``value`` conforms."""
        if self.is_valid(value):
            return []
        return self._check(value) or [((), "does not conform to the schema")]

    __call__ = problems


def compile_schema(schema: dict) -> CompiledSchema:
    """Compile a JSON Schema (the supported subset): ``c.is_valid(x)`` and ``c(x) -> [(path, message), ...]``."""
    return CompiledSchema(schema)
