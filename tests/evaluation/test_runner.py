"""The evaluation runner end to end: real PyBullet scenes, real baseline agents, real run directories."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pybullet")
pytest.importorskip("gymnasium")

from spatialact.evaluation.episode import EpisodeConfig, episode_seed  # noqa: E402
from spatialact.evaluation.results import read_records  # noqa: E402
from spatialact.evaluation.runner import AgentSpec, run_eval  # noqa: E402
from spatialact.taskgen.suites import builtin_suite  # noqa: E402

SIZE = 64


def _cfg(**kw) -> EpisodeConfig:
    return EpisodeConfig(width=SIZE, height=SIZE, **kw)


@pytest.fixture(scope="module")
def suite():
    return builtin_suite("default", seed=0)


def _run(tmp_path, name, tasks, cfg, **kw):
    out = tmp_path / f"{name}-{cfg.mode}"
    run_eval(tasks, AgentSpec(name), cfg, out, task_source="suite:test", progress=False, **kw)
    return {r["task_id"]: r for r in read_records(out)}


def test_suite_is_deterministic_and_covers_all_kinds(suite):
    again = builtin_suite("default", seed=0)
    assert [t.to_dict() for t in suite] == [t.to_dict() for t in again]
    assert {t.kind for t in suite} == {"nav", "manip", "hand"}
    other = builtin_suite("default", seed=1)
    assert [t.to_dict() for t in other] != [t.to_dict() for t in suite]


def test_episode_seed_depends_only_on_seed_and_task():
    assert episode_seed(0, "a") == episode_seed(0, "a")
    assert episode_seed(0, "a") != episode_seed(0, "b")
    assert episode_seed(1, "a") != episode_seed(0, "a")


def test_oracle_one_shot_scores_one_everywhere_and_succeeds(tmp_path, suite):
    recs = _run(tmp_path, "oracle", suite, _cfg())
    assert set(recs) == {t.id for t in suite}
    for r in recs.values():
        assert r["error"] is None, r["error"]
        assert r["score"] == 1.0
        assert r["ok"] is True and r["reason"] is None
        for step in r["per_step"]:
            for k in ("s_step", "s_rot"):
                assert step[k] == 1.0, (r["task_id"], step)
            if r["kind"] != "nav":
                assert step["s_grip"] == 1.0
        assert r["success"] is True, (r["task_id"], r["final_position_error"], r["final_rotation_error"])
        # The oracle walks the ground-truth path, so its SPL is the ground truth's own: d0 / max(d0, path).
        gt = np.asarray(r["gt_poses"])
        gt_path = float(np.linalg.norm(np.diff(gt[:, :3, 3], axis=0), axis=1).sum())
        # (The free camera lands exactly on each pose; the Franka's IK only within its tolerance.)
        tol = 1e-6 if r["kind"] == "nav" else 0.02
        assert r["spl"] == pytest.approx(r["d0"] / max(r["d0"], gt_path), abs=tol)
        # Frames were stored inside the run directory and are real images.
        for name in ("start", "goal", "final"):
            p = tmp_path / "oracle-one-shot" / r["frames"][name]
            assert p.is_file() and p.resolve().is_relative_to((tmp_path / "oracle-one-shot").resolve())


def test_oracle_closed_loop_reaches_the_goal(tmp_path, suite):
    recs = _run(tmp_path, "oracle", [t for t in suite if t.kind == "nav"], _cfg(mode="closed-loop"))
    for r in recs.values():
        assert r["error"] is None, r["error"]
        assert r["success"] is True
        assert r["final_position_error"] <= 0.2


def test_baselines_rank_below_the_oracle(tmp_path, suite):
    means = {}
    for name in ("oracle", "random", "stay"):
        recs = _run(tmp_path, name, suite, _cfg())
        means[name] = float(np.mean([r["score"] for r in recs.values()]))
    assert means["oracle"] == 1.0
    assert means["random"] < 0.5 and means["stay"] < 0.5


def test_geometric_lands_between_random_and_oracle_on_navigation(tmp_path):
    tasks = builtin_suite("nav:8", seed=0)
    means = {}
    for name in ("geometric", "random"):
        recs = _run(tmp_path, name, tasks, EpisodeConfig(width=128, height=128))
        assert all(r["error"] is None for r in recs.values())
        means[name] = float(np.mean([r["score"] for r in recs.values()]))
    assert means["random"] < means["geometric"] < 1.0


def test_rerun_skips_finished_episodes_and_changed_config_is_refused(tmp_path, suite):
    tasks = suite[:3]
    out = tmp_path / "run"
    s1 = run_eval(tasks, AgentSpec("random"), _cfg(), out, task_source="suite:test", progress=False, limit=2)
    assert (s1.n_new, s1.n_skipped) == (2, 0)
    s2 = run_eval(tasks, AgentSpec("random"), _cfg(), out, task_source="suite:test", progress=False)
    assert (s2.n_new, s2.n_skipped) == (1, 2)
    assert len(read_records(out)) == 3
    with pytest.raises(ValueError, match="profile"):
        run_eval(tasks, AgentSpec("random"), _cfg(profile="paper+rot"), out, task_source="suite:test",
                 progress=False)


def test_process_pool_gives_the_same_records_as_one_process(tmp_path):
    tasks = builtin_suite("nav:3", seed=2)
    one = _run(tmp_path / "a", "noisy-oracle", tasks, _cfg())
    two = _run(tmp_path / "b", "noisy-oracle", tasks, _cfg(), workers=2)
    assert one.keys() == two.keys()
    for k in one:
        assert one[k]["pred"] == two[k]["pred"]
        assert one[k]["score"] == two[k]["score"]
        assert one[k]["pred_poses"] == two[k]["pred_poses"]


def test_ray_backend_gives_the_same_scores_as_the_local_runner(tmp_path):
    pytest.importorskip("ray")
    tasks = builtin_suite("nav:2", seed=3)
    local = _run(tmp_path / "local", "noisy-oracle", tasks, _cfg())
    ray_ = _run(tmp_path / "ray", "noisy-oracle", tasks, _cfg(), backend="ray", workers=2)
    assert local.keys() == ray_.keys()
    for k in local:
        assert ray_[k]["score"] == local[k]["score"]
        assert ray_[k]["pred"] == local[k]["pred"]
        assert np.allclose(ray_[k]["pred_poses"], local[k]["pred_poses"], atol=1e-12)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_killed_evaluation_resumes_without_redoing_or_losing_episodes(tmp_path):
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "spatialact.cli.main", "eval", "--suite", "nav:10", "--agent", "noisy-oracle",
           "--size", str(SIZE), "--out", str(out), "--no-progress"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parents[2] / "src"),
                                                       os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    results = out / "results.jsonl"
    deadline = time.time() + 240
    while time.time() < deadline and len(_lines(results)) < 3 and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _lines(results)
    assert 3 <= len(before) < 10, f"kill came too late or too early: {len(before)} lines"
    first = [json.loads(x) for x in before if x.strip().endswith("}")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    after = [json.loads(x) for x in _lines(results)]
    keys = [r["key"] for r in after]
    assert len(keys) == 10 and len(set(keys)) == 10  # every episode exactly once
    # Nothing finished was redone: the first run's complete records are still there, unchanged.
    by_key = {r["key"]: r for r in after}
    for r in first:
        assert by_key[r["key"]] == r
