"""Model answers (text) → ``ActionSequence``, in strict or lenient mode (docs/parsing.md).

Text level, in both modes: ``<think>…</think>`` blocks are dropped (an unclosed one runs to the end); the JSON
is taken from the last ```json fence, else the last fence, else the outermost ``{…}``, else the whole text, else
the last balanced top-level object in the prose; trailing commas and Python-literal quoting (single quotes,
True/None) are tolerated. See docs/parsing.md for every rule.

An answer that is nothing but one action name with an optional count (``Stay``, ``**Dolly In**``, ``pan left 3.``)
is read as that one step with a note (``$: bare action 'Dolly In' read as one step``); strict mode refuses it.

Content level: lenient mode (the default) repairs what it can and records one note per repair; strict mode
raises :class:`ParseError` on anything lenient mode would have to repair, naming what and where
(``step_2.step_nums[1]: ...``). Lenient mode never raises: text with no usable step gives an empty sequence
with ``ok=False`` and an ``error``.

Time is linear in the length of the text, whatever it holds (no backtracking regex; docs/parsing.md, "Linear
time"). A well-formed answer takes a fast path (:func:`parse_response_fast`) whose result equals the full path's
(:func:`parse_response_reference`) in every field; :func:`parse_response` is the one entry point.
"""

from __future__ import annotations

import ast
import functools
import json
import math
import re
import sys
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

from .primitives import MOTION_PRIMITIVES, N_MOTION, PRIMITIVE_TABLE, Primitive, lookup_primitive
from .sequence import DEFAULT_CAP, ActionSequence, Step, StepSizes, install_json_reader

__all__ = ["ParseError", "ParseResult", "parse_response", "parse_response_reference", "parse_response_fast",
           "parse_object", "sequence_from_json", "extract_json_text", "load_json", "find_fences", "open_fence_body",
           "outermost_spans", "HUGE_DIGITS", "MAX_REPAIR_NOTES"]


class ParseError(ValueError):
    """An answer that strict parsing rejects; the message says what is wrong and where."""


@dataclass(frozen=True)
class ParseResult:
    """What :func:`parse_response` returns; never None, in either mode.

    ``sequence`` is always an ActionSequence (empty when nothing was usable), ``repairs`` the lenient repairs
    made (one string each, ``where: what``), ``ok`` whether at least one step was usable, ``error`` why not (a
    non-empty one-line reason whenever ``ok`` is False, None otherwise).
    ``format`` is the answer format found (``flat``, ``stepped`` or ``vector``), ``json_text`` the JSON read.
    ``n_repairs`` is the number of repairs made; ``repairs`` keeps the notes of the first
    :data:`MAX_REPAIR_NOTES` (20) only, then one note saying how many more there were (a 1 MB answer of 166 666
    one-name steps makes as many repairs: their notes would be 9 MB).
    """

    sequence: ActionSequence
    repairs: tuple[str, ...] = ()
    ok: bool = True
    error: str | None = None
    format: str | None = None
    json_text: str | None = field(default=None, repr=False)
    n_repairs: int | None = None

    def __post_init__(self) -> None:
        if self.n_repairs is None:
            object.__setattr__(self, "n_repairs", len(self.repairs))
        if not self.ok and not (isinstance(self.error, str) and self.error.strip()):
            # every failure says why (records keep it as parse_error, reports show it): never None or blank
            object.__setattr__(self, "error", "$: no usable step (no reason recorded)")

    def to_dict(self) -> dict:
        return {"ok": self.ok, "error": self.error, "format": self.format, "repairs": list(self.repairs),
                "n_repairs": self.n_repairs, "sequence": self.sequence.to_dict()}


# ------------------------------------------------------------------------------------------------------
# Text level
# ------------------------------------------------------------------------------------------------------
# Linear time (docs/parsing.md, "Linear time"): no pattern here can backtrack over more than one run of its own
# characters. A tag is a fixed string; a fence header is matched with quantifiers only, so the greedy path always
# succeeds at once; a trailing comma's whitespace run is scanned once (runs after different commas are disjoint).
# Bodies and closing fences are found with str.find, never with a lazy ``.*?`` (which made an unclosed fence
# followed by a few thousand spaces take minutes: every split of the spaces between two ``[ \t]*`` was retried).
_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
_FENCE_HEADER = re.compile(r"[ \t]*([A-Za-z0-9_+-]*)[ \t]*")
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _strip_think(text: str) -> str:
    """Drop ``<think>…</think>`` blocks (case-insensitive) and an unclosed ``<think>`` to the end; after a
    closing tag with no opening one (the server stripped it), keep only what follows the last such tag.
    One linear scan: no regex backtracking over answers full of unclosed tags."""
    pieces, pos, open_at = [], 0, None
    for m in _THINK_TAG.finditer(text):
        if not m.group(1):  # <think>
            if open_at is None:
                open_at = m.start()
        elif open_at is not None:  # </think> closing a block
            pieces.append(text[pos:open_at])
            pos, open_at = m.end(), None
        else:  # an orphan </think>: the reasoning before it is not the answer
            pieces, pos = [], m.end()
    # A <think> that is never closed is reasoning cut off (max tokens): it runs to the end of the text, and
    # a JSON object it happens to contain is a draft, not the answer.
    pieces.append(text[pos:] if open_at is None else text[pos:open_at])
    return "".join(pieces)


def _next_fence(text: str, pos: int) -> tuple[int, str, int] | None:
    """The next ```` ``` ```` at or after ``pos``: where it starts, its language tag and where its header ends
    (spaces, the tag ``[A-Za-z0-9_+-]*``, spaces: the match cannot fail, so it never backtracks); None when there
    is none."""
    s = text.find("```", pos)
    if s < 0:
        return None
    m = _FENCE_HEADER.match(text, s + 3)
    return s, m.group(1), m.end()


def find_fences(text: str) -> list[tuple[str, str]]:
    """The closed ```` ``` ```` fences of ``text``, left to right, as ``(language, body)``.

    A fence opens at ```` ``` ````, then a header (spaces, a language tag, spaces, an optional ``\r``, an optional
    ``\n``); its body runs to the next ```` ``` ````; the next fence is looked for after that. One pass with
    ``str.find``: linear in the length of the text (an opening fence that is never closed ends the search, since
    no later fence can close either).
    """
    out: list[tuple[str, str]] = []
    pos = 0
    while (fence := _next_fence(text, pos)) is not None:
        _, lang, p = fence
        if text.startswith("\r", p):
            p += 1
        if text.startswith("\n", p):
            p += 1
        e = text.find("```", p)
        if e < 0:
            break
        out.append((lang, text[p:e]))
        pos = e + 3
    return out


def open_fence_body(text: str) -> str | None:
    """The body of the first ```` ``` ```` whose header ends a line, to the end of the text (an answer cut off
    before its closing fence); None when there is none. Each header is read once: linear."""
    pos = 0
    while (fence := _next_fence(text, pos)) is not None:
        s, _, p = fence
        if text.startswith("\r\n", p):
            return text[p + 2:]
        if text.startswith("\n", p):
            return text[p + 1:]
        pos = s + 1
    return None


