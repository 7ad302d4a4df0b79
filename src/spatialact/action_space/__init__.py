"""The action space: primitives, step sizes, steps and sequences, answer parsing and mirroring (docs/conventions.md,
docs/parsing.md)."""

from .parsing import ParseError, ParseResult, extract_json_text, parse_object, parse_response
from .primitives import AXES, MOTION_PRIMITIVES, PRIMITIVE_TABLE, Primitive, PrimitiveSpec, lookup_primitive
from .sequence import DEFAULT_CAP, MIRROR, ActionSequence, Step, StepSizes, mirror

__all__ = [
    "AXES", "MOTION_PRIMITIVES", "PRIMITIVE_TABLE", "Primitive", "PrimitiveSpec", "lookup_primitive",
    "DEFAULT_CAP", "MIRROR", "ActionSequence", "Step", "StepSizes", "mirror",
    "ParseError", "ParseResult", "parse_response", "parse_object", "extract_json_text",
]
