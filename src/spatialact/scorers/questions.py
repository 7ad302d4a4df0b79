"""Question scores (docs/scoring.md, "Question scores"; docs/questions.md) for generated camera-geometry and
task-flow questions.

* Multiple choice: the answer letter is extracted robustly from the model's text; no random fallback — an answer
  that names no option (or names two with equal standing) is wrong, with ``reason: "parse_error"``.
* Numeric: relative error ``|p − g| / |g|``, the δ=2 rule (correct when ``max(p/g, g/p) ≤ 2``, so both must have
  the same sign) and mean relative accuracy: the share of thresholds θ ∈ {0.50, 0.55, …, 0.95} with
  ``rel_error < 1 − θ``. A typographic minus is a minus (:func:`read_minus_signs`; the action parser reads U+2212
  the same way): ``"−54.1"`` is −54.1, and the score says it was read so (``repairs``).
"""

from __future__ import annotations

import math
import re
import string
from typing import Sequence

import numpy as np

__all__ = ["score_multiple_choice", "score_numeric", "extract_choice", "extract_number", "drop_think",
           "MRA_THRESHOLDS", "read_minus_signs", "MINUS_SIGNS", "SIGN_DASHES"]

#: Mean-relative-accuracy thresholds 0.50 … 0.95 in steps of 0.05.
MRA_THRESHOLDS = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
_ANSWER = re.compile(r"answer", re.IGNORECASE)

# Model text is untrusted: every rule below runs in time linear in its length (no regex that can backtrack over a
# run of spaces, newlines or tags; tests/questions/test_scoring.py times the worst cases).


def drop_think(text: str) -> str:
    """``text`` without its ``<think>…</think>`` blocks (case-insensitive; each block from an opening tag to the
    first closing tag after it, as the non-greedy regex would take it; an unclosed block is kept). Linear time."""
    out, pos, open_at = [], 0, None
    for m in _THINK_TAG.finditer(text):
        if open_at is None:
            if not m.group(1):
                open_at = m.start()
        elif m.group(1):
            out.append(text[pos:open_at])
            out.append(" ")
            pos, open_at = m.end(), None
    out.append(text[pos:])
    return "".join(out)


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _skip(text: str, i: int) -> int:
    """The first index at or after ``i`` that is not whitespace."""
    n = len(text)
    while i < n and text[i].isspace():
        i += 1
    return i


def _letter_at(text: str, i: int, letters: str) -> str | None:
    """The option letter at ``i`` when it stands alone there (not followed by a word character or ')."""
    if i < len(text) and text[i].upper() in letters and text[i].isascii():
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if not (nxt and (_word_char(nxt) or nxt == "'")):
            return text[i].upper()
    return None


def _explicit_answers(text: str, letters: str) -> list[str]:
    """The letters of "answer X", "answer: X", "answer is (X)", "Answer - **X**" (in order)."""
    found = []
    for m in _ANSWER.finditer(text):
        i = _skip(text, m.end())
        tries = [i]
        if text[i:i + 2].lower() == "is":
            tries = [i + 2, i]  # "answer is B"; or "is" was no separator ("answer I" with an option I)
        elif text[i:i + 1] == ":":
            tries = [i + 1]
        for j in tries:
            j = _skip(text, j)
            if j < len(text) and text[j] in ":-":
                j = _skip(text, j + 1)
            while j < len(text) and text[j] in "([*":
                j += 1
            j = _skip(text, j)
            got = _letter_at(text, j, letters)
            if got is not None:
                found.append(got)
                break
    return found


def _whole_letter(text: str, letters: str) -> str | None:
    """The letter when the whole text is one letter, optionally wrapped: ``B``, ``(B)``, ``**B**.``, ``B:``."""
    i, j = 0, len(text)
    while i < j and (text[i].isspace() or text[i] in "*(["):
        i += 1
    while j > i and (text[j - 1].isspace() or text[j - 1] in "*)].:"):
        j -= 1
    if j - i == 1 and text[i].upper() in letters and text[i].isascii():
        return text[i].upper()
    return None


def _standalone_letters(text: str, letters: str) -> set[str]:
    """Letters written as ``(X)`` anywhere, or as ``X.`` / ``X)`` at the start of a line (after spaces and ``*``)."""
    found = set()
    i = text.find("(")
    while i >= 0:
        if i + 2 < len(text) and text[i + 2] == ")" and text[i + 1].upper() in letters and text[i + 1].isascii():
            found.add(text[i + 1].upper())
        i = text.find("(", i + 1)
    for line in text.split("\n"):
        k = _skip(line, 0)
        while k < len(line) and line[k] == "*":
            k += 1
        if k + 1 < len(line) and line[k].upper() in letters and line[k].isascii() and line[k + 1] in ".)":
            found.add(line[k].upper())
    return found


def _letters(options) -> str:
    n = len(options) if options is not None else 26
    return string.ascii_uppercase[:max(1, min(n, 26))]


def extract_choice(response: str, options: Sequence[str] | None = None) -> str | None:
    """The option letter a response names, or None. Tried in order, the first rule that finds exactly one
    letter wins: an explicit "answer: X" / "answer is (X)" (the last one); the whole reply being one letter
    (``B``, ``(B)``, ``B.``, ``**B**``); letters standing alone as ``(X)`` or ``X.``/``X)`` at a line start (one
    distinct letter only); the text of exactly one option quoted in the reply. ``<think>`` blocks are dropped
    first. Linear time in the length of the response."""
    if not isinstance(response, str):
        return None
    text = drop_think(response).strip()
    L = _letters(options)
    m = _explicit_answers(text, L)
    if m:
        return m[-1]
    whole = _whole_letter(text, L)
    if whole:
        return whole
    found = _standalone_letters(text, L)
    if len(found) == 1:
        return found.pop()
    if options:
        low = text.lower()
        hits = [L[i] for i, o in enumerate(options) if isinstance(o, str) and o.strip() and o.strip().lower() in low]
        if len(hits) == 1:
            return hits[0]
    return None