def outermost_spans(text: str) -> list[str]:
    """The outermost ``{…}`` (first ``{`` to last ``}``) and the outermost ``[…]``, the one enclosing the other
    first. The ``[…]`` only when it does not start inside the ``{…}``: otherwise a list inside a broken object (the
    "actions" of an answer cut off mid-way) would be read as the whole answer. So ``[{A}, {B}]`` is read as the
    list, and ``Answer [see below]: {...}`` as the object."""
    i, j = text.find("{"), text.rfind("}")
    k, m = text.find("["), text.rfind("]")
    obj = text[i:j + 1] if i != -1 and j > i else None
    lst = text[k:m + 1] if k != -1 and m > k and (i == -1 or k < i) else None
    if obj is not None and lst is not None and m > j:
        return [lst, obj]
    return [c for c in (obj, lst) if c is not None]


def _candidates(text: str) -> list[str]:
    """JSON candidates in the order of docs/parsing.md ("Text level"); the first that loads is used."""
    cands: list[str] = []
    found = find_fences(text)
    json_fences = [body for lang, body in found if lang.lower() == "json"]
    if json_fences:
        cands.append(json_fences[-1])
    if found:
        cands.append(found[-1][1])
    else:
        body = open_fence_body(text)  # an answer cut off before its closing fence
        if body is not None:
            cands.append(body)
    cands += outermost_spans(text)
    cands.append(text)
    seen, out = set(), []
    for c in cands:
        c = c.strip()
        if c and c not in seen:
            seen.add(c)
            out.append(c)
    return out


_LITERAL_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


def _literal(node: ast.AST) -> Any:
    # ast.literal_eval plus JSON's true/false/null, so that half-Python, half-JSON answers load.
    if isinstance(node, ast.Expression):
        return _literal(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        v = node.value
        if type(v) is int and not -_HUGE < v < _HUGE:  # as in JSON: more than HUGE_DIGITS digits is ±inf
            return math.inf if v > 0 else -math.inf
        return v
    if isinstance(node, ast.Name) and node.id in _LITERAL_NAMES:
        return _LITERAL_NAMES[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("dict unpacking")
        return _object_pairs([(_hashable(_literal(k)), _literal(v)) for k, v in zip(node.keys, node.values)])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _literal(node.operand)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
    raise ValueError(f"not a literal: {type(node).__name__}")


def _hashable(k: Any) -> Any:
    if isinstance(k, list):
        raise ValueError("unhashable key")
    return k


class _JSONDict(dict):
    """A JSON object that remembers the keys it held more than once (the last value wins, as in json.loads)."""

    duplicates: tuple = ()


def _object_pairs(pairs) -> dict:
    d = _JSONDict(pairs)
    if len(d) != len(pairs):
        seen, dups = set(), {}  # dups: a dict as an ordered set (a list made this quadratic in the keys)
        for k, _ in pairs:
            if k in seen:
                dups[k] = None
            seen.add(k)
        d.duplicates = tuple(dups)
    return d


# An integer of more than HUGE_DIGITS digits is read as ±inf, by both loaders: Python refuses to convert more than
# 4300 digits (sys.get_int_max_str_digits(); json.loads then failed on the whole answer) and the conversion is
# quadratic below that. As a count it is clamped to the cap like any count over it ("infinite step_num ...");
# shorter integers stay exact, are summed, then clamped ("Dolly In × 1e+400 clamped to the cap 10").
HUGE_DIGITS = 1000
_HUGE = 10 ** HUGE_DIGITS


def _parse_int(s: str) -> int | float:
    if len(s) - s.startswith("-") > HUGE_DIGITS:
        return -math.inf if s.startswith("-") else math.inf
    try:
        return int(s)
    except ValueError:  # PYTHONINTMAXSTRDIGITS set below HUGE_DIGITS (it may be as low as 640)
        return -math.inf if s.startswith("-") else math.inf


# One decoder built once (json.loads with keyword arguments builds a new one per call). strict=False: raw control
# characters inside strings (a stray tab or NUL in a name) do not sink the answer.
_DECODER = json.JSONDecoder(object_pairs_hook=_object_pairs, parse_int=_parse_int, strict=False)


def _json_loads(s: str) -> Any:
    return _DECODER.decode(s)


_DIGIT_RUN = re.compile(r"[0-9]+")
_NUMBER_NEIGHBOURS = frozenset("0123456789_.xXoObBjJeE")


def _cap_int_literals(s: str) -> str:
    """``s`` with each integer literal of more than HUGE_DIGITS digits replaced by ``1e999`` (a float literal that
    reads as inf), so that ``ast.parse`` does not refuse the whole text for one huge count (its limit is 4300
    digits). A run of digits is an integer literal when no letter, digit, ``_`` or ``.`` touches it; runs are found
    with ``[0-9]+`` (one pass). Only called when the text has such a run."""
    lim = HUGE_DIGITS
    max_digits = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    if max_digits:
        lim = min(lim, max_digits)
    out, pos = [], 0
    for m in _DIGIT_RUN.finditer(s):
        a, b = m.span()
        if b - a > lim and (a == 0 or not (s[a - 1].isalnum() or s[a - 1] in _NUMBER_NEIGHBOURS)) and (
                b == len(s) or not (s[b].isalnum() or s[b] in _NUMBER_NEIGHBOURS)):
            out += (s[pos:a], "1e999")
            pos = b
    out.append(s[pos:])
    return "".join(out)


# The Python-literal reading (CPython's own parser) is tried on texts up to this length only: it is the one step that
# is not a scanner written here, and no real answer in Python quoting is that long.
_MAX_LITERAL = 200_000


def load_json(s: str) -> Any:
    """Load JSON, tolerating trailing commas and Python-literal quoting; raises ValueError when nothing works."""
    try:
        return _json_loads(s)
    except (ValueError, RecursionError):
        pass
    fixed = _TRAILING_COMMA.sub(r"\1", s)
    try:
        return _json_loads(fixed)
    except (ValueError, RecursionError):
        pass
    if len(s) > _MAX_LITERAL:
        raise ValueError("text too long to read as a Python literal")
    if len(s) > 640:  # a digit run that long may exceed the int-conversion limit
        s = _cap_int_literals(s)
    try:
        with warnings.catch_warnings():
            # compiling model text may warn ("invalid decimal literal", "invalid escape sequence"): not ours to show
            warnings.simplefilter("ignore")
            tree = ast.parse(s.strip(), mode="eval")
        return _literal(tree)
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError) as e:
        raise ValueError(f"not JSON ({e.__class__.__name__})") from None


def _top_level_spans(text: str, limit: int = 200) -> list[str]:
    """The balanced ``{…}`` / ``[…]`` spans at bracket depth 0, last first (at most ``limit``).

    Brackets are counted without regard to strings: model answers rarely put brackets inside names, and
    prose apostrophes make string tracking unreliable. A span that never closes (a cut-off answer) is not
    returned, so nothing inside a broken object is mistaken for the answer.
    """
    spans, depth, start = [], 0, -1
    for m in re.finditer(r"[{}\[\]]", text):
        ch = m.group()
        if ch in "{[":
            if depth == 0:
                start = m.start()
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start:m.end()])
    return spans[::-1][:limit]


def _last_decodable_object(text: str) -> tuple[str, Any] | None:
    # Several JSON objects in prose: the outermost-brace candidate spans them all and fails; take the last
    # top-level object that loads on its own (else the last top-level list).
    found_list = None
    for span in _top_level_spans(text):
        try:
            obj = load_json(span)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj:
            return span, obj
        if isinstance(obj, list) and obj and found_list is None:
            found_list = (span, obj)
    return found_list


