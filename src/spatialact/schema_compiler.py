"""A fast checker compiled from a JSON Schema (the subset of Draft 2020-12 the shipped schemas use).

A general utility at the foundation of the package (it imports nothing from spatialact): the task files
(:mod:`spatialact.tasks.validation`), the question files (:mod:`spatialact.questions.io`) and the result records
(:mod:`spatialact.records`) are checked with it. Their shipped schemas are the contract. :func:`compile_schema`
answers two questions, each where it costs least (benchmarks/bench_schema.py; docs/architecture.md, "Why a schema
compiler of our own"):

* "valid?" (:attr:`CompiledSchema.is_valid`), asked of every record: Python source generated from the schema once,
  one function per schema node, leaf schemas inlined, arrays of numbers checked with C builtins (``min``, ``max``,
  ``sum``), no path or message built;
* "why not?" (:meth:`CompiledSchema.problems`), asked only of a record the predicate rejects: ``jsonschema``'s
  Draft 2020-12 validator finds the failures, and each becomes one line a person can act on (the field's path, what
  it must be, what it is), or the schema's own ``errorMessage`` text (as in ajv-errors: a string for every keyword
  of that node, or an object keyed by keyword).

So the checks *are* the schema's: no second hand-maintained copy of every bound. Tests
(``tests/tasks/test_validation.py``, ``tests/core/test_schema_compiler.py``) mutate real records thousands of times, and
generate schemas and values, and assert that the predicate, the messages and ``jsonschema`` accept and reject
exactly the same values.

Supported keywords: ``type``, ``enum``, ``const``, ``minimum``, ``maximum``, ``exclusiveMinimum``,
``exclusiveMaximum``, ``minLength``, ``maxLength``, ``pattern``, ``properties``, ``required``,
``additionalProperties``, ``propertyNames``, ``maxProperties``, ``dependentRequired``, ``items``, ``minItems``,
``maxItems``, ``uniqueItems``, ``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``, local ``$ref``
and boolean schemas; any other validation keyword is refused when the schema is compiled, so the schema cannot
quietly use a keyword the predicate would ignore.

Where both differ from plain ``jsonschema``, on purpose, outside JSON: a NaN fails every numeric bound (JSON has no
NaN; the file loaders refuse it while parsing), and numbers are Python ``int``/``float`` (numpy scalars other than
float64 are not JSON numbers).
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable

__all__ = ["compile_schema", "CompiledSchema", "Problems", "SchemaCompileError", "format_path"]

# A list of (path, message); a path is a tuple of keys and indices relative to the value checked.
Problems = list[tuple[tuple, str]]

_ANNOTATIONS = {"$schema", "$id", "$comment", "$defs", "title", "description", "default", "examples", "errorMessage",
                "deprecated", "readOnly", "writeOnly"}
# The supported keywords, in the order a node's problems are listed.
_ORDER = ("$ref", "type", "enum", "const", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "minLength",
          "maxLength", "pattern", "not", "anyOf", "oneOf", "allOf", "if", "then", "else", "required",
          "dependentRequired", "maxProperties", "propertyNames", "properties", "additionalProperties", "minItems",
          "maxItems", "uniqueItems", "items")
_RANK = {k: i for i, k in enumerate(_ORDER)}
_SIMPLE_KEY = re.compile(r"[A-Za-z0-9_:+-]+")
_NAN = "must be a finite number, got NaN (JSON has no NaN)"
_BOUND_WORDS = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<"}


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


def _resolve(root: dict, ref: str) -> Any:
    """The node a local ``$ref`` (``#/$defs/name``, JSON Pointer escapes undone) points to in ``root``."""
    if not ref.startswith("#/"):
        raise SchemaCompileError(f"only local references are supported, got {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _refuse_unsupported(root: dict) -> None:
    """Raise :class:`SchemaCompileError` for anything reachable from ``root`` that the predicate does not
    implement: an unknown keyword, two bounds on one side, array-form ``items``, a remote or recursive ``$ref``."""
    done: set[str] = set()

    def walk(node: Any, refs: frozenset) -> None:
        if isinstance(node, bool):
            return
        if not isinstance(node, dict):
            raise SchemaCompileError(f"a schema must be an object or a boolean, got {node!r}")
        unknown = set(node) - _RANK.keys() - _ANNOTATIONS
        if unknown:
            raise SchemaCompileError(f"keywords {sorted(unknown)} are not supported by the compiled checker")
        if {"minimum", "exclusiveMinimum"} <= node.keys() or {"maximum", "exclusiveMaximum"} <= node.keys():
            raise SchemaCompileError("use one lower and one upper bound per schema")
        if isinstance(node.get("items"), list):
            raise SchemaCompileError("array-form 'items' is Draft 4-2019; use 'prefixItems'")
        if "$ref" in node and node["$ref"] not in done:
            if node["$ref"] in refs:
                raise SchemaCompileError(f"recursive reference {node['$ref']!r} is not supported")
            walk(_resolve(root, node["$ref"]), refs | {node["$ref"]})
            done.add(node["$ref"])
        subs = [node[k] for k in ("not", "if", "items", "additionalProperties", "propertyNames") if k in node]
        subs += [node[k] for k in ("then", "else") if k in node and "if" in node]
        subs += [s for k in ("allOf", "anyOf", "oneOf") for s in node.get(k, ())]
        for sub in subs + list(node.get("properties", {}).values()):
            walk(sub, refs)
    walk(root, frozenset())


# ----- "why not?": jsonschema finds the failures, each said in one line ----------------------------------------
def _reference_validator(root: dict):
    """``jsonschema``'s Draft 2020-12 validator for ``root``, with this module's two departures (numbers are Python
    ``int``/``float``; a NaN fails a bound). Three keywords are rewritten so that each problem names its field in
    a fixed order: a false field schema is reported at its field, other fields are taken in the record's order
    (``jsonschema`` takes them from a set), a bad property name at that name; and a node's keywords are checked in
    the order of :data:`_ORDER`."""
    from jsonschema import Draft202012Validator as Base
    from jsonschema import ValidationError, validators

    def nan_fails(keyword):
        check = Base.VALIDATORS[keyword]

        def bound(validator, value, instance, schema):
            if _is_number(instance) and instance != instance:
                yield ValidationError(_NAN)
            else:
                yield from check(validator, value, instance, schema) or ()
        return bound

    def properties(validator, props, instance, schema):  # as jsonschema's, but a false schema keeps its field's path
        for key, sub in props.items() if isinstance(instance, dict) else ():
            if key in instance and sub is False:
                yield ValidationError("is not allowed here", validator=None, path=[key])
            elif key in instance:
                yield from validator.descend(instance[key], sub, path=key, schema_path=key)

    def additional_properties(validator, other, instance, schema):  # as jsonschema's, in the record's order
        extras = [k for k in instance if k not in schema.get("properties", {})] if isinstance(instance, dict) else []
        if other is False and extras:
            yield ValidationError("unknown fields")
        for key in extras if isinstance(other, dict) else ():
            yield from validator.descend(instance[key], other, path=key)

    def property_names(validator, names, instance, schema):
        for key in instance if isinstance(instance, dict) else ():
            found = list(validator.descend(key, names))
            if found:
                yield ValidationError(f"name {key!r}", path=[key], context=found)

    types = Base.TYPE_CHECKER.redefine_many({"number": lambda _, x: _is_number(x),
                                             "integer": lambda _, x: _is_integer(x)})
    keywords = {**Base.VALIDATORS, "properties": properties, "propertyNames": property_names,
                "additionalProperties": additional_properties, **{k: nan_fails(k) for k in _BOUND_WORDS}}
    cls = validators.create(meta_schema=Base.META_SCHEMA, validators=keywords, type_checker=types,
                            format_checker=Base.FORMAT_CHECKER, id_of=Base.ID_OF,
                            applicable_validators=lambda s: sorted(s.items(), key=lambda kv: _RANK.get(kv[0], -1)))
    return cls(root)


def _declared_types(root: dict, schema: Any) -> set[str] | None:
    """The JSON types a schema admits at most (None: any), following ``$ref``."""
    while isinstance(schema, dict) and "$ref" in schema and "type" not in schema:
        schema = _resolve(root, schema["$ref"])
    t = schema.get("type") if isinstance(schema, dict) else None
    if t is None:
        return None
    ts = {t} if isinstance(t, str) else set(t)
    return ts | {"number"} if "integer" in ts else ts


def _explain(root: dict, e) -> Problems:
    """One ``jsonschema`` error as ``[(path, message), ...]``: the schema node's ``errorMessage`` where it has one
    for the failed keyword, else what the value must be and what it is."""
    kw, v, x, node, path = e.validator, e.validator_value, e.instance, e.schema, tuple(e.absolute_path)
    em = node.get("errorMessage") if isinstance(node, dict) else None

    def said(keyword: str, default: str) -> str:
        return em if isinstance(em, str) else em.get(keyword, default) if isinstance(em, dict) else default

    if kw is None:  # a false schema
        return [(path, "is not allowed here")]
    if kw == "type":
        names = [v] if isinstance(v, str) else v
        return [(path, said(kw, "") or f"expected {' or '.join(_TYPE_WORDS[n] for n in names)}, got {_type_name(x)}")]
    if kw == "enum":
        allowed = ", ".join("null" if o is None else repr(o) for o in v)
        return [(path, said(kw, "") or f"must be one of {allowed}, got {_short(x)}")]
    if kw in _BOUND_WORDS:
        text = _NAN if x != x else f"{said(kw, f'must be {_BOUND_WORDS[kw]} {_num(v)}')}, got {_short(x)}"
        return [(path, text)]
    if kw in ("minLength", "maxLength"):
        mn, mx = node.get("minLength", 0), node.get("maxLength", math.inf)
        text = said("maxLength" if "maxLength" in node else "minLength", "") or (
            f"must have at least {mn} characters" if len(x) < mn else f"must have at most {mx} characters")
        return [(path, f"{text}, got {_short(x)}")]
    defaults = {"const": f"must be {v!r}", "pattern": f"must match {v!r}", "not": "must not match the forbidden form"}
    if kw in defaults:
        return [(path, f"{said(kw, defaults[kw])}, got {_short(x)}")]
    if kw in ("anyOf", "oneOf"):
        return _explain_combinator(root, e, said(kw, ""))
    return _explain_container(root, e, said)


def _explain_combinator(root: dict, e, em: str) -> Problems:
    """``anyOf`` / ``oneOf``: when exactly one branch admits the value's JSON type, that branch's problems say
    most (even where the node has an ``errorMessage``); else that message, or a general sentence."""
    path = tuple(e.absolute_path)
    if not e.context:  # oneOf: more than one branch matched
        return [(path, em or "matches more than one of the allowed forms")]
    types = [_declared_types(root, s) for s in e.validator_value]
    jts = {t for t, is_t in _TYPES.items() if is_t(e.instance)}
    fitting = [i for i, ts in enumerate(types) if ts is not None and ts & jts]
    if len(fitting) == 1 and None not in types:
        return [p for c in e.context if c.relative_schema_path[0] == fitting[0] for p in _explain(root, c)]
    return [(path, em or "matches none of the allowed forms")]


def _explain_container(root: dict, e, said: Callable[[str, str], str]) -> Problems:
    """The keywords of objects and arrays (``required`` ... ``uniqueItems``); nested values are reached by
    ``jsonschema`` itself and come as their own errors."""
    kw, v, x, node, path = e.validator, e.validator_value, e.instance, e.schema, tuple(e.absolute_path)
    if kw == "required":
        return [(path + (k,), said(kw, "missing")) for k in v if k not in x]
    if kw == "dependentRequired":
        return [(path + (need,), f"missing (required with '{key}')") for key, needs in v.items() if key in x
                for need in needs if need not in x]
    if kw == "maxProperties":
        return [(path, f"has {len(x)} entries, at most {v} allowed")]
    if kw == "propertyNames":
        return [(path, f"name {_short(path[-1])}: {m}") for c in e.context for _, m in _explain(root, c)]
    if kw == "items":  # false: no entry is allowed
        return [(path + (i,), "is not allowed here") for i in range(len(x))]
    if kw == "additionalProperties":  # false: every other field is unknown
        props = node.get("properties", {})
        return [(path + (k,), f"unknown field (allowed: {', '.join(props)})") for k in x if k not in props]
    if kw in ("minItems", "maxItems"):
        mn, mx = node.get("minItems", 0), node.get("maxItems", math.inf)
        if mn == mx:
            return [(path, f"must have exactly {mn} entries, got {len(x)}")]
        return [(path, f"must have at least {mn} entries, got {len(x)}" if len(x) < mn
                 else f"must have at most {mx} entries, got {len(x)}")]
    if kw == "uniqueItems":
        for i in range(len(x)):
            for j in range(i):
                if _json_equal(x[i], x[j]):
                    return [(path + (i,), f"repeats entry {j} ({_short(x[i])})")]
    return [(path, said(kw, "does not conform to the schema"))]


# ----- "valid?": generated Python ------------------------------------------------------------------------------
_SIMPLE_KEYWORDS = {"type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
                    "maxLength", "pattern", "required", "not", "$ref"}


class _Codegen:
    """Generates Python functions that answer only "valid?" — no paths, no messages.

    Valid records (nearly all of them) take this path; ``jsonschema`` runs only on a record this predicate
    rejects, to say why (:func:`_explain`); the agreement test checks both against plain ``jsonschema``. Leaf
    schemas (type, enum, bounds, lengths, patterns, required) become inline expressions; everything else a
    function per node.
    """

    def __init__(self, root: dict):
        self.root = root
        self.lines: list[str] = []
        self.env: dict[str, Any] = {"_json_equal": _json_equal, "_is_number": _is_number, "_is_integer": _is_integer,
                                    "_MISSING": object()}
        self.refs: dict[str, str] = {}
        self.n = 0

    def resolve(self, ref: str) -> Any:
        return _resolve(self.root, ref)

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
        if "$ref" in schema and not self.is_simple(self.resolve(schema["$ref"])):
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
            target = self.resolve(schema["$ref"])
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
            self.refs[ref] = self.function(self.resolve(ref))
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
            schema = self.resolve(schema["$ref"])
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
    """A JSON Schema compiled for :meth:`is_valid` (generated code, fast) and checked by ``jsonschema`` in
    :meth:`problems` (says why)."""

    def __init__(self, schema: dict):
        self.schema = schema
        _refuse_unsupported(schema)
        self.is_valid: Callable[[Any], bool] = _Codegen(schema).build()
        self._reference = None  # jsonschema's validator, made (and jsonschema imported) on the first rejection

    def problems(self, value: Any) -> Problems:
        """``[(path, message), ...]``, empty when ``value`` conforms."""
        if self.is_valid(value):
            return []
        if self._reference is None:
            self._reference = _reference_validator(self.schema)
        found = [p for e in self._reference.iter_errors(value) for p in _explain(self.schema, e)]
        return list(dict.fromkeys(found)) or [((), "does not conform to the schema")]

    __call__ = problems


def compile_schema(schema: dict) -> CompiledSchema:
    """Compile a JSON Schema (the supported subset): ``c.is_valid(x)`` and ``c(x) -> [(path, message), ...]``."""
    return CompiledSchema(schema)
