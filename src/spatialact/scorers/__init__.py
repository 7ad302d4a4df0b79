"""Scores (SPEC §4): per-step, episode and dataset scores, and the lmms-eval profile.

Light core only (numpy, scipy); torch is imported inside the torch backend of the batch scorer.
"""

from .lmms_eval import score_lmms_eval, to_lmms_answer, to_lmms_extra_info
from .step import DEFAULT_WEIGHTS, EPS, normalise_weights, parse_weights, score_step, step_total

__all__ = [
    "EPS", "DEFAULT_WEIGHTS", "score_step", "step_total", "normalise_weights", "parse_weights",
    "score_lmms_eval", "to_lmms_extra_info", "to_lmms_answer",
]