def extract_json_text(text: str) -> tuple[str, Any]:
    """The JSON part of a model answer and its loaded value; raises ValueError when there is none."""
    body = _strip_think(text)
    errors = []
    for cand in _candidates(body):
        try:
            return cand, load_json(cand)
        except ValueError as e:
            errors.append(str(e))
    found = _last_decodable_object(body)
    if found is not None:
        return found
    raise ValueError("no JSON object found in the answer")


# ------------------------------------------------------------------------------------------------------
# Content level
# ------------------------------------------------------------------------------------------------------
_STEP_KEY = re.compile(r"^\s*step[\s_\-]*(\d+)\s*$", re.IGNORECASE)
_ACTION_KEYS = ("actions", "action")
_NUM_KEYS = ("step_nums", "step_num", "stepnums", "steps_num", "num_steps", "step_numbers", "step_counts",
             "counts", "nums")
_GRIPPER_KEYS = ("gripper", "gripper_state", "grip")
_VECTOR_KEYS = ("vector", "delta", "action_vector")


#: The repair notes a ParseResult keeps (the first ones made); ``n_repairs`` counts them all.
MAX_REPAIR_NOTES = 20


class _Ctx:
    def __init__(self, strict: bool, sizes: StepSizes, cap: int):
        self.strict, self.sizes, self.cap = strict, sizes, cap
        self.repairs: list[str] = []  # the first MAX_REPAIR_NOTES notes
        self.n_repairs = 0
        self.last: tuple[str, str] | None = None  # the last repair made, (where, what)

    def repair(self, where: str, what: str) -> None:
        if self.strict:
            raise ParseError(f"{where}: {what}")
        self.n_repairs += 1
        self.last = (where, what)
        if self.n_repairs <= MAX_REPAIR_NOTES:
            self.repairs.append(f"{where}: {what}")

    def notes(self) -> tuple[str, ...]:
        """The notes kept, and one more saying how many were not when there were more than MAX_REPAIR_NOTES."""
        more = self.n_repairs - len(self.repairs)
        if more <= 0:
            return tuple(self.repairs)
        return (*self.repairs, f"$: {more:,} more repairs not listed ({self.n_repairs:,} in all)")

    def fail(self, where: str, what: str):
        raise ParseError(f"{where}: {what}")


def _text(v: Any, conv=str) -> str:
    """``str(v)`` / ``repr(v)``, except that an integer too long for that (Python refuses more than 4300 digits) is
    written short."""
    if type(v) is int and not -_HUGE < v < _HUGE:
        return _fmt(v)
    return conv(v)


_LONG = 10 ** 40


def _short(v: Any, n: int = 60) -> str:
    """``repr(v)``, cut to ``n`` characters: a repair note names the value, it does not copy a huge one."""
    if type(v) is int and not -_LONG < v < _LONG:
        return _fmt(v)
    r = repr(v)
    return r if len(r) <= n else r[:n - 3] + "..."


def _key(k: Any, n: int = 40) -> str:
    """A JSON key for a ``where`` path, cut to ``n`` characters."""
    k = _text(k)
    return k if len(k) <= n else k[:n - 3] + "..."


_FLOATABLE = 10 ** 300


def _fmt(x: float | int) -> str:
    """A number for a repair note: exact when small, short when huge (a 300-digit count helps nobody).

    Integers beyond a float (``float(10**400)`` overflows) and beyond ``str`` (4300 digits) are written from their
    logarithm and leading digits: ``1e+400``, ``-9.99e+4999``."""
    if abs(x) < 1e12:
        return str(x)
    if isinstance(x, float) or abs(x) < _FLOATABLE:
        return f"{float(x):.3g}"
    e = int(math.log10(abs(x)))  # may be one off for numbers next to a power of ten; fixed below
    m = abs(x) / 10 ** (e - 2)    # exact integer division into a float: the 3 leading digits
    while m >= 1000:
        e, m = e + 1, m / 10
    while m < 100:
        e, m = e - 1, m * 10
    lead = f"{m / 100:.3g}"
    if lead == "10":  # 9.996 rounds up
        lead, e = "1", e + 1
    return f"{'-' if x < 0 else ''}{lead}e+{e}"


def _check_duplicates(d: dict, where: str, ctx: "_Ctx") -> None:
    for k in getattr(d, "duplicates", ()):
        ctx.repair(f"{where}.{_key(k)}" if where not in ("$", "answer") else _key(k),
                   "key given more than once; the last value is used")


def _actions_as_keys(d: dict) -> bool:
    """``{"Truck Left": 2, "Pan Right": 1}``: a step written as a mapping; every key names a primitive and every
    value is a count (a number, a numeric string or null), so ``{"a": {...}}`` is not read as Truck Left."""
    return bool(d) and all(
        isinstance(k, str) and lookup_primitive(k) is not None
        and (v is None or (isinstance(v, (int, float, str)) and not isinstance(v, bool) and _looks_numeric(v)))
        for k, v in d.items())


def _norm_key(k: Any) -> str:
    return _text(k).strip().lower().replace(" ", "_")


def _get(d: dict, keys: tuple[str, ...]) -> tuple[bool, Any, str | None]:
    for k, v in d.items():
        if _norm_key(k) in keys:
            return True, v, k
    return False, None, None


def _getter(d: dict):
    """``keys -> _get(d, keys)``; for a large dict its keys are normalised once, not once per call."""
    if len(d) <= 8:
        return functools.partial(_get, d)
    first: dict = {}  # normalised key -> (position, value, key) of its first occurrence
    for i, (k, v) in enumerate(d.items()):
        first.setdefault(_norm_key(k), (i, v, k))

    def get(keys: tuple[str, ...]) -> tuple[bool, Any, str | None]:
        found = [first[k] for k in keys if k in first]
        if not found:
            return False, None, None
        _, v, k = min(found, key=lambda f: f[0])
        return True, v, k
    return get


def _number(v: Any, where: str, ctx: _Ctx) -> float | None:
    """A finite float from a number or numeric string (repaired); None when it is not one."""
    if isinstance(v, bool):
        ctx.repair(where, f"{_short(v)} is not a number")
        return None
    if isinstance(v, str):
        try:
            x = float(v.strip().replace(_UNICODE_MINUS, "-"))
        except ValueError:
            ctx.repair(where, f"{_short(v)} is not a number")
            return None
        if not math.isfinite(x):
            ctx.repair(where, f"{_short(v)} is not finite")
            return None
        ctx.repair(where, f"numeric string {_short(v)} read as {x:g}")
        return x
    if isinstance(v, int):
        return float(v) if -1e18 < v < 1e18 else (1e18 if v > 0 else -1e18)  # copysign(1e18, v) overflows
    if isinstance(v, float):
        if not math.isfinite(v):
            ctx.repair(where, f"{_short(v)} is not finite")
            return None
        return v
    ctx.repair(where, f"{_short(v)} is not a number")
    return None


def _is_infinite(v: Any) -> bool:
    if isinstance(v, float):
        return math.isinf(v)
    if isinstance(v, str):
        try:
            return math.isinf(float(v.strip()))
        except ValueError:
            return False
    return False


def _round_half_away(x: float) -> int:
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def _count(v: Any, where: str, ctx: _Ctx) -> int | None:
    """A step_num as an integer (possibly negative); None means: drop the action."""
    if v is None:
        ctx.repair(where, "missing step_num becomes 1")
        return 1
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if _is_infinite(v):
        # "huge" taken to its limit: clamped like any count over the cap (NaN, by contrast, is dropped)
        n = ctx.cap if not _text(v).strip().startswith("-") else -ctx.cap
        ctx.repair(where, f"infinite step_num {_short(v)} read as {n}")
        return n
    x = _number(v, where, ctx)
    if x is None:
        return None
    if x != math.floor(x):
        n = _round_half_away(x)
        ctx.repair(where, f"fractional step_num {x:g} rounded to {n}")
        return n
    return int(x)


