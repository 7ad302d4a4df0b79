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


# ----- repeats ----------------------------------------------------------------------------------------------------
def test_repeats_run_every_episode_k_times_with_other_seeds_and_resume_per_repeat(tmp_path):
    tasks = procedural_tasks("manip", 2, seed=5) + procedural_tasks("hand", 1, seed=5)
    out = tmp_path / "run"
    s1, one = _run(out, "random", tasks, _cfg())
    assert (s1.n_new, s1.repeats) == (3, 1) and all(r["repeat"] == 0 for r in one)
    s2, recs = _run(out, "random", tasks, _cfg(), repeats=3)  # two more repeats: the first is not run again
    assert (s2.n_new, s2.n_skipped) == (6, 3)
    by = {(r["task_id"], r["repeat"]): r for r in recs}
    assert sorted(by) == sorted((t.id, k) for t in tasks for k in range(3))
    for t in tasks:
        first = by[t.id, 0]
        assert first == next(r for r in one if r["task_id"] == t.id)  # repeat 0 is the run without repeats
        for k in (1, 2):
            assert by[t.id, k]["key"] == f"{first['key']}|r{k}"
            assert by[t.id, k]["s0"] == first["s0"]  # the same task, the same zero
    # each repeat's agent is seeded episode seed + k: the random answers differ between repeats
    assert any(by[t.id, 1]["pred"] != by[t.id, 0]["pred"] for t in tasks)
    assert AgentSpec("random").build("x", 0, 2).seed == episode_seed(0, "x") + 2
    s3, _ = _run(out, "random", tasks, _cfg(), repeats=3)
    assert (s3.n_new, s3.n_skipped) == (0, 9)
    config = json.loads((out / "config.json").read_text())["config"]
    assert config["repeats"] == 3
    with pytest.raises(ValueError, match="repeats must be a whole number from 1 to 100"):
        _run(out, "random", tasks, _cfg(), repeats=0)


def test_the_spread_between_repeats_by_hand():
    """Per-repeat skill and its sd, and the share of episodes whose score changed, on hand-made records."""
    from spatialact.evaluation.stats import episode_skill, repeat_spread, summary_row

    def rec(task, k, s, s0):
        return {"task_id": task, "repeat": k, "score": s, "s0": s0, "reason": None, "error": None, "kind": "manip",
                "variant": "", "mode": "one-shot", "agent": "a"}

    recs = [rec("a", 0, 0.6, 0.5), rec("b", 0, 0.7, 0.5), rec("a", 1, 0.6, 0.5), rec("b", 1, 0.9, 0.5)]
    # repeat 0: (0.65 - 0.5) / 0.5 = 0.3; repeat 1: (0.75 - 0.5) / 0.5 = 0.5; sd (ddof 1) = 0.1 * sqrt(2)
    spread = repeat_spread(recs)
    assert spread["repeats"] == 2
    assert spread["skill_sd"] == pytest.approx(0.2 / math.sqrt(2), abs=1e-12)
    assert spread["differ"] == 0.5  # b changed, a did not
    # the headline counts each episode once, averaged over its repeats: a 0.6, b 0.8 -> (0.7 - 0.5) / 0.5
    sk = episode_skill(recs, n_boot=200)
    assert sk["n"] == 2 and sk["skill"] == pytest.approx(0.4, abs=1e-12)
    row = summary_row(recs + [dict(rec("c", 0, None, None), reason="api_error", error="boom")])
    assert row["failed"] == 1 and row["skill"] == pytest.approx(0.4) and row["differ"] == 0.5


