"""Game tasks end to end on real Freedoom levels (no fabricated level): a recorded walk → `spatialact tasks
from-trajectory` (nav tasks, source game, the level as scene, recorded frames for one-shot) → `spatialact eval`
closed-loop in the game (the oracle succeeds, random and stay do not) and one-shot (with --flip); closed-loop --flip
refused in one line; pairs the game does not execute (a straight line through a wall) or cannot start (a pose above the
ceiling) skipped and counted; the built-in `game` suite: shipped, small, reproducible, and run by the oracle in the
game.

Known answers: the WAD's own line segments (the wall between two rooms of MAP01) and the game itself."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

pytest.importorskip("vizdoom")
pytest.importorskip("pybullet")

from spatialact import geometry  # noqa: E402
from spatialact.action_space import ActionSequence, StepSizes  # noqa: E402
from spatialact.cli.main import main  # noqa: E402
from spatialact.envs.doom.engine import level_rotation  # noqa: E402
from spatialact.envs.doom.record import record_level  # noqa: E402
from spatialact.envs.doom.wad import map_lines, resolve_wad, wad_sha256  # noqa: E402
from spatialact.evaluation.results import read_records  # noqa: E402
from spatialact.taskgen.game_scenes import NOT_EXECUTED, UNREACHABLE, attach_game_scenes  # noqa: E402
from spatialact.taskgen.game_suite import SUITE_MAPS, build_game_suite, game_suite_tasks, suite_path  # noqa: E402
from spatialact.taskgen.suites import builtin_suite, is_suite  # noqa: E402
from spatialact.tasks import Task, load_tasks  # noqa: E402
from spatialact.trajectories.trajectory import Trajectory  # noqa: E402

SIZES = StepSizes.navigation()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A 12-second walk of freedoom2 MAP01 and the tasks built from it by the CLI."""
    d = tmp_path_factory.mktemp("game_tasks")
    record_level(d / "walk", map="MAP01", seconds=12, seed=3, resolution=(160, 120))
    out = d / "tasks.jsonl"
    assert main(["tasks", "from-trajectory", str(d / "walk"), "--n", "6", "--out", str(out), "--json"]) == 0
    return d, out


def _eval(args, out, capsys):
    code = main(["eval", *args, "--out", str(out), "--no-progress", "--json"])
    captured = capsys.readouterr()
    return code, (read_records(out) if code == 0 else captured.err)


def test_game_recording_gives_nav_tasks_in_its_level_with_recorded_frames(built):
    d, out = built
    tasks = load_tasks(out)
    assert 3 <= len(tasks) <= 6
    sha = wad_sha256(resolve_wad("freedoom2.wad"))
    for t in tasks:
        assert t.kind == "nav" and t.source == "game" and t.tags["map"] == "MAP01"
        s = t.scene
        assert s["type"] == "game" and s["wad"] == "freedoom2.wad" and s["map"] == "MAP01" and s["wad_sha256"] == sha
        # the start in the game's units is the task's start pose (1 map unit = 1/32 m)
        assert np.allclose(np.asarray(s["start"]["position"]) / 32.0, t.start_pose[:3, 3], atol=1e-4)
        assert s["trajectory"] == str((d / "walk").resolve()) and s["keyframes"] == t.meta["keyframes"]
        assert t.start_image and t.goal_image  # the recorded frames, for one-shot
        assert not any(isinstance(v, list) and len(v) > 64 for v in s.values())  # a reference, never arrays
    assert json.loads(out.read_text().splitlines()[0])["scene"]["trajectory"] == "walk"  # relative to the file


def test_observation_recorded_shows_the_recording_of_a_game_task(built):
    from spatialact.envs import make_env
    from spatialact.trajectories import load_trajectory

    d, out = built
    task = load_tasks(out)[0]
    traj = load_trajectory(task.scene["trajectory"], "game")
    i, j = task.scene["keyframes"][0], task.scene["keyframes"][-1]
    env = make_env("nav", task=task, observation="both", width=160, height=120, wrap=False)
    try:
        obs, info = env.reset(options={"task": task})
        assert env.world.recording is not None and env.world.recording.goal_frame == j
        assert info["recorded_frame"] == i and info["recorded_distance"] < 0.05  # the start: a recorded pose, ±1 cm
        assert np.array_equal(obs["recorded_rgb"], traj.frame(i))  # the recorded frame (160×120, as recorded)
        assert np.abs(obs["rgb"].astype(float) - obs["recorded_rgb"].astype(float)).mean() < 8.0  # the same view
        for step in task.gt.steps:
            obs, info = env.apply_step(step)
        assert info["success"] and abs(info["recorded_frame"] - j) <= 2  # ends near the recorded goal frame
    finally:
        env.close()
    env = make_env("nav", task=task, observation="recorded", width=160, height=120, wrap=False)
    try:
        obs, _ = env.reset(options={"task": task})
        assert np.array_equal(obs["goal_rgb"], traj.frame(j))  # the goal is the recorded goal frame
    finally:
        env.close()


def test_oracle_succeeds_closed_loop_in_the_game_random_and_stay_do_not(built, tmp_path, capsys):
    _, out = built
    rates = {}
    for agent in ("oracle", "random", "stay"):
        code, records = _eval(["--tasks", str(out), "--mode", "closed-loop", "--agent", agent], tmp_path / agent,
                              capsys)
        assert code == 0
        assert all(r["simulated"] and r["gl_renderer"].startswith("ViZDoom") for r in records)
        rates[agent] = np.mean([r["success"] for r in records])
    assert rates["oracle"] >= 0.95 and rates["random"] < rates["oracle"] and rates["stay"] < rates["oracle"]