def _gripper_value(v: Any, where: str, ctx: _Ctx) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, str):
        s = v.strip().lower()
        if s in ("open", "opened", "release", "released", "0"):
            return 0
        if s in ("close", "closed", "grab", "grip", "grasp", "1"):
            return 1
    x = _number(v, where, ctx)
    if x is None:
        ctx.repair(where, "unreadable gripper state ignored")
        return None
    if x in (0.0, 1.0):
        return int(x)
    g = int(x > 0.5)
    ctx.repair(where, f"gripper {x:g} read as {g} (closed above 0.5)")
    return g


def _primitive(name: Any, where: str, ctx: _Ctx) -> Primitive | None:
    if not isinstance(name, str):
        ctx.repair(where, f"action {_short(name)} is not a name; dropped")
        return None
    p = lookup_primitive(name)
    if p is not None:
        return p
    # "Truck Left (A)", "A (Truck Left)", "A: Truck Left": any part that names one primitive.
    parts = [x for x in re.split(r"[()\[\]:,/|]|\s-\s", name) if x.strip()]
    found = {lookup_primitive(x) for x in parts} - {None}
    if len(found) == 1:
        p = found.pop()
        ctx.repair(where, f"read {_short(name)} as {p.value}")
        return p
    ctx.repair(where, f"unknown action {_short(name)} dropped")
    return None


def _count_step(d: dict, where: str, ctx: _Ctx) -> tuple[Step, bool]:
    """A counts step from ``{"actions": [...], "step_nums": [...], "gripper": g}``; returns (step, usable)."""
    _check_duplicates(d, where, ctx)
    get = _getter(d)
    has_a, actions, akey = get(_ACTION_KEYS)
    has_n, nums, nkey = get(_NUM_KEYS)
    has_g, grip, gkey = get(_GRIPPER_KEYS)
    has_v, vec, vkey = get(_VECTOR_KEYS)
    if not (has_a or has_n or has_v):
        rest = {k: v for k, v in d.items() if k != gkey}
        if _actions_as_keys(rest):
            ctx.repair(where, "action names used as keys read as {name: step_num}")
            d = {"actions": rest, **({gkey: grip} if has_g else {})}
            return _count_step(d, where, ctx)
    for k in d:
        if k not in (akey, nkey, gkey, vkey):
            ctx.repair(f"{where}.{_key(k)}", "unknown key ignored")
    if has_v and not has_a:
        step, usable = _vector_step(vec, f"{where}.{vkey}", ctx)
        if has_g and usable:
            g = _gripper_value(grip, f"{where}.{gkey}", ctx)
            if g is not None:
                step = step.with_gripper(g)
        return step, usable

    pairs: list[tuple[Any, Any, str]] = []
    explicit_empty = False
    if not has_a or actions is None:
        if not has_g:
            ctx.repair(where, "no actions")
    elif isinstance(actions, dict):
        pairs = [(k, v, f"{where}.{akey}.{k}") for k, v in actions.items()]
        explicit_empty = not actions
    else:
        if isinstance(actions, str):
            ctx.repair(f"{where}.{akey}", "a single action name read as a one-element list")
            actions = [actions]
        if not isinstance(actions, list):
            ctx.repair(f"{where}.{akey}", f"expected a list of action names, got {type(actions).__name__}")
            actions = []
        explicit_empty = not actions
        if has_n and not isinstance(nums, list):
            ctx.repair(f"{where}.{nkey}", "a single step_num read as a one-element list")
            nums = [nums]
        if not has_n:
            nums = []
        if len(nums) > len(actions):
            ctx.repair(f"{where}.{nkey}", f"{len(nums) - len(actions)} step_nums beyond the {len(actions)} "
                                          "actions dropped")
        for i, a in enumerate(actions):
            # A missing step_num is None here; _count turns it into 1 with a repair (gestures ignore it).
            pairs.append((a, nums[i] if i < len(nums) else None, f"{where}.{akey}[{i}]"))

    counts = [0] * N_MOTION
    gesture: int | None = None
    recognised = explicit_empty
    memo: dict = {}  # (name, step_num) frozen -> (effect, repairs relative to the action's where)
    for name, num, w in pairs:
        key = None if ctx.strict else (_scalar(name), _scalar(num))
        hit = memo.get(key) if key is not None and None not in key else None
        if hit is None and key is not None and None not in key:
            rec = _Recorder(ctx)
            effect = _action(name, num, _SLOT, rec)
            if all(x.startswith(_SLOT) for x, _ in rec.made):
                memo[key] = hit = (effect, [(x[len(_SLOT):], what) for x, what in rec.made])
        if hit is None:
            effect = _action(name, num, w, ctx)
        else:
            effect, made = hit
            for x, what in made:
                ctx.repair(w + x, what)
        if effect is None:
            continue
        recognised = True
        if effect[0] == "gripper":
            gesture = effect[1]
        elif effect[0] == "count":
            counts[effect[1]] += effect[2]
    for col, n in enumerate(counts):
        if n > ctx.cap:
            ctx.repair(where, f"{MOTION_PRIMITIVES[col].value} × {_fmt(n)} clamped to the cap {ctx.cap}")
            counts[col] = ctx.cap

    gripper = gesture
    if has_g:
        g = _gripper_value(grip, f"{where}.{gkey}", ctx)
        if g is not None:
            if gesture is not None and g != gesture:
                ctx.repair(f"{where}.{gkey}", f"gripper {g} contradicts the gesture; the gripper field wins")
            gripper, recognised = g, True
    return Step(counts=tuple(counts), gripper=gripper), recognised


def _action(name: Any, num: Any, w: str, ctx) -> tuple | None:
    """What one ``(action name, step_num)`` pair of a counts step does, its repairs made at ``w``: None (dropped),
    ``("gripper", g)``, ``("stay",)`` or ``("count", column, n)`` (n ≥ 0, the column of MOTION_PRIMITIVES)."""
    p = _primitive(name, w, ctx)
    if p is None:
        return None
    spec = PRIMITIVE_TABLE[p]
    if spec.gripper is not None:
        if num is not None and not (isinstance(num, (int, float)) and not isinstance(num, bool) and num == 1):
            ctx.repair(w, f"{p.value} sets the gripper; its step_num {_short(num)} is ignored")
        return ("gripper", spec.gripper)
    if p is Primitive.STAY:
        return ("stay",)
    n = _count(num, w, ctx)
    if n is None:
        ctx.repair(w, f"{p.value} dropped")
        return None
    if spec.motion_as is not None:
        p = spec.motion_as
    col = MOTION_PRIMITIVES.index(p)
    if n < 0:
        col ^= 1  # the opposite primitive of the same axis
        ctx.repair(w, f"negative count {_fmt(n)} read as {_fmt(-n)} × {MOTION_PRIMITIVES[col].value}")
        n = -n
    return ("count", col, n)


