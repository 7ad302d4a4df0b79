"""The project's shared vocabularies, each defined once: task kinds, run modes, simulators, episode variants,
difficulty levels, answer formats, step-score profiles, agent error kinds and the baseline agents; and the limits
that commands on different floors share (:data:`MAX_WORKERS`, :data:`MAX_N_BOOT`), declared here so that the command
line builds its parser from them without importing numpy.

This module imports nothing from spatialact, so every layer (tasks, scorers, envs, agents, evaluation, the CLI) can
import from it; they are imported from here only (no other module re-exports them). The shipped JSON Schemas
spell the same values out, and tests check that they agree.
"""

from __future__ import annotations

__all__ = ["KINDS", "MODES", "ENVS", "RUN_BACKENDS", "VARIANTS", "LEVELS", "ANSWER_FORMATS", "PROFILES",
           "ERROR_KINDS", "BASELINE_AGENTS", "MAX_WORKERS", "MAX_N_BOOT"]

#: Task kinds: camera navigation in a room, a gripper arm on a tabletop, a floating hand.
KINDS = ("nav", "manip", "hand")
#: How an episode runs: ``one-shot`` (the paper's: one answer of a whole sequence) or ``closed-loop`` (observe, act
#: one step, repeat).
MODES = ("one-shot", "closed-loop")
#: The simulators an episode can run in (``EpisodeConfig.env``, ``spatialact eval --env``); ``none`` scores one-shot
#: answers without simulating.
ENVS = ("pybullet", "habitat", "none")
#: Where a run's episodes execute (``spatialact eval --backend``): this machine's processes, or Ray tasks.
RUN_BACKENDS = ("local", "ray")
#: Episode variants (``EpisodeConfig.variant``): ``""`` is the task as it is, ``"mirror"`` its left-right mirror
#: (FlipEval); ``spatialact eval --flip`` runs both.
VARIANTS = ("", "mirror")
#: Difficulty levels of the procedural ladder (the ``level`` tag), easiest first.
LEVELS = ("L1", "L2", "L3", "L4", "L5")
#: How a task asks for its answer: names and counts in one list (``flat``), per step (``stepped``), or a motion
#: vector per step (``vector``).
ANSWER_FORMATS = ("flat", "stepped", "vector")
#: Step-score profiles of an episode (``paper+rot`` adds the rotation term to navigation steps).
PROFILES = ("paper", "paper+rot")
#: Why an agent's call failed (``AgentTurn.error_kind``; a record's ``error_kind`` of an ``api_error``).
ERROR_KINDS = ("connection", "timeout", "http", "malformed")
#: The baseline agents (no model, no API key): what ``spatialact demo`` runs, in its table's order.
BASELINE_AGENTS = ("oracle", "noisy-oracle", "geometric", "random", "stay", "constant")

#: The most worker processes a command may ask for: ``eval --workers`` (``run_eval``'s ``workers``; each runs a
#: simulator, about 0.2-0.5 GB of memory) and ``score --workers`` (``score_file``'s ``workers``, which starts no
#: more than there are pieces of work). More is refused in one line.
MAX_WORKERS = 64
#: The most bootstrap resamples ``score --n-boot`` (``score_file``'s ``n_boot``; the default is 1000) takes.
MAX_N_BOOT = 100_000