def score_multiple_choice(response: str, answer_letter: str, options: Sequence[str] | None = None) -> dict:
    """``{"score": 1.0 | 0.0, "correct", "pred" (letter or None), "answer", "reason"}``; unparseable → 0."""
    ans = str(answer_letter).strip().strip("()").upper()
    pred = extract_choice(response, options)
    correct = pred is not None and pred == ans
    return {"score": 1.0 if correct else 0.0, "correct": correct, "pred": pred, "answer": ans,
            "reason": None if pred is not None else "parse_error"}


#: Characters that are a minus wherever an ASCII ``-`` would be one: U+2212 MINUS SIGN (what typesetting and many
#: models write), U+FE63 SMALL HYPHEN-MINUS and U+FF0D FULLWIDTH HYPHEN-MINUS.
MINUS_SIGNS = {"\u2212": "U+2212", "\ufe63": "U+FE63", "\uff0d": "U+FF0D"}
#: Dashes that are a minus only as a sign — directly before a digit (or ``.digit``) and not right after a letter,
#: digit or ``.``: U+2013 EN DASH, which word processors put for a leading ``-`` ("–54.1"), but which between
#: numbers is a range ("50–60": two positive numbers). Other dashes (hyphen U+2010, figure dash U+2012, em dash
#: U+2014, …) are punctuation, never a minus.
SIGN_DASHES = {"\u2013": "U+2013"}


def _starts_number(text: str, i: int) -> bool:
    return i < len(text) and (text[i].isdigit() and text[i].isascii()
                              or text[i] == "." and i + 1 < len(text) and text[i + 1].isdigit())


def read_minus_signs(text: str) -> tuple[str, list[str]]:
    """``text`` with its typographic minus signs written as ``-`` (:data:`MINUS_SIGNS` everywhere,
    :data:`SIGN_DASHES` where they stand as a sign), and one note per character kind read so — e.g.
    ``"response: 1 minus sign U+2212 read as '-'"`` — or no notes when there was none. Linear time."""
    if not any(c in text for c in MINUS_SIGNS) and not any(c in text for c in SIGN_DASHES):
        return text, []
    out, counts = [], {}
    for i, c in enumerate(text):
        name = MINUS_SIGNS.get(c)
        if name is None and c in SIGN_DASHES and _starts_number(text, i + 1):
            prev = text[i - 1] if i else ""
            if not (prev.isalnum() or prev == "."):
                name = SIGN_DASHES[c]
        if name is None:
            out.append(c)
        else:
            out.append("-")
            counts[name] = counts.get(name, 0) + 1
    notes = [f"response: {n} minus sign{'s' if n > 1 else ''} {name} read as '-'" for name, n in counts.items()]
    return "".join(out), notes


def _extract_number(x) -> tuple[float | None, list[str]]:
    if isinstance(x, bool):
        return None, []
    if isinstance(x, (int, float, np.integer, np.floating)):
        v = float(x)
        return (v if math.isfinite(v) else None), []
    if isinstance(x, str):
        text, notes = read_minus_signs(drop_think(x))
        nums = _NUMBER.findall(text.replace(",", ""))
        if nums:
            v = float(nums[-1])
            return (v if math.isfinite(v) else None), notes
        return None, notes
    return None, []


def extract_number(x) -> float | None:
    """A number from a number or a text (the last number in it, after dropping think blocks and reading typographic
    minus signs, :func:`read_minus_signs`); None if none."""
    return _extract_number(x)[0]


def score_numeric(pred, gt) -> dict:
    """``{"rel_error", "delta2", "mra", "pred", "reason"}`` for a numeric answer (number or text) against ``gt``.

    ``gt == 0``: rel_error is 0 for an exact 0, else infinite. An answer with no finite number: rel_error
    infinite, delta2 False, mra 0, reason ``"parse_error"``. ``repairs`` (present only when there is one): what was
    read other than as written (a typographic minus read as ``-``, :func:`read_minus_signs`).
    """
    g = float(gt)
    if not math.isfinite(g):
        raise ValueError(f"ground truth must be finite, got {gt!r}")
    p, repairs = _extract_number(pred)
    if p is None:
        out = {"rel_error": math.inf, "delta2": False, "mra": 0.0, "pred": None, "reason": "parse_error"}
        return dict(out, repairs=repairs) if repairs else out
    if g == 0.0:
        rel = 0.0 if p == 0.0 else math.inf
    else:
        rel = abs(p - g) / abs(g)
    if p == g:
        delta2 = True
    elif p == 0.0 or g == 0.0 or (p > 0) != (g > 0):
        delta2 = False
    else:
        delta2 = max(p / g, g / p) <= 2.0
    mra = sum(1 for t in MRA_THRESHOLDS if rel < 1.0 - t) / len(MRA_THRESHOLDS)
    out = {"rel_error": rel, "delta2": bool(delta2), "mra": mra, "pred": p, "reason": None}
    return dict(out, repairs=repairs) if repairs else out