def _vector_step(v: Any, where: str, ctx: _Ctx) -> tuple[Step, bool]:
    """A continuous step from ``[dx, dy, dz, d_roll, d_pitch, d_yaw(, gripper)]``; returns (step, usable)."""
    if not isinstance(v, list):
        ctx.repair(where, f"expected a list of numbers, got {type(v).__name__}; step dropped")
        return Step.stay(), False
    if len(v) < 6:
        ctx.repair(where, f"a vector step has 6 or 7 components, got {len(v)}; step dropped")
        return Step.stay(), False
    if len(v) > 7:
        ctx.repair(where, f"{len(v)} components: the first 7 are used")
        v = v[:7]
    comps = []
    for i, x in enumerate(v[:6]):
        y = _number(x, f"{where}[{i}]", ctx)
        if y is None:
            ctx.repair(f"{where}[{i}]", "component read as 0")
            y = 0.0
        comps.append(y)
    lim_t, lim_r = ctx.cap * ctx.sizes.translation, ctx.cap * ctx.sizes.rotation
    for i, y in enumerate(comps):
        lim = lim_t if i < 3 else lim_r
        if abs(y) > lim:
            ctx.repair(f"{where}[{i}]", f"{y:g} clamped to ±{lim:g} (cap × unit)")
            comps[i] = math.copysign(lim, y)
    dx, dy, dz, roll, pitch, yaw = comps
    g = _gripper_value(v[6], f"{where}[6]", ctx) if len(v) == 7 else None
    return Step(motion=(dx, dy, dz, pitch, yaw, roll), gripper=g), True


def _is_number_list(v: Any) -> bool:
    if not isinstance(v, list) or not v:
        return False
    for x in v:
        t = type(x)
        if t is not int and t is not float and not (
                isinstance(x, (int, float, str)) and not isinstance(x, bool) and _looks_numeric(x)):
            return False
    return True


def _looks_numeric(x: Any) -> bool:
    if isinstance(x, str):
        try:
            float(x)
        except ValueError:
            return False
    return True


def _any_step(v: Any, where: str, ctx: _Ctx) -> tuple[Step, bool, str]:
    """One step in any form: a counts dict, a vector list, a list of names, or nothing (Stay)."""
    if isinstance(v, dict):
        has_v = not _get(v, _ACTION_KEYS)[0] and _get(v, _VECTOR_KEYS)[0]
        step, ok = _count_step(v, where, ctx)
        return step, ok, "vector" if has_v else "stepped"
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v) and not _is_number_list(v):
        step, ok = _count_step({"actions": v}, where, ctx)
        return step, ok, "stepped"
    if isinstance(v, list) and v:
        step, ok = _vector_step(v, where, ctx)
        return step, ok, "vector"
    if v is None or v == [] or v == "":
        return Step.stay(), True, "stepped"
    if isinstance(v, str):
        step, ok = _count_step({"actions": [v]}, where, ctx)
        return step, ok, "stepped"
    ctx.repair(where, f"unreadable step {_short(v)}; dropped")
    return Step.stay(), False, "stepped"


def _step_number(digits: str) -> int | float:
    """The N of a ``step_N`` key; a number too long to convert (4300 digits) sorts after every other as inf."""
    return int(digits) if len(digits) <= 600 else math.inf


def _actions_are_steps(obj: dict) -> bool:
    """``{"actions": [{...}, [...]]}``: the actions are the steps."""
    has_a, actions, _ = _get(obj, _ACTION_KEYS)
    return has_a and isinstance(actions, list) and bool(actions) and all(isinstance(a, (list, dict)) for a in actions)


def _interpret(obj: Any, where: str, ctx: _Ctx, depth: int = 0) -> tuple[list[tuple[Step, bool]], str]:
    if depth > 3:
        ctx.fail(where, "no actions found (the answer is wrapped in more than 3 keys)")
    if isinstance(obj, dict):
        step_keys = [(_step_number(m.group(1)), k) for k in obj for m in [_STEP_KEY.match(_text(k))] if m]
        numbered = (not step_keys and bool(obj) and all(_text(k).strip().isascii() and _text(k).strip().isdigit()
                                                         for k in obj)
                    and all(isinstance(v, (dict, list)) for v in obj.values()))
        if numbered:  # {"1": {...}, "2": {...}}: the keys are the step numbers
            ctx.repair(where, "numeric keys read as step_N")
            step_keys = [(_step_number(_text(k).strip()), k) for k in obj]
        flat = not step_keys and (_get(obj, _ACTION_KEYS)[0] or _get(obj, _NUM_KEYS)[0] or _get(obj, _VECTOR_KEYS)[0]
                                  or _actions_as_keys({k: v for k, v in obj.items()
                                                       if _norm_key(k) not in _GRIPPER_KEYS}))
        if not flat or _actions_are_steps(obj):
            _check_duplicates(obj, where, ctx)  # a flat answer is one step: _count_step reports them (once)
        if step_keys:
            step_keys.sort(key=lambda nk: nk[0])
            if not numbered and len(step_keys) != len(obj):  # some keys are no step_N
                for k in obj:
                    if not _STEP_KEY.match(_text(k)):
                        ctx.repair(_key(k), "key is not a step; ignored")
            nums = [n for n, _ in step_keys]
            if len(set(nums)) != len(nums):
                ctx.repair(where, "repeated step numbers; kept in the order given")
            return _steps([obj[k] for _, k in step_keys], [_key(k) for _, k in step_keys], ctx)
        if _actions_are_steps(obj):
            _, actions, akey = _get(obj, _ACTION_KEYS)
            return _interpret(actions, akey, ctx, depth + 1)
        if flat:
            step, ok, fmt = _any_step(obj, where if where != "$" else "answer", ctx)
            return [(step, ok)], "flat" if fmt == "stepped" else fmt
        has_s, steps, skey = _get(obj, ("steps", "action_sequence", "sequence", "plan"))
        if has_s and isinstance(steps, (list, dict)):
            for k in obj:
                if k != skey:
                    ctx.repair(_key(k), "key is not a step; ignored")
            return _interpret(steps, skey, ctx, depth + 1)
        nested = [(k, v) for k, v in obj.items() if isinstance(v, (dict, list))]
        if len(nested) == 1:
            ctx.repair(where, f"answer read from inside key {_short(nested[0][0])}")
            return _interpret(nested[0][1], _key(nested[0][0]), ctx, depth + 1)
        ctx.fail(where, "no 'actions', 'step_N' or vector entries found")
    if isinstance(obj, list):
        if not obj:
            ctx.fail(where, "empty list: no steps")
        if _is_number_list(obj):
            step, ok = _vector_step(obj, f"{where}[0]" if where == "$" else where, ctx)
            return [(step, ok)], "vector"
        if all(isinstance(x, str) for x in obj):
            step, ok = _count_step({"actions": obj}, where, ctx)
            return [(step, ok)], "flat"
        if all(isinstance(x, dict) and len(x) == 1 and _STEP_KEY.match(_text(next(iter(x)))) for x in obj):
            merged = {next(iter(x)): next(iter(x.values())) for x in obj}
            if len(merged) == len(obj):  # [{"step_1": {...}}, {"step_2": {...}}]: one object of steps
                ctx.repair(where, "a list of one-step objects read as one object of steps")
                return _interpret(merged, where, ctx, depth + 1)
        return _steps(obj, None, ctx)
    ctx.fail(where, f"expected a JSON object or list, got {type(obj).__name__}")