def test_eval_repeats_prints_the_spread_and_leads_with_skill(tmp_path, capsys):
    from spatialact.cli.main import main
    from spatialact.evaluation.stats import episode_skill, repeat_spread

    out = tmp_path / "run"
    argv = ["eval", "--suite", "manip:2", "--agent", "random", "--repeats", "2", "--size", str(SIZE),
            "--renderer", "tiny", "--out", str(out), "--no-progress"]
    assert main(argv + ["--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    recs = read_records(out)
    assert res["repeats"] == 2 and res["new"] == 4 and len(recs) == 4
    row = res["summary"][0]
    assert list(row)[:5] == ["kind", "episodes", "skill", "skill_lo", "skill_hi"]
    assert row["skill"] == pytest.approx(episode_skill(recs)["skill"], abs=1e-12)
    assert row["skill_lo"] <= row["skill"] <= row["skill_hi"]
    spread = repeat_spread(recs)
    assert row["skill_sd"] == pytest.approx(spread["skill_sd"]) and row["differ"] == spread["differ"]
    assert 0.0 <= row["parse_ok"] <= 1.0 and row["episodes"] == 4
    assert main(argv) == 0  # resumed: the printed table
    text = capsys.readouterr().out
    header = next(line for line in text.splitlines() if line.startswith("kind"))
    assert header.split()[:4] == ["kind", "episodes", "skill", "[95%"] and "skill sd" in header
    assert "SPL" not in header  # one-shot: success and SPL are for closed-loop runs
    assert main(argv[:-1] + ["--mode", "closed-loop", "--out", str(tmp_path / "cl"), "--no-progress"]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("kind"))
    assert header.split().index("score") < header.split().index("success") < header.split().index("SPL")


# ----- walls ------------------------------------------------------------------------------------------------------
def _wall_tasks():
    """Two hand-made room tasks from the middle of room 0, facing the +x wall: 'clear' (Dolly In ×2, 12.5 cm) and
    'through' (6 × Dolly In ×10, 3.75 m: its ground truth goes through the wall)."""
    from spatialact.action_space import ActionSequence, StepSizes
    from spatialact.envs.camera import look_at
    from spatialact.tasks import Task

    eye = np.array([0.0, 0.0, 2.4])
    start = look_at(eye, eye + np.array([1.0, 0.0, 0.0]))
    out = []
    for tid, counts in (("clear", [(0, 0, 2, 0, 0, 0)]), ("through", [(0, 0, 10, 0, 0, 0)] * 6)):
        sizes = StepSizes.for_kind("nav")
        gt = ActionSequence.from_signed_counts(counts, sizes)
        out.append(Task(id=tid, kind="nav", source="procedural", start_pose=start, goal_pose=gt.to_poses(start)[-1],
                        gt=gt, sizes=sizes, scene={"generator": "room", "seed": 0}))
    return out


def test_walls_stop_the_camera_unless_no_collisions_and_a_changed_setting_is_refused(tmp_path, capsys):
    """With walls (the default) the task through the wall is flagged before the run in one line, scores 1 one-shot
    (the answer is the ground truth) but ends short of its goal (blocked steps, no success); --no-collisions runs it
    to the goal, is recorded in the configuration, and a resume with the other setting is refused."""
    from spatialact.cli.main import main
    from spatialact.tasks import save_tasks

    tf = tmp_path / "walls.jsonl"
    save_tasks(_wall_tasks(), tf)
    base = ["eval", "--tasks", str(tf), "--agent", "oracle", "--size", str(SIZE), "--renderer", "tiny",
            "--no-progress"]
    walls, free = tmp_path / "walls", tmp_path / "free"
    assert main(base + ["--out", str(walls)]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(err) == 1 and "1 of 2 free-camera tasks" in err[0] and "'through'" in err[0]
    assert "--no-collisions" in err[0] and "'clear'" not in err[0]
    assert main(base + ["--no-collisions", "--out", str(free)]) == 0
    assert "warning" not in capsys.readouterr().err
    w = {r["task_id"]: r for r in read_records(walls)}
    f = {r["task_id"]: r for r in read_records(free)}
    assert w["through"]["score"] == f["through"]["score"] == 1.0
    assert any(w["through"]["blocked"]) and w["through"]["success"] is False and w["through"]["spl"] == 0.0
    assert not any(w["clear"]["blocked"]) and w["clear"]["success"] is True
    assert "blocked" not in f["through"] and f["through"]["success"] is True
    assert json.loads((walls / "config.json").read_text())["config"]["collisions"] is True
    assert json.loads((free / "config.json").read_text())["config"]["collisions"] is False
    assert main(base + ["--out", str(free)]) == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and "without walls" in line and "resume with --no-collisions" in line
    assert main(base + ["--no-collisions", "--out", str(walls)]) == 2
    assert "resume without --no-collisions" in capsys.readouterr().err


def test_a_run_made_before_walls_resumes_only_without_them(tmp_path):
    """An episode run's configuration without 'collisions' was made before walls stopped the camera."""
    tasks = _wall_tasks()[:1]
    out = tmp_path / "old"
    _run(out, "oracle", tasks, _cfg(collisions=False))
    stored = json.loads((out / "config.json").read_text())
    del stored["config"]["collisions"]
    (out / "config.json").write_text(json.dumps(stored))
    from spatialact.evaluation.results import RunConfigError

    with pytest.raises(RunConfigError, match="before walls stopped the camera"):
        _run(out, "oracle", tasks, _cfg())
    s, _ = _run(out, "oracle", tasks, _cfg(collisions=False))
    assert (s.n_new, s.n_skipped) == (0, 1)


# ----- pinned images ----------------------------------------------------------------------------------------------
def test_array_sha256_hashes_the_pixels_in_row_major_order():
    import hashlib

    from spatialact.image_files import array_sha256

    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    assert array_sha256(rgb) == hashlib.sha256(bytes(range(18))).hexdigest()
    flipped = rgb[:, ::-1]  # a view that is not contiguous: hashed as its row-major copy
    assert array_sha256(flipped) == hashlib.sha256(np.ascontiguousarray(flipped).tobytes()).hexdigest()


def test_episodes_compare_their_images_with_the_hashes_a_task_pins(tmp_path, capsys):
    """meta.image_sha256 of task 0 is what it renders at 64 px (tiny); task 1 pins a wrong goal hash; task 2 pins
    nothing. images_match True / False / absent; the summary counts the one that differs; at 32 px both differ."""
    from dataclasses import replace

    from spatialact.cli.main import main
    from spatialact.evaluation.episode import run_episode
    from spatialact.image_files import array_sha256
    from spatialact.tasks import save_tasks

    tasks = procedural_tasks("nav", 3, seed=9)
    pinned = []
    for i, t in enumerate(tasks):
        if i < 2:
            _, frames = run_episode(t, AgentSpec("stay").build(t.id, 0), _cfg())
            h = {"start": array_sha256(frames.start), "goal": array_sha256(frames.goal)}
            if i == 1:
                h["goal"] = "0" * 64
            t = replace(t, meta=dict(t.meta or {}, image_sha256=h))
        pinned.append(t)
    tf = tmp_path / "pinned.jsonl"
    save_tasks(pinned, tf)
    argv = ["eval", "--tasks", str(tf), "--agent", "stay", "--renderer", "tiny", "--no-progress"]
    assert main(argv + ["--size", str(SIZE), "--out", str(tmp_path / "a"), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert (res["images_checked"], res["images_differ"]) == (2, 1)
    by = {r["task_id"]: r for r in read_records(tmp_path / "a")}
    assert by[tasks[0].id]["images_match"] is True and by[tasks[1].id]["images_match"] is False
    assert "images_match" not in by[tasks[2].id]
    assert main(argv + ["--size", "32", "--out", str(tmp_path / "b")]) == 0
    assert "images: 0 of 2 episodes saw the suite's pinned start and goal images; 2 differ" in capsys.readouterr().out


# ----- a frozen suite ---------------------------------------------------------------------------------------------
def test_a_frozen_suite_sets_its_pins_records_its_hash_and_checks_its_images(tmp_path, capsys):
    """--suite l4-v1-lite/nav: the pins are the defaults (384 px, tiny, default quality, paper), the configuration
    and every record's provenance carry the suite and its SHA-256, and the rendered images are the pinned ones;
    --size 64 is allowed, recorded as suite_pins_differ, warned about, and its images differ."""
    from spatialact.cli.main import main
    from spatialact.taskgen import suite_info

    spec = "l4-v1-lite/nav"
    info = suite_info(spec)
    argv = ["eval", "--suite", spec, "--agent", "stay", "--limit", "1", "--no-progress", "--json"]
    assert main(argv + ["--out", str(tmp_path / "pinned")]) == 0
    captured = capsys.readouterr()
    res = json.loads(captured.out)
    config = json.loads((tmp_path / "pinned" / "config.json").read_text())["config"]
    pins = info["pins"]
    assert (config["suite"], config["suite_sha256"]) == (spec, info["sha256"])
    assert (config["width"], config["renderer"], config["profile"]) == (pins["image_size"], pins["renderer"],
                                                                      pins["profile"])
    assert "suite_pins_differ" not in config and res["notes"] == [] and "warning" not in captured.err
    (rec,) = read_records(tmp_path / "pinned")
    assert rec["provenance"]["suite"] == spec and rec["provenance"]["suite_sha256"] == info["sha256"]
    assert rec["images_match"] is True and (res["images_checked"], res["images_differ"]) == (1, 0)

    assert main(argv + ["--size", str(SIZE), "--out", str(tmp_path / "small")]) == 0
    captured = capsys.readouterr()
    res = json.loads(captured.out)
    config = json.loads((tmp_path / "small" / "config.json").read_text())["config"]
    assert config["suite_pins_differ"] == {"image_size": [pins["image_size"], SIZE]} and config["width"] == SIZE
    assert "not comparable with l4-v1-lite results" in captured.err and len(res["notes"]) == 1
    assert res["images_differ"] == 1

    # a procedural suite has no suite in its provenance, and no suite keys in its configuration
    _, recs = _run(tmp_path / "proc", "stay", procedural_tasks("nav", 1, seed=0), _cfg())
    assert recs[0]["provenance"]["suite"] is None and recs[0]["provenance"]["suite_sha256"] is None
    assert "suite" not in json.loads((tmp_path / "proc" / "config.json").read_text())["config"]


def test_the_demo_table_leads_with_skill(tmp_path, capsys):
    """The oracle's skill is exactly 1 and the stay baseline's exactly 0 (its answer is s0's), whatever the raw
    scores (stay's is well above 0 on manipulation and hand tasks)."""
    from spatialact.cli.main import main

    argv = ["demo", "--agents", "oracle,stay", "--no-diagnostics", "--out", str(tmp_path / "demo"), "--no-progress"]
    assert main(argv + ["--json"]) == 0
    table = {r["agent"]: r for r in json.loads(capsys.readouterr().out)["table"]}
    assert list(table["oracle"])[:5] == ["agent", "episodes", "skill", "skill_lo", "skill_hi"]
    assert table["oracle"]["skill"] == 1.0 and table["stay"]["skill"] == pytest.approx(0.0, abs=1e-12)
    assert table["stay"]["score"] > 0.2 and table["stay"]["parse_ok"] == 1.0
    assert table["stay"]["skill_manip"] == pytest.approx(0.0, abs=1e-12) and table["stay"]["manip"] > 0.3
    assert main(argv) == 0  # resumed: the printed table
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("agent"))
    assert header.split()[:5] == ["agent", "episodes", "skill", "[95%", "CI]"] and "parse ok" in header
