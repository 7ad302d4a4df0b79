"""Game tasks from two real Freedoom maps, closed-loop through the CLI, and what the records and reports say of them.

Walks of freedoom2 MAP01 and MAP02 → `spatialact tasks from-trajectory` → `spatialact eval --mode closed-loop`: the
oracle succeeds in at least 95% of the episodes (every one simulated in the game), random and stay less. Records carry
``blocked``, one flag per executed step; `spatialact report` gives results per map and the blocked-step rate, checked
against a recount from the records. Known answer for the flags: the WAD's own south wall of MAP01's start room (a
dolly into it is blocked at every step, ending 16 units, the player's radius, in front of it) and 1 m of open floor
before it (nothing blocked)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("vizdoom")
pytest.importorskip("pybullet")

from spatialact import geometry  # noqa: E402
from spatialact.action_space import ActionSequence, StepSizes  # noqa: E402
from spatialact.cli.main import main  # noqa: E402
from spatialact.envs.doom.engine import level_rotation  # noqa: E402
from spatialact.envs.doom.record import record_level  # noqa: E402
from spatialact.envs.doom.wad import map_lines, resolve_wad  # noqa: E402
from spatialact.envs.game_world import game_scene  # noqa: E402
from spatialact.evaluation.results import read_records  # noqa: E402
from spatialact.records import validate_result  # noqa: E402
from spatialact.tasks import Task, load_tasks, save_tasks  # noqa: E402

SIZES = StepSizes.navigation()
MAPS = {"MAP01": 3, "MAP02": 1}  # map: explorer seed


@pytest.fixture(scope="module")
def two_maps(tmp_path_factory):
    """12-second walks of two maps, their tasks built by the CLI and put in one file, and the closed-loop runs of the
    oracle, random and stay on it."""
    d = tmp_path_factory.mktemp("game_two_maps")
    lines = []
    for m, seed in MAPS.items():
        record_level(d / m.lower(), map=m, seconds=12, seed=seed, resolution=(160, 120))
        out = d / f"{m.lower()}.jsonl"
        assert main(["tasks", "from-trajectory", str(d / m.lower()), "--n", "6", "--out", str(out), "--json"]) == 0
        lines += out.read_text().splitlines()
    both = d / "both.jsonl"  # the trajectories are named relative to the file: same folder
    both.write_text("\n".join(lines) + "\n")
    runs = {}
    for agent in ("oracle", "random", "stay"):
        runs[agent] = d / "runs" / agent
        assert main(["eval", "--tasks", str(both), "--mode", "closed-loop", "--agent", agent, "--out",
                     str(runs[agent]), "--no-progress", "--json"]) == 0
    return d, both, runs


def test_the_oracle_succeeds_closed_loop_on_two_maps_random_and_stay_less(two_maps):
    _, both, runs = two_maps
    tasks = load_tasks(both)
    assert {t.tags["map"] for t in tasks} == set(MAPS) and len(tasks) >= 8
    rate = {}
    for agent, run in runs.items():
        records = read_records(run)
        assert len(records) == len(tasks)
        assert all(r["simulated"] and r["gl_renderer"].startswith("ViZDoom") for r in records)
        rate[agent] = {m: np.mean([r["success"] for r in records if r["tags"]["map"] == m]) for m in MAPS}
        rate[agent]["all"] = np.mean([r["success"] for r in records])
    assert rate["oracle"]["all"] >= 0.95 and all(rate["oracle"][m] >= 0.8 for m in MAPS)
    assert rate["random"]["all"] < rate["oracle"]["all"] and rate["stay"]["all"] < rate["oracle"]["all"]


def test_records_carry_a_blocked_flag_per_executed_step(two_maps):
    _, _, runs = two_maps
    for run in runs.values():
        for r in read_records(run):
            assert validate_result(r) == []
            assert isinstance(r["blocked"], list) and len(r["blocked"]) == r["n_executed"]
            assert all(isinstance(b, bool) for b in r["blocked"])
    stay = read_records(runs["stay"])
    assert all(r["blocked"] == [] for r in stay)  # stay executes nothing
    assert validate_result(dict(stay[0], blocked=["yes"])) != []  # the schema checks the flags


def _recount(records):
    out = {}
    for r in records:
        s = out.setdefault(r["tags"]["map"], {"n": 0, "ok": 0, "blocked": 0, "steps": 0})
        s["n"] += 1
        s["ok"] += int(r["success"])
        s["blocked"] += sum(r["blocked"])
        s["steps"] += len(r["blocked"])
    return out


def test_the_report_gives_results_per_map_and_the_blocked_step_rate(two_maps, capsys):
    d, _, runs = two_maps
    capsys.readouterr()
    assert main(["report", *map(str, runs.values()), "--out", str(d / "report_json"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    summary = summary if isinstance(summary, list) else summary["runs"]
    assert len(summary) == 3
    for item, (agent, run) in zip(summary, runs.items()):
        want = _recount(read_records(run))
        game = item["game"]
        assert set(game) == set(MAPS) | {"all maps"}
        for m, s in want.items():
            g = game[m]
            assert (g["episodes"], g["n_success"], g["blocked_steps"], g["executed_steps"]) == \
                (s["n"], s["ok"], s["blocked"], s["steps"]), (agent, m)
            assert g["success"] == pytest.approx(s["ok"] / s["n"])
            assert g["blocked_rate"] == (pytest.approx(s["blocked"] / s["steps"]) if s["steps"] else None)
        total = game["all maps"]
        assert total["executed_steps"] == sum(s["steps"] for s in want.values())
        assert total["blocked_steps"] == sum(s["blocked"] for s in want.values())
    assert summary[2]["game"]["all maps"]["blocked_rate"] is None  # stay: no step executed
    assert main(["report", *map(str, runs.values()), "--out", str(d / "report")]) == 0
    md = (d / "report" / "report.md").read_text()
    assert "## Per map (game levels)" in md
    section = md.split("## Per map (game levels)")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| oracle")]
    assert [row.split("|")[2].strip() for row in rows] == ["MAP01", "MAP02", "all maps"]


def test_a_dolly_into_a_wall_is_recorded_blocked_at_every_step(tmp_path, capsys):
    # MAP01: the start room's south wall (y = -288, from the WAD); facing south at y = -256 it is 32 units (1 m) away
    # and the player stops 16 units (its radius) from it: 0.5 m, less than the first step's 0.625 m
    seg, one_sided, _ = map_lines(resolve_wad(None), "MAP01")
    assert any(o and s[1] == s[3] == -288 and min(s[0], s[2]) <= -192 <= max(s[0], s[2])
               for s, o in zip(seg, one_sided))
    south = level_rotation(math.radians(-90.0))

    def task(tid, y, counts):
        start = geometry.make_pose(south, np.array([-192.0, y, 41.0]) / 32.0)
        gt = ActionSequence.from_signed_counts(np.atleast_2d(counts), SIZES, cap=10)
        t = Task(id=tid, kind="nav", source="game", start_pose=start, goal_pose=gt.to_poses(start)[-1], gt=gt,
                 sizes=SIZES, tags={"map": "MAP01"})
        return replace(t, scene=game_scene("freedoom2.wad", "MAP01", start))

    path = save_tasks([task("into-the-wall", -256.0, [[0, 0, 10, 0, 0, 0]] * 3),
                       task("open", -160.0, [[0, 0, 10, 0, 0, 0], [0, 0, 6, 0, 4, 0]])], tmp_path / "wall.jsonl")
    for mode in ("one-shot", "closed-loop"):
        out = tmp_path / mode
        assert main(["eval", "--tasks", str(path), "--mode", mode, "--agent", "oracle", "--max-steps", "6",
                     "--out", str(out), "--no-progress", "--json"]) == 0
        recs = {r["task_id"]: r for r in read_records(out)}
        wall, open_ = recs["into-the-wall"], recs["open"]
        assert wall["blocked"] and all(wall["blocked"]) and not wall["success"], mode
        y = np.asarray(wall["pred_poses"])[-1][1, 3] * 32.0
        assert abs(y - (-288 + 16)) <= 1.0, (mode, y)  # at the wall, not through it
        assert open_["blocked"] == [False, False] and open_["success"], mode
    capsys.readouterr()