def _steps(values: list, wheres, ctx: _Ctx) -> tuple[list[tuple[Step, bool]], str]:
    """Every step of a list or an object of steps (``values``, at ``wheres[i]`` or ``steps[i]`` when ``wheres`` is
    None) read by :func:`_any_step`, and the answer's format. A step value met before (the same JSON value: a long
    answer repeating one small step) is read once: its (immutable) Step is used again and the repairs it made are
    made again at its own ``where`` (each of them begins with the step's ``where``), so the result is the same as
    reading each one, in time linear in the answer whatever it repeats. Lenient mode only (strict mode stops at the
    first repair)."""
    out, fmts = [], set()
    seen: dict = {}
    pending = None  # (index, where suffix, what) of the last repair, when only counted (no note kept any more)
    for i, v in enumerate(values):
        key = None if ctx.strict else _frozen(v)
        hit = None if key is None else seen.get(key)
        if hit is None and key is not None:
            rec = _Recorder(ctx)
            res = _any_step(v, _SLOT, rec)
            if all(w.startswith(_SLOT) for w, _ in rec.made):
                seen[key] = hit = (*res, [(w[len(_SLOT):], what) for w, what in rec.made])
            else:  # never so; then it is read each time
                seen[key] = False
        if not hit:
            if pending is not None:
                ctx.last, pending = _last(wheres, pending), None
            step, ok, fmt = _any_step(v, f"steps[{i}]" if wheres is None else wheres[i], ctx)
        else:
            step, ok, fmt, made = hit
            if made:
                if ctx.n_repairs >= MAX_REPAIR_NOTES:  # no note is kept any more: count them, keep the last
                    ctx.n_repairs += len(made)
                    pending = (i, *made[-1])
                else:
                    where = f"steps[{i}]" if wheres is None else wheres[i]
                    for w, what in made:
                        ctx.repair(where + w, what)
        out.append((step, ok))
        fmts.add(fmt)
    if pending is not None:
        ctx.last = _last(wheres, pending)
    return out, "vector" if fmts == {"vector"} else "stepped"


def _last(wheres, pending: tuple) -> tuple[str, str]:
    i, w, what = pending
    return (f"steps[{i}]" if wheres is None else wheres[i]) + w, what


_SLOT = "\x00step\x00"  # the where of a memoised step while it is read the first time (no JSON key holds it)
_MEMO_ITEMS = 32  # the largest step value memoised (scalars in it): larger ones are rare, read each time


class _Recorder:
    """A lenient :class:`_Ctx` stand-in that keeps the repairs one step makes, ``(where, what)``."""

    def __init__(self, ctx: _Ctx):
        self.strict, self.sizes, self.cap = False, ctx.sizes, ctx.cap
        self.made: list[tuple[str, str]] = []

    def repair(self, where: str, what: str) -> None:
        self.made.append((where, what))

    def fail(self, where: str, what: str):
        raise ParseError(f"{where}: {what}")


def _frozen(v: Any) -> Any:
    """A hashable key that tells step values apart as the parser does (a string, an int, a bool and a float of
    the same value are different; so are 0.0 and -0.0; a dict's keys in order), or None for a value with more than
    _MEMO_ITEMS scalars, a dict with repeated keys or more than 4 keys, or anything nested deeper. A list of strings
    is the tuple of them; other lists and dicts are tagged tuples holding at least one tuple (never equal to it)."""
    t = type(v)
    if t is str:
        return v
    if t is list:
        if len(v) > _MEMO_ITEMS:
            return None
        for x in v:
            if type(x) is not str:
                break
        else:
            return tuple(v)
        out = [_scalar(x) for x in v]
        return None if None in out else ("list", *out)
    if (t is dict or (t is _JSONDict and not v.duplicates)) and len(v) <= 4:  # repeated keys: not memoised
        out = []
        for k, x in v.items():
            f = _frozen(x) if type(x) is list else _scalar(x)
            if f is None:
                return None
            out.append((k, f))
        return ("dict", *out)
    return None


def _scalar(x: Any) -> Any:
    """A JSON scalar as a tagged tuple (None for anything else)."""
    t = type(x)
    if t is float:
        return (t, repr(x))
    if t is str or t is int or t is bool or x is None:
        return (t, x)
    return None


def _check_cap(cap: Any) -> int:
    # A caller's mistake, not the model's: raised in both modes (lenient mode never raises on the *answer*).
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise ValueError(f"cap must be a non-negative integer, got {cap!r}")
    return cap


def _empty(sizes: StepSizes, cap: int, ctx: "_Ctx | None", error: str, json_text=None) -> ParseResult:
    repairs, n = (ctx.notes(), ctx.n_repairs) if ctx is not None else ((), 0)
    return ParseResult(ActionSequence((), sizes, cap), repairs, False, error, None, json_text, n)


def parse_object(obj: Any, strict: bool = False, sizes: StepSizes | None = None,
                 cap: int = DEFAULT_CAP, json_text: str | None = None) -> ParseResult:
    """Interpret an already-loaded JSON value as an answer (see :func:`parse_response`)."""
    _check_cap(cap)
    sizes = sizes or StepSizes.navigation()
    ctx = _Ctx(strict, sizes, cap)
    try:
        steps, fmt = _interpret(obj, "$", ctx)
    except ParseError as e:
        if strict:
            raise
        return _empty(sizes, cap, ctx, str(e) or "$: no usable step", json_text)
    except RecursionError:
        if strict:
            raise ParseError("$: answer nested too deeply") from None
        return _empty(sizes, cap, ctx, "$: answer nested too deeply", json_text)
    if not any(ok for _, ok in steps):
        msg = "no usable step" + (f" ({ctx.last[0]}: {ctx.last[1]})" if ctx.last
                                  else " (no step names an action, a gripper state or a vector)")
        if strict:
            raise ParseError(msg)
        return _empty(sizes, cap, ctx, msg, json_text)
    for k, (_, ok) in enumerate(steps):
        if not ok:
            ctx.repair(f"step {k + 1}", "nothing usable: kept as Stay to preserve step alignment")
    seq = ActionSequence(tuple(s for s, _ in steps), sizes, cap)
    return ParseResult(seq, ctx.notes(), True, None, fmt, json_text, ctx.n_repairs)


# ------------------------------------------------------------------------------------------------------
# Fast path: well-formed answers (the common case)
# ------------------------------------------------------------------------------------------------------
# The fast path reads the answers that need no repair and no fallback, in the shapes models are asked for, and
# returns exactly what the full path returns for them (ParseResult equal in every field); on anything else it
# returns None and the full path runs. It accepts:
#   text   no think tag; either closed fences (the body of the last ```json fence, else of the last fence), or no
#          backtick at all (the outermost {...}, else the outermost [...], prose around it allowed); that JSON
#          loads with json's C decoder and has no duplicate key;
#   flat   {"actions": [names], "step_nums": [counts], "gripper": g?} (exactly these keys; both lists may be empty);
#   stepped / vector   {"step_N": step, ...} (keys exactly "step_" + ASCII digits, distinct numbers), or a list of
#          steps, or one vector; a step is a flat object as above, a vector of 6 or 7 numbers, or null/[]/"";
#   values names the table knows (any spelling lookup_primitive accepts), counts ints in [0, cap] after summing,
#          Grab/Release with count 1, gripper null/bool/0/1/0.0/1.0/a gripper word agreeing with any gesture,
#          vector components finite and within ±cap·unit.
# Everything else (prose around an unfenced object, an unclosed fence, trailing commas, Python quoting, any repair,
# any failure) goes to the full path. Equality is tested over the corpus and on every fuzzed string.


class _Duplicate(ValueError):
    pass


def _pairs_no_duplicates(pairs) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        raise _Duplicate("duplicate key")
    return d


