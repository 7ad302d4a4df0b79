"""Scores (docs/scoring.md): per-step, episode and dataset scores, closed-loop metrics, question scores, and the
lmms-eval profile.

Light core only (numpy, scipy); torch is imported inside the torch backend of :func:`score_steps_batch`.

* :func:`score_step` / :func:`step_total` — one step, the per-record reference (docs/scoring.md, "Per-step scores");
* :func:`score_steps_batch` / :func:`step_totals_batch` — N steps at once, numpy float64 or torch ("Batch scoring");
* :func:`score_episode` → :class:`EpisodeScore`, :func:`score_answer` — episodes and answer texts ("Episodes");
* :func:`aggregate_episodes`, :func:`hierarchical_scores` — dataset scores with bootstrap intervals ("Dataset
  aggregation"): the project's one bootstrap (:func:`bootstrap_ci`) and one mean-with-interval summary
  (:func:`summarise`);
* :func:`null_answer`, :func:`null_score`, :func:`skill_summary`, :func:`paired_difference`, :func:`holm` — skill
  (0 for doing nothing, 1 for the ground truth), paired comparisons of two runs ("Skill");
* :func:`closed_loop_metrics` — final errors, success, path length, SPL ("Closed-loop metrics");
* :func:`score_multiple_choice`, :func:`score_numeric` — question scores ("Question scores");
* :func:`score_lmms_eval`, :func:`to_lmms_extra_info` — profile ``lmms-eval`` (docs/lmms_eval_profile.md);
* :func:`score_file` — a file of answers against a task file, offline ("Offline scoring"; the pipeline of
  ``spatialact score``).
"""

from .aggregate import (DEFAULT_TREE, MAX_GROUPS, SPATREE_L4, aggregate_arrays, aggregate_episodes, bootstrap_ci,
                        hierarchical_scores, holm, leaf_of, load_tree, paired_difference, percentile_interval,
                        skill_summary, summarise, tag_label)
from .batch import (KIND_CODES, rotations_from_motions, score_episodes_batch, score_steps_batch, sequence_arrays,
                    step_totals_batch)
from .closed_loop import closed_loop_metrics
from .episode import ANSWER_PROFILES, EpisodeScore, net_errors, score_answer, score_episode
from .null import null_answer, null_score
from .lmms_eval import score_lmms_eval, to_lmms_answer, to_lmms_extra_info
from .offline import OFFLINE_PROFILES, score_file
from .questions import MRA_THRESHOLDS, extract_choice, extract_number, score_multiple_choice, score_numeric
from .step import DEFAULT_WEIGHTS, EPS, normalise_weights, parse_weights, score_step, step_total

__all__ = [
    "EPS", "DEFAULT_WEIGHTS", "ANSWER_PROFILES",
    "score_step", "step_total", "normalise_weights", "parse_weights",
    "score_steps_batch", "step_totals_batch", "rotations_from_motions", "score_episodes_batch", "sequence_arrays",
    "KIND_CODES",
    "EpisodeScore", "score_episode", "score_answer", "net_errors",
    "aggregate_episodes", "aggregate_arrays", "bootstrap_ci", "percentile_interval", "summarise", "tag_label",
    "MAX_GROUPS",
    "hierarchical_scores", "load_tree", "leaf_of", "DEFAULT_TREE", "SPATREE_L4",
    "null_answer", "null_score", "skill_summary", "paired_difference", "holm",
    "closed_loop_metrics",
    "score_multiple_choice", "score_numeric", "extract_choice", "extract_number", "MRA_THRESHOLDS",
    "score_lmms_eval", "to_lmms_extra_info", "to_lmms_answer",
    "score_file", "OFFLINE_PROFILES",
]
