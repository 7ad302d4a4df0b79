"""spatialact as a benchmark that ranks models: repeats and their spread, walls on or off, a frozen suite's pins and
image hashes, SPL that agrees with success, and summaries that lead with skill. Real procedural tasks, small images
(64 px, the tiny renderer), few episodes."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

pytest.importorskip("pybullet")
pytest.importorskip("gymnasium")

from spatialact.evaluation.episode import EpisodeConfig, episode_seed  # noqa: E402
from spatialact.evaluation.results import read_records  # noqa: E402
from spatialact.evaluation.runner import AgentSpec, run_eval  # noqa: E402
from spatialact.taskgen import procedural_tasks  # noqa: E402

SIZE = 64


def _cfg(**kw) -> EpisodeConfig:
    return EpisodeConfig(width=SIZE, height=SIZE, renderer="tiny", **kw)


def _run(out, agent, tasks, cfg, **kw):
    spec = agent if isinstance(agent, AgentSpec) else AgentSpec(agent)
    summary = run_eval(tasks, spec, cfg, out, task_source="suite:test", progress=False, **kw)
    return summary, read_records(out)


# ----- SPL agrees with success ----------------------------------------------------------------------------------
def test_spl_is_zero_when_the_simulator_says_the_object_was_not_placed(tmp_path):
    """Pick and place with every gripper command flipped: the hand ends on the goal pose (within the thresholds),
    but the object was never picked, so the episode failed — and its SPL is 0 (it was d0/path before)."""
    tasks = procedural_tasks("manip", 2, seed=0, variant="pick_place")
    _, flipped = _run(tmp_path / "flip", AgentSpec("noisy-oracle", {"noise": 0, "grip_flip": 1.0}), tasks, _cfg())
    _, oracle = _run(tmp_path / "oracle", "oracle", tasks, _cfg())
    for r, o in zip(flipped, oracle):
        thr = {t.id: t.success for t in tasks}[r["task_id"]]
        assert r["final_position_error"] <= thr["position"] and r["final_rotation_error"] <= thr["rotation"]
        assert r["success"] is False and r["spl"] == 0.0, (r["task_id"], r["success"], r["spl"])
        assert o["success"] is True and o["spl"] > 0.0