_FAST_DECODER = json.JSONDecoder(object_pairs_hook=_pairs_no_duplicates)
_FLAT_KEYS = frozenset(("actions", "step_nums", "gripper"))
_MISSING = object()
_STAY = (0,) * N_MOTION
# name -> (column of the counts it adds to, or -1 for Stay, or -2 for a gesture; the gesture's gripper state)
_NAME_MEMO: dict[str, tuple[int, int | None] | None] = {}
_NAME_MEMO_SIZE = 4096
# Steps by value: building one validates it (about 6 µs), and offline scoring meets the same steps again and again.
# At most 16384 (about 8 MB); when full it starts again from empty.
_STEP_MEMO: dict[tuple, Step] = {}
_STEP_MEMO_SIZE = 16384
_OPEN_WORDS = frozenset(("open", "opened", "release", "released", "0"))
_CLOSE_WORDS = frozenset(("close", "closed", "grab", "grip", "grasp", "1"))


def _fast_name(name: str) -> tuple[int, int | None] | None:
    """What a name does in a counts step, from the one table (lookup_primitive), memoised per spelling."""
    hit = _NAME_MEMO.get(name, _MISSING)
    if hit is not _MISSING:
        return hit
    p = lookup_primitive(name)
    if p is None:
        hit = None
    else:
        spec = PRIMITIVE_TABLE[p]
        if spec.gripper is not None:
            hit = (-2, spec.gripper)
        elif p is Primitive.STAY:
            hit = (-1, None)
        else:
            hit = (MOTION_PRIMITIVES.index(spec.motion_as or p), None)
    if len(_NAME_MEMO) < _NAME_MEMO_SIZE and len(name) <= 40:
        _NAME_MEMO[name] = hit
    return hit


def _fast_gripper(g: Any) -> int | None | object:
    """A gripper value the full path reads without a repair, else _MISSING."""
    t = type(g)
    if g is None:
        return None
    if t is bool:
        return int(g)
    if (t is int or t is float) and (g == 0 or g == 1):
        return int(g)
    if t is str:
        w = g.strip().lower()
        if w in _OPEN_WORDS:
            return 0
        if w in _CLOSE_WORDS:
            return 1
    return _MISSING


def _fast_step(counts: tuple | None, motion: tuple | None, gripper: int | None) -> Step:
    """``Step(...)``, memoised: steps are immutable values and well-formed answers repeat a few of them."""
    key = (counts, motion, gripper)
    step = _STEP_MEMO.get(key)
    if step is None:
        step = Step(counts=counts, motion=motion, gripper=gripper)
        if len(_STEP_MEMO) >= _STEP_MEMO_SIZE:
            _STEP_MEMO.clear()
        _STEP_MEMO[key] = step
    return step


def _fast_counts(d: dict, cap: int, state: int | None = None) -> Step | None:
    """A counts step; ``state`` is the gripper state so far, which a step that does not set one keeps (the
    resolution ActionSequence makes, done here so that its steps come from the memo)."""
    if not d.keys() <= _FLAT_KEYS:
        return None
    actions, nums = d.get("actions"), d.get("step_nums")
    if type(actions) is not list or type(nums) is not list or len(actions) != len(nums):
        return None
    counts = [0] * N_MOTION
    gesture = None
    for name, n in zip(actions, nums):
        if type(name) is not str:
            return None
        what = _fast_name(name)
        if what is None:
            return None
        col, grip = what
        if col >= 0:
            if type(n) is not int or n < 0:
                return None
            counts[col] += n
        elif col == -2:
            if not ((type(n) is int or type(n) is float) and n == 1):
                return None
            gesture = grip
    if max(counts) > cap:
        return None
    gripper = gesture
    if "gripper" in d:
        g = _fast_gripper(d["gripper"])
        if g is _MISSING or (g is not None and gesture is not None and g != gesture):
            return None
        if g is not None:
            gripper = g
    return _fast_step(tuple(counts), None, state if gripper is None else gripper)


def _fast_vector(v: list, lim_t: float, lim_r: float, state: int | None = None) -> Step | None:
    n = len(v)
    if n != 6 and n != 7:
        return None
    comps = []
    for i in range(6):
        x = v[i]
        t = type(x)
        if t is int:
            x = float(x) if -1e18 < x < 1e18 else math.inf
        elif t is not float:
            return None
        if not abs(x) <= (lim_t if i < 3 else lim_r):  # also refuses NaN and inf
            return None
        comps.append(x)
    g = None
    if n == 7:
        g = _fast_gripper(v[6])
        if g is _MISSING:
            return None
    dx, dy, dz, roll, pitch, yaw = comps
    return _fast_step(None, (dx, dy, dz, pitch, yaw, roll), state if g is None else g)


def _fast_any_step(v: Any, cap: int, lim_t: float, lim_r: float, state: int | None) -> tuple[Step | None, bool]:
    """(step or None, is a vector step)."""
    t = type(v)
    if t is dict:
        return _fast_counts(v, cap, state), False
    if t is list:
        if not v:
            return _fast_step(_STAY, None, state), False
        return _fast_vector(v, lim_t, lim_r, state), True
    if v is None or v == "":
        return _fast_step(_STAY, None, state), False
    return None, False


def _is_numbers(v: list) -> bool:
    for x in v:
        t = type(x)
        if t is not int and t is not float:
            return False
    return True


def parse_response_fast(text: Any, sizes: StepSizes | None = None, cap: int = DEFAULT_CAP) -> ParseResult | None:
    """The fast path alone: the :class:`ParseResult` of a well-formed answer (one that needs no repair and no
    fallback, see the comment above), equal to :func:`parse_response_reference`'s; None for any other answer.
    Its result is the same in strict mode (a well-formed answer is strictly valid)."""
    _check_cap(cap)
    if type(text) is not str or ("<" in text and _THINK_TAG.search(text)):
        return None
    if "```" in text:
        found = find_fences(text)
        if not found:
            return None
        body = next((b for lang, b in reversed(found) if lang.lower() == "json"), found[-1][1])
        js = body.strip()
        if not js:
            return None
    else:  # the first candidate of the full path
        spans = outermost_spans(text)
        if not spans:
            return None
        js = spans[0]
    try:
        obj, end = _FAST_DECODER.raw_decode(js)
    except (ValueError, RecursionError):
        return None
    if end != len(js):
        return None
    sizes = sizes or StepSizes.navigation()
    lim_t, lim_r = cap * sizes.translation, cap * sizes.rotation
    if type(obj) is dict:
        if "actions" in obj:
            step = _fast_counts(obj, cap)
            if step is None:
                return None
            return ParseResult(ActionSequence((step,), sizes, cap), (), True, None, "flat", js)
        numbered = []
        for k, v in obj.items():
            digits = k[5:]
            if not (k.startswith("step_") and 0 < len(digits) <= 9 and digits.isascii() and digits.isdigit()):
                return None
            numbered.append((int(digits), v))
        if not numbered:
            return None
        numbered.sort(key=lambda nv: nv[0])
        values = [v for _, v in numbered]
        if len({n for n, _ in numbered}) != len(numbered):
            return None
    elif type(obj) is list and obj:
        if _is_numbers(obj):
            step = _fast_vector(obj, lim_t, lim_r)
            if step is None:
                return None
            return ParseResult(ActionSequence((step,), sizes, cap), (), True, None, "vector", js)
        if all(type(x) is str for x in obj):  # a list of names: one step without step_nums (repairs)
            return None
        values = obj
    else:
        return None
    steps, all_vectors, state = [], True, None
    for v in values:
        step, is_vector = _fast_any_step(v, cap, lim_t, lim_r, state)
        if step is None:
            return None
        steps.append(step)
        state = step.gripper
        all_vectors = all_vectors and is_vector
    return ParseResult(ActionSequence(tuple(steps), sizes, cap), (), True, None,
                       "vector" if all_vectors else "stepped", js)


