"""Question scores (SPEC §4.6) for generated camera-geometry and task-flow questions.

* Multiple choice: the answer letter is extracted robustly from the model's text; no random fallback — an answer
  that names no option (or names two with equal standing) is wrong, with ``reason: "parse_error"``.
* Numeric: relative error ``|p − g| / |g|``, the δ=2 rule (correct when ``max(p/g, g/p) ≤ 2``, so both must have
  the same sign) and mean relative accuracy: the share of thresholds θ ∈ {0.50, 0.55, …, 0.95} with
  ``rel_error < 1 − θ``.
"""

from __future__ import annotations

import math
import re
import string
from typing import Sequence

import numpy as np

__all__ = ["score_multiple_choice", "score_numeric", "extract_choice", "extract_number", "MRA_THRESHOLDS"]

#: Mean-relative-accuracy thresholds 0.50 … 0.95 in steps of 0.05.
MRA_THRESHOLDS = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def _letters(options) -> str:
    n = len(options) if options is not None else 26
    return string.ascii_uppercase[:max(1, min(n, 26))]


def extract_choice(response: str, options: Sequence[str] | None = None) -> str | None:
    """The option letter a response names, or None. Tried in order, the first rule that finds exactly one
    letter wins: an explicit "answer: X" / "answer is (X)" (the last one); the whole reply being one letter
    (``B``, ``(B)``, ``B.``, ``**B**``); letters standing alone as ``(X)`` or ``X.``/``X)`` at a line start (one
    distinct letter only); the text of exactly one option quoted in the reply."""
    if not isinstance(response, str):
        return None
    text = _THINK.sub(" ", response).strip()
    L = _letters(options)
    cls = f"[{L}{L.lower()}]"
    m = re.findall(rf"answer\s*(?:is|:)?\s*[:\-]?\s*[\(\[\*]*\s*({cls})\b(?![\w'])", text, re.IGNORECASE)
    m = [x for x in m if x.upper() in L]
    if m:
        return m[-1].upper()
    whole = re.fullmatch(rf"[\s\*\(\[]*({cls})[\s\*\)\]\.:]*", text)
    if whole:
        return whole.group(1).upper()
    found = set(re.findall(rf"\(({cls})\)", text)) | set(re.findall(rf"(?m)^\s*\**({cls})[\.\)]", text))
    found = {x.upper() for x in found if x.upper() in L}
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


def extract_number(x) -> float | None:
    """A number from a number or a text (the last number in it, after dropping think blocks); None if none."""
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float, np.integer, np.floating)):
        v = float(x)
        return v if math.isfinite(v) else None
    if isinstance(x, str):
        nums = _NUMBER.findall(_THINK.sub(" ", x).replace(",", ""))
        if nums:
            v = float(nums[-1])
            return v if math.isfinite(v) else None
    return None


def score_numeric(pred, gt) -> dict:
    """``{"rel_error", "delta2", "mra", "pred", "reason"}`` for a numeric answer (number or text) against ``gt``.

    ``gt == 0``: rel_error is 0 for an exact 0, else infinite. An answer with no finite number: rel_error
    infinite, delta2 False, mra 0, reason ``"parse_error"``.
    """
    g = float(gt)
    if not math.isfinite(g):
        raise ValueError(f"ground truth must be finite, got {gt!r}")
    p = extract_number(pred)
    if p is None:
        return {"rel_error": math.inf, "delta2": False, "mra": 0.0, "pred": None, "reason": "parse_error"}
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
    return {"rel_error": rel, "delta2": bool(delta2), "mra": mra, "pred": p, "reason": None}
