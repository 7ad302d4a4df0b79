"""The null answer and its score s0 (docs/scoring.md, "Skill"): what doing nothing scores on a task.

The raw episode score gives doing nothing a sizeable share of the credit (on manipulation and hand tasks a Stay
answer scores about 0.42-0.44, since a step that does not move is partly right on every axis the ground truth
does not move either). Skill rescales the raw score so that doing nothing is 0 and the ground truth is 1; its zero
is ``s0``, the score of the ``stay`` baseline's answer on the same task, profile and mode:

* one-shot: one Stay step per ground-truth step (``max(1, task.n_steps)`` of them: only the motion is judged, not
  the length);
* closed-loop: the empty sequence (the stay agent says Stay at once; nothing is executed).

``agents.baselines.StayAgent`` answers with :func:`null_answer`, so its score is s0 by construction.
"""

from __future__ import annotations

from ..action_space import ActionSequence, Step
from ..vocab import MODES
from .episode import score_episode

__all__ = ["null_answer", "null_score"]


def null_answer(task, mode: str = "one-shot") -> ActionSequence:
    """What the ``stay`` baseline answers to ``task``: one-shot, ``max(1, task.n_steps)`` Stay steps (no gripper
    state) in the task's unit sizes and cap; closed-loop, the empty sequence (nothing executes)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode == "closed-loop":
        return ActionSequence((), task.sizes, task.gt.cap)
    return ActionSequence(tuple(Step.stay() for _ in range(max(1, task.n_steps))), task.sizes, task.gt.cap)


def null_score(task, mode: str = "one-shot", profile: str = "paper", weights=None) -> float:
    """s0 of ``task``: the episode score (:func:`.episode.score_episode`, ``profile`` ``paper`` | ``paper+rot``,
    ``weights`` (w_t, w_r, w_g)) of :func:`null_answer` against the task's ground truth. Profile ``lmms-eval``
    (one-shot only: it scores answer text) gives lmms-eval's score of the null answer in its words
    (:func:`.lmms_eval.to_lmms_answer`: ``STOP`` per step), what the stay baseline's text scores there."""
    if profile == "lmms-eval":
        if mode != "one-shot":
            raise ValueError("profile lmms-eval scores one-shot answers only; s0 of closed-loop episodes takes "
                             "profile paper or paper+rot")
        from .lmms_eval import score_lmms_eval, to_lmms_answer, to_lmms_extra_info

        kind = "nav" if task.kind == "nav" else "manip"
        r = score_lmms_eval(to_lmms_answer(null_answer(task, mode), kind), to_lmms_extra_info(task, geometry=False),
                            kind)
        return float(r.get("score", 0.0))
    return float(score_episode(null_answer(task, mode), task.gt, task.kind, profile, weights).total)