def parse_response(text: str, strict: bool = False, sizes: StepSizes | None = None,
                   cap: int = DEFAULT_CAP) -> ParseResult:
    """Parse a model's answer text into a :class:`ParseResult` ``(sequence, repairs, ok, error)``.

    ``sizes`` are the task's unit step sizes (navigation defaults when None); ``cap`` the largest count of one
    primitive in one step. Strict mode raises :class:`ParseError`; lenient mode never raises on the answer (a
    negative or non-integer ``cap`` is the caller's error: ValueError in both modes).

    Time is linear in the length of the text. A well-formed answer takes the fast path
    (:func:`parse_response_fast`), any other the full path (:func:`parse_response_reference`); the result is the
    same either way.
    """
    res = parse_response_fast(text, sizes, cap)
    if res is not None:
        return res
    return parse_response_reference(text, strict, sizes, cap)


_UNICODE_MINUS = "\u2212"


# ------------------------------------------------------------------------------------------------------
# Bare action: an answer that is one action name and nothing else
# ------------------------------------------------------------------------------------------------------
# docs/parsing.md, "Bare action". The markup around the name is peeled in rounds, each of a constant number of
# C-level string operations (strip, lstrip/rstrip of one character, one slice, one anchored match of the fence
# header): at most _BARE_ROUNDS rounds, so the work is linear in the text whatever it holds (no regex search, no
# loop over characters in Python).
_BARE_ROUNDS = 8
_BARE_NAME_MAX = 64  # the longest name read (the longest alias, "roll counterclockwise", has 21 characters)
_DIGITS = "0123456789"


def _peel(s: str, ch: str) -> str | None:
    """``s`` without a leading and a trailing run of ``ch`` (both present, something between); None when not so."""
    lead = len(s) - len(s.lstrip(ch))
    trail = len(s) - len(s.rstrip(ch))
    if not lead or not trail or lead + trail >= len(s):
        return None
    body = s[lead:len(s) - trail]
    if ch == "`" and lead >= 3:  # a fence: a header line (spaces, a language tag, spaces) before a newline goes
        end = _FENCE_HEADER.match(body).end()
        if body.startswith("\r\n", end):
            body = body[end + 2:]
        elif body.startswith("\n", end):
            body = body[end + 1:]
    return body


def _bare_action(text: str) -> tuple[str, str, int | float] | None:
    """``(what was read, name, count)`` when ``text`` is one action name, alias, symbol or stop word with an optional
    count (``Stay``, ``**Dolly In**``, ``pan left 3.``, ```` `forward` ````), else None.

    Peeled, in any order and nesting: surrounding whitespace, backticks (an inline span or a fence, whose header
    line is dropped), runs of ``*`` or ``_`` on both sides (bold, italic), and one trailing period in all. What is
    left is a name that :func:`lookup_primitive` knows, optionally followed by whitespace and ASCII digits (the
    count; 1 when absent). Anything else (a sentence, two names, a quoted JSON string) is None."""
    s, period = text.strip(), False
    for _ in range(_BARE_ROUNDS):
        before = s
        if not period and s.endswith("."):
            s, period = s[:-1].rstrip(), True
        for ch in "`*_":
            body = _peel(s, ch)
            if body is not None:
                s = body.strip()
        if s is before or s == before:
            break
    digits = len(s) - len(s.rstrip(_DIGITS))
    name, count = s, 1
    if digits and digits < len(s) and s[-digits - 1].isspace():
        name, count = s[:-digits].rstrip(), _parse_int(s[-digits:])
    if not name or len(name) > _BARE_NAME_MAX or lookup_primitive(name) is None:
        return None
    return s, name, count


def _bare_result(text: str, strict: bool, sizes: StepSizes, cap: int) -> ParseResult | None:
    """The one-step result of a bare action (see :func:`_bare_action`), with the note ``$: bare action '…' read as
    one step`` before any repair the count needs (cap, gesture); None when ``text`` is not one. Strict mode raises
    :class:`ParseError` with that note: a bare action is not the JSON answer asked for."""
    found = _bare_action(_strip_think(text) if "<" in text else text)
    if found is None:
        return None
    read, name, count = found
    note = f"$: bare action {_short(read)} read as one step"
    if strict:
        raise ParseError(note)
    res = parse_object({"actions": [name], "step_nums": [count]}, False, sizes, cap)
    return replace(res, repairs=(note, *res.repairs), n_repairs=res.n_repairs + 1)


def parse_response_reference(text: str, strict: bool = False, sizes: StepSizes | None = None,
                             cap: int = DEFAULT_CAP) -> ParseResult:
    """The full lenient (or strict) path alone, every rule of docs/parsing.md: what :func:`parse_response`
    returns, without the fast path. The reference the fast path is tested against."""
    _check_cap(cap)
    sizes = sizes or StepSizes.navigation()
    if not isinstance(text, str):
        if strict:
            raise ParseError(f"$: the answer is not text but {type(text).__name__}")
        return _empty(sizes, cap, None, f"$: the answer is not text but {type(text).__name__}")
    if not text.strip():
        if strict:
            raise ParseError("$: empty answer")
        return _empty(sizes, cap, None, "$: empty answer")
    bare = _bare_result(text, strict, sizes, cap)
    if bare is not None:
        return bare
    minus = ()
    try:
        json_text, obj = extract_json_text(text)
    except (ValueError, RecursionError, MemoryError) as e:
        msg = (str(e) if isinstance(e, ValueError) else "") or f"unreadable answer ({e.__class__.__name__})"
        if strict:
            raise ParseError(f"$: {msg}") from None
        try:  # a typographic minus (U+2212) as a model may write it: "step_nums": [−2]
            if _UNICODE_MINUS not in text:
                raise ValueError(msg)
            json_text, obj = extract_json_text(text.replace(_UNICODE_MINUS, "-"))
            minus = (f"$: {text.count(_UNICODE_MINUS)} minus sign(s) U+2212 read as '-'",)
        except (ValueError, RecursionError, MemoryError):
            return _empty(sizes, cap, None, f"$: {msg}")
    try:
        res = parse_object(obj, strict, sizes, cap, json_text)
        return replace(res, repairs=minus + res.repairs, n_repairs=res.n_repairs + 1) if minus else res
    except ParseError:
        raise
    except Exception as e:  # lenient parsing must never crash a run; the reason is kept
        if strict:
            raise ParseError(f"$: unreadable answer ({e.__class__.__name__}: {e})") from None
        return _empty(sizes, cap, None, f"$: unreadable answer ({e.__class__.__name__}: {e})", json_text)


def sequence_from_json(obj: Any, sizes: StepSizes | None = None, cap: int = DEFAULT_CAP) -> ActionSequence:
    """A JSON answer (its text, or the loaded value) in any answer format, parsed strictly (raises
    :class:`ParseError`): what :meth:`ActionSequence.from_json` returns."""
    if isinstance(obj, str):
        return parse_response(obj, strict=True, sizes=sizes, cap=cap).sequence
    return parse_object(obj, strict=True, sizes=sizes, cap=cap).sequence


install_json_reader(sequence_from_json)