def test_one_shot_shows_recorded_frames_and_flip_works_one_shot_only(built, tmp_path, capsys):
    _, out = built
    code, records = _eval(["--tasks", str(out), "--mode", "one-shot", "--agent", "oracle", "--flip"],
                          tmp_path / "flip", capsys)
    assert code == 0 and {r["variant"] for r in records} == {"", "mirror"}
    assert all(r["success"] and r["score"] == pytest.approx(1.0) and r["simulated"] for r in records)
    # one-shot shows the recorded frames: the run's stored start and goal views are the task's PNGs (the mirrored
    # episode stores them too: its agent sees them flipped)
    from PIL import Image

    tasks = {t.id: t for t in load_tasks(out)}
    for r in records:
        t = tasks[r["task_id"]]
        for name, recorded in (("start", t.start_image), ("goal", t.goal_image)):
            shown = np.asarray(Image.open(tmp_path / "flip" / r["frames"][name]).convert("RGB"))
            want = np.asarray(Image.open(recorded).convert("RGB"))
            assert np.array_equal(shown, want), (r["key"], name)
    code, err = _eval(["--tasks", str(out), "--mode", "closed-loop", "--agent", "oracle", "--flip"],
                      tmp_path / "flip_cl", capsys)
    assert code == 2 and "the mirrored level does not exist" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "flip_cl").exists()  # refused before the run


def test_pairs_the_game_cannot_run_are_skipped_and_counted():
    # MAP01: the start room's south wall (y = -288, from the WAD) stands between y = -256 and y = -320, both open
    seg, one_sided, _ = map_lines(resolve_wad(None), "MAP01")
    walls = [s for s, o in zip(seg, one_sided)
             if o and s[1] == s[3] == -288 and min(s[0], s[2]) <= -192 <= max(s[0], s[2])]
    assert walls
    south = level_rotation(math.radians(-90.0))

    def task(tid, xy, counts, eye=41.0):
        start = geometry.make_pose(south, np.array([xy[0], xy[1], eye]) / 32.0)
        gt = ActionSequence.from_signed_counts(np.atleast_2d(counts), SIZES, cap=10)
        return Task(id=tid, kind="nav", source="game", start_pose=start, goal_pose=gt.to_poses(start)[-1], gt=gt,
                    sizes=SIZES, meta={"keyframes": [0, 1]})

    tasks = [task("through-the-wall", (-192, -256), [[0, 0, 10, 0, 0, 0]] * 3 + [[0, 0, 2, 0, 0, 0]]),  # 2 m south
             task("above-the-ceiling", (-192, -160), [0, 0, 8, 0, 0, 0], eye=41.0 + 400),  # 12.5 m up
             task("open", (-192, -160), [[0, 0, 10, 0, 0, 0], [0, 0, 6, 0, 4, 0]])]  # north of it: 1 m, free
    traj = Trajectory(np.stack([t.start_pose for t in tasks[:2]]), np.array([0.0, 1 / 35]), 35.0,
                      meta={"source": "game", "wad": "freedoom2.wad", "map": "MAP01", "path": "walk",
                            "wad_sha256": wad_sha256(resolve_wad("freedoom2.wad"))})
    kept, skipped = attach_game_scenes(tasks, traj)
    assert [t.id for t in kept] == ["open"] and kept[0].scene["keyframes"] == [0, 1]
    assert skipped == {NOT_EXECUTED: 1, UNREACHABLE: 1}


def test_the_game_suite_is_shipped_small_and_runs_in_the_game(tmp_path, capsys):
    path = suite_path()
    assert path.is_file() and path.stat().st_size < 200_000  # no images inside
    tasks = builtin_suite("game")
    assert is_suite("game") and is_suite("game:2") and len(tasks) == 30
    assert sorted({t.scene["map"] for t in tasks}) == list(SUITE_MAPS)
    assert all(t.source == "game" and t.start_image is None and "trajectory" not in t.scene for t in tasks)
    assert len({t.id for t in tasks}) == 30 and all(t.id.startswith("game-v1-") for t in tasks)
    assert [t.id for t in builtin_suite("game", seed=5)] == [t.id for t in tasks]  # fixed: the seed changes nothing
    two = builtin_suite("game:2")
    assert len(two) == 6 and [t.id for t in two] == [t.id for t in game_suite_tasks(2)]
    for mode in ("closed-loop", "one-shot"):
        code, records = _eval(["--suite", "game:2", "--mode", mode, "--agent", "oracle"], tmp_path / mode, capsys)
        assert code == 0 and len(records) == 6
        assert all(r["success"] and r["simulated"] and r["gl_renderer"].startswith("ViZDoom") for r in records)
        assert sorted({r["tags"]["map"] for r in records}) == list(SUITE_MAPS)


@pytest.mark.slow
def test_the_shipped_suite_is_reproduced_by_its_builder():
    tasks, _ = build_game_suite(maps=("MAP01",), per_map=3)
    shipped = [t for t in game_suite_tasks() if t.scene["map"] == "MAP01"][:3]
    assert [t.to_dict() for t in tasks] == [t.to_dict() for t in shipped]
