"""The JSON-Schema compiler (spatialact.schema_compiler) against ``jsonschema`` on generated schemas and values:
for every supported keyword, alone and combined, the generated predicate, the message side (jsonschema with the
module's two departures, its errors said in one line each) and plain Draft 2020-12 accept and reject exactly the
same JSON values. Hand-written messages are pinned too."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spatialact import schema_compiler
from spatialact.schema_compiler import SchemaCompileError, compile_schema, format_path

# Small pools shared by the schemas and the values, so that generated values often hit what a schema names.
KEYS = ["a", "b", "c", "id"]
WORDS = ["", "a", "b", "ab", "x y", "A1", "é"]
NUMBERS = [-2, -1, 0, 1, 2, 2.0, 0.5, -0.5, 3.25, 10, 10 ** 20]
PATTERNS = ["^a", "b$", "[0-9]", "^[a-z]*$", " "]

json_scalars = st.one_of(st.none(), st.booleans(), st.sampled_from(NUMBERS),
                         st.integers(-5, 5), st.floats(-10, 10, allow_nan=False), st.sampled_from(WORDS))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(KEYS + ["z"]), inner, max_size=4)),
    max_leaves=12)

TYPES = ["object", "array", "string", "null", "boolean", "number", "integer"]
# Every schema is also tried on these: each scalar of the pools, and small arrays and objects of them.
_SCALARS = [None, True, False, *NUMBERS, *WORDS]
VALUE_POOL = _SCALARS + [[], {}, [1, 1.0], [1, True], [0, 1], [2, 3, 4], ["a", "b"], ["a", "a"], [[1], [1]],
                         [None], [{"a": 1}, {"a": 1.0}], {"a": 1}, {"a": "ab", "b": 2}, {"id": "a", "c": [0, 1]},
                         {"z": None}, {"a": None, "b": None, "c": None, "id": None}, {"b": [2, 3]}]


_LEAF = {
    "type": st.one_of(st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)),
    "enum": st.lists(json_scalars, min_size=1, max_size=4),
    "const": json_scalars,
    "minimum": st.sampled_from(NUMBERS), "maximum": st.sampled_from(NUMBERS),
    "minLength": st.integers(0, 3), "maxLength": st.integers(0, 3),
    "pattern": st.sampled_from(PATTERNS),
    "required": st.lists(st.sampled_from(KEYS), max_size=3, unique=True),
    "minItems": st.integers(0, 3), "maxItems": st.integers(0, 3),
    "uniqueItems": st.booleans(),
    "maxProperties": st.integers(0, 3),
    "dependentRequired": st.dictionaries(st.sampled_from(KEYS), st.lists(st.sampled_from(KEYS), max_size=2,
                                                                          unique=True), max_size=2),
    "errorMessage": st.one_of(st.just("a sentence a person can act on"),
                              st.just({"type": "wrong type", "pattern": "wrong form"})),
}


def _leaf_keywords():
    """Schemas of up to three value keywords (type, enum, const, bounds, lengths, pattern, required, counts)."""
    return st.lists(st.sampled_from(sorted(_LEAF)), max_size=3, unique=True).flatmap(
        lambda names: st.fixed_dictionaries({n: _LEAF[n] for n in names})).map(_exclusive_variants)


def _exclusive_variants(schema: dict) -> dict:
    # exclusiveMinimum / exclusiveMaximum in place of minimum / maximum for some schemas (never both on one side)
    if "minimum" in schema and isinstance(schema["minimum"], int) and schema["minimum"] % 2:
        schema["exclusiveMinimum"] = schema.pop("minimum")
    if "maximum" in schema and isinstance(schema["maximum"], int) and schema["maximum"] % 2:
        schema["exclusiveMaximum"] = schema.pop("maximum")
    return schema


_NODE = {
    "not": lambda inner: inner,
    "anyOf": lambda inner: st.lists(inner, min_size=1, max_size=3),
    "oneOf": lambda inner: st.lists(inner, min_size=1, max_size=3),
    "allOf": lambda inner: st.lists(inner, min_size=1, max_size=2),
    "if": lambda inner: inner, "then": lambda inner: inner, "else": lambda inner: inner,
    "properties": lambda inner: st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
    "additionalProperties": lambda inner: st.one_of(st.booleans(), inner),
    "propertyNames": lambda inner: st.fixed_dictionaries({}, optional={"pattern": st.sampled_from(PATTERNS),
                                                                      "maxLength": st.integers(0, 2)}),
    "items": lambda inner: inner,
    "$ref": lambda inner: st.sampled_from(["#/$defs/word", "#/$defs/count", "#/$defs/pair"]),
}


def _with_subschemas(inner):
    """A node with up to two keywords that hold subschemas (applicators, properties, items, names), plus value
    keywords."""
    node = st.lists(st.sampled_from(sorted(_NODE)), min_size=1, max_size=2, unique=True).flatmap(
        lambda names: st.fixed_dictionaries({n: _NODE[n](inner) for n in names}))
    return node.flatmap(lambda n: _leaf_keywords().map(lambda leaf: {**leaf, **n}))


DEFS = {"word": {"type": "string", "not": {"type": "string", "pattern": " "}},
        "count": {"type": "integer", "minimum": 0, "maximum": 10},
        "pair": {"type": "array", "items": {"$ref": "#/$defs/count"}, "minItems": 2, "maxItems": 2}}

schemas = st.recursive(st.one_of(st.booleans(), _leaf_keywords()), _with_subschemas, max_leaves=6).map(
    lambda s: {"$defs": DEFS, **s} if isinstance(s, dict) else s)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(schema=schemas, values=st.lists(json_values, min_size=1, max_size=8))
def test_generated_schemas_agree_with_jsonschema(schema, values):
    root = schema if isinstance(schema, dict) else {"$defs": DEFS, "allOf": [schema]}
    compiled = compile_schema(root)
    reference = jsonschema.Draft202012Validator(root)
    why = schema_compiler._reference_validator(root)  # the message side alone, without the predicate in front
    for v in values + VALUE_POOL:
        expected = reference.is_valid(v)
        assert compiled.is_valid(v) == expected, (root, v)
        problems = [p for e in why.iter_errors(v) for p in schema_compiler._explain(root, e)]
        assert (not problems) == expected, (root, v, problems)
        assert compiled.problems(v) == list(dict.fromkeys(problems)), (root, v)
        for path, message in problems:
            assert isinstance(path, tuple) and isinstance(message, str) and message and "\n" not in message


@settings(max_examples=300, deadline=None)
@given(values=st.lists(json_values, min_size=1, max_size=10))
def test_the_named_definitions_agree_with_jsonschema(values):
    """The $defs above reached through references, and a nested object of them, on many values each."""
    root = {"$defs": DEFS, "type": "object", "properties": {"a": {"$ref": "#/$defs/word"},
                                                            "b": {"$ref": "#/$defs/pair"},
                                                            "c": {"type": "array", "items": {"$ref": "#/$defs/count"},
                                                                  "uniqueItems": True}},
            "required": ["a"], "additionalProperties": False}
    compiled, reference = compile_schema(root), jsonschema.Draft202012Validator(root)
    for v in values + [{"a": x, "b": y, "c": y} for x, y in zip(values, reversed(values))]:
        assert compiled.is_valid(v) == reference.is_valid(v) == (compiled.problems(v) == []), v


def test_messages_by_hand():
    c = compile_schema({"type": "object", "required": ["id"], "additionalProperties": False,
                        "properties": {"id": {"type": "string", "pattern": "^[a-z]+$"},
                                       "n": {"type": "integer", "minimum": 1, "exclusiveMaximum": 5},
                                       "xs": {"type": "array", "minItems": 2, "maxItems": 2, "uniqueItems": True},
                                       "k": {"enum": ["a", "b", None]}}})
    assert c.problems({"id": "ok"}) == []
    assert c.problems({}) == [(("id",), "missing")]
    assert c.problems({"id": "A"}) == [(("id",), "must match '^[a-z]+$', got 'A'")]
    assert c.problems({"id": "a", "n": 0}) == [(("n",), "must be ≥ 1, got 0")]
    assert c.problems({"id": "a", "n": 5}) == [(("n",), "must be < 5, got 5")]
    assert c.problems({"id": "a", "n": 1.5}) == [(("n",), "expected an integer, got a number")]
    assert c.problems({"id": "a", "xs": [1]}) == [(("xs",), "must have exactly 2 entries, got 1")]
    assert c.problems({"id": "a", "xs": [1, 1.0]}) == [(("xs", 1), "repeats entry 0 (1.0)")]
    assert c.problems({"id": "a", "k": "c"}) == [(("k",), "must be one of 'a', 'b', null, got 'c'")]
    assert c.problems({"id": "a", "zz": 1}) == [(("zz",), "unknown field (allowed: id, n, xs, k)")]
    assert c.problems([]) == [((), "expected an object, got an array")]
    assert format_path(("gt", "steps", 3, "a.b")) == "gt.steps.3.'a.b'"
    e = compile_schema({"type": "string", "errorMessage": {"type": "give the name as text"}})
    assert e.problems(3) == [((), "give the name as text")]


def test_messages_where_jsonschema_alone_would_differ():
    """NaN fails a bound (plain jsonschema accepts it); a dependency names the missing field; a false field schema,
    unknown fields and bad names are each reported at their field, in the record's order, every time."""
    c = compile_schema({"type": "object", "dependentRequired": {"actions": ["step_nums", "counts"]},
                        "properties": {"x": {"type": "number", "minimum": 0, "maximum": 1}, "gone": False,
                                       "actions": {}, "counts": {}},
                        "propertyNames": {"pattern": "^[a-z]+$"}, "additionalProperties": False})
    nan = float("nan")
    assert jsonschema.Draft202012Validator(c.schema).is_valid({"x": nan})
    assert c.problems({"x": nan}) == [(("x",), "must be a finite number, got NaN (JSON has no NaN)")]
    assert c.problems({"actions": [], "counts": []}) == [(("step_nums",), "missing (required with 'actions')")]
    assert c.problems({"gone": 1}) == [(("gone",), "is not allowed here")]
    allowed = "unknown field (allowed: x, gone, actions, counts)"
    keys = ["q", "b", "zz", "a", "y"]
    assert c.problems(dict.fromkeys(keys)) == [((k,), allowed) for k in keys]
    assert c.problems({"B": 1}) == [(("B",), "name 'B': must match '^[a-z]+$', got 'B'"),
                                    (("B",), allowed)]


def test_compile_refuses_what_it_does_not_implement():
    with pytest.raises(SchemaCompileError, match="format"):
        compile_schema({"type": "string", "format": "uri"})
    with pytest.raises(SchemaCompileError, match="one lower and one upper bound"):
        compile_schema({"minimum": 1, "exclusiveMinimum": 0})
    with pytest.raises(SchemaCompileError, match="recursive reference"):
        compile_schema({"$defs": {"t": {"items": {"$ref": "#/$defs/t"}}}, "$ref": "#/$defs/t"})


def test_the_compiler_imports_nothing_from_spatialact():
    """A utility at the foundation: no import of another spatialact module, at the top or inside a function."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(schema_compiler))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and not (node.module or "").startswith("spatialact"), ast.dump(node)
        elif isinstance(node, ast.Import):
            assert not any(a.name.startswith("spatialact") for a in node.names), ast.dump(node)
