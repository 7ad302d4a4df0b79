"""Diagnostics from the other papers (docs/diagnostics.md): why an agent fails, not only how often.

* FlipEval for actions (3DSRBench): :func:`mirror_task`, :func:`mirror_observation`, :class:`MirroredAgent`,
  :class:`MirrorWrapper` (a Gymnasium wrapper; imports Gymnasium when first used), :func:`mirror_inconsistency`;
* viewpoint robustness (3DSRBench): :func:`viewpoint_delta`;
* difficulty ladder (Spatial457): :func:`rpdr`, :func:`chance_normalised`;
* prediction bias (Spatial457): :func:`label_counts`, :func:`label_cv`, :func:`normalised_label_cv`,
  :func:`lr_bias`, :func:`sign_confusion`;
* the same over a run's records: :func:`run_diagnostics` and its parts (:mod:`.summaries`).

Everything but :class:`MirrorWrapper` needs only the light core (numpy). The procedural tasks these read (difficulty
levels, viewpoint pairs) are built by :func:`spatialact.taskgen.ladder_tasks` and :func:`spatialact.taskgen.viewpoint_pairs`;
``spatialact eval --flip`` runs the mirrored episodes. Decisions and definitions: ``docs/diagnostics.md``.
"""

from __future__ import annotations

from .metrics import (LEFT_PRIMITIVES, RIGHT_PRIMITIVES, SIGN_LABELS, chance_normalised, label_counts, label_cv,
                      lr_bias, lr_units, normalised_label_cv, rpdr, sign_confusion, step_signs, viewpoint_delta)
from .mirror import (MirroredAgent, flip_image, mirror_inconsistency, mirror_instruction,
                     mirror_observation, mirror_task, mirror_turn, variant_agent)
from .summaries import bias_summary, flip_summary, ladder_summary, run_diagnostics, viewpoint_summary
from .circular import circular_eval

__all__ = ["rpdr", "circular_eval", "chance_normalised", "viewpoint_delta", "label_counts", "label_cv",
           "normalised_label_cv",
           "lr_units", "lr_bias", "step_signs", "sign_confusion", "LEFT_PRIMITIVES", "RIGHT_PRIMITIVES",
           "SIGN_LABELS", "MirroredAgent", "MirrorWrapper", "flip_image", "mirror_inconsistency",
           "mirror_instruction", "mirror_observation", "mirror_task", "mirror_turn", "variant_agent",
           "flip_summary", "viewpoint_summary", "ladder_summary", "bias_summary", "run_diagnostics"]


def __getattr__(name: str):
    if name == "MirrorWrapper":  # imports Gymnasium (the sim extra)
        from .wrapper import MirrorWrapper

        return MirrorWrapper
    raise AttributeError(f"module 'spatialact.diagnostics' has no attribute {name!r}")
