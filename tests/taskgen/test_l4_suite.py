"""The frozen suite l4-v1 (docs/benchmark.md): names, the shipped file against its card, rebuilds of each track's
first tasks byte for byte, the image hashes against what an evaluation renders, the null scores and the measured
half-widths recomputed, the question track, and the baselines script's table.

Nothing here rebuilds the whole suite (minutes): each track's first tasks are rebuilt and compared with the shipped
lines; ``scripts/make_l4_suite.py --check`` rebuilds everything.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pybullet")

from spatialact.action_space import ActionSequence, Step  # noqa: E402
from spatialact.scorers import score_episode  # noqa: E402
from spatialact.taskgen import builtin_suite, is_suite, suite_info  # noqa: E402
from spatialact.taskgen import l4_suite as L  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def card():
    return json.loads(L.card_path().read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def tasks():
    return builtin_suite("l4-v1")


def _shipped_lines(track: str) -> list[bytes]:
    lines = L.suite_path().read_bytes().splitlines(keepends=True)
    return [ln for ln in lines if json.loads(ln)["meta"]["track"] == track]


# ----- names and the card -------------------------------------------------------------------------------------------
def test_suite_names_give_the_tracks_and_the_lite_split(tasks, card):
    assert [t.meta["track"] for t in tasks] == sorted((t.meta["track"] for t in tasks), key=L.TRACKS.index)
    assert len(tasks) == card["n_tasks"] == sum(L.TRACK_SIZES.values())
    assert len({t.id for t in tasks}) == len(tasks)
    for track in L.TRACKS:
        one = builtin_suite(f"l4-v1/{track}")
        assert [t.id for t in one] == [t.id for t in tasks if t.meta["track"] == track]
        assert len(one) == L.TRACK_SIZES[track] == card["tracks"][track]["n"]
        assert all(t.tags["track"] == track and t.tags["suite"] == "l4-v1" for t in one)
        assert {t.kind for t in one} == {L.TRACK_KINDS[track]}
        lite = builtin_suite(f"l4-v1-lite/{track}")
        assert len(lite) == L.LITE_SIZES[track] == card["lite"]["per_track"][track]
        assert [t.id for t in lite] == [t.id for t in one if t.id in set(card["lite"]["ids"])]
    lite = builtin_suite("l4-v1-lite")
    assert [t.id for t in lite] == card["lite"]["ids"]
    # nav: the ladder's five levels, equally; game: ten maps, equally; lite: the first of each
    nav = builtin_suite("l4-v1/nav")
    assert Counter(t.tags["level"] for t in nav) == {lv: L.NAV_PER_LEVEL for lv in ("L1", "L2", "L3", "L4", "L5")}
    game = builtin_suite("l4-v1/game")
    assert Counter(t.scene["map"] for t in game) == {m: L.GAME_PER_MAP for m in L.GAME_MAPS}
    assert len(L.GAME_MAPS) >= 6
    assert Counter(t.tags["level"] for t in builtin_suite("l4-v1-lite/nav")) == {lv: 10 for lv in
                                                                                 ("L1", "L2", "L3", "L4", "L5")}


def test_suite_info_and_refusals(card):
    sha = hashlib.sha256(L.suite_path().read_bytes()).hexdigest()
    assert card["sha256"] == sha and card["bytes"] == L.suite_path().stat().st_size
    info = suite_info("l4-v1/nav")
    assert info == {"name": "l4-v1", "version": 1, "track": "nav", "sha256": sha, "pins": L.PINS, "n_tasks": 400,
                    "split": "full"}
    assert set(info["pins"]) == {"image_size", "renderer", "render_quality", "prompt_version", "profile"}
    assert suite_info("l4-v1")["n_tasks"] == card["n_tasks"] and suite_info("l4-v1")["track"] is None
    lite = suite_info("l4-v1-lite/manip")
    assert (lite["name"], lite["split"], lite["n_tasks"], lite["sha256"]) == ("l4-v1-lite", "lite", 24, sha)
    for spec in ("l4-v1", "l4-v1/game", "l4-v1-lite", "l4-v1-lite/camera"):
        assert is_suite(spec)
    for bad in ("l4-v1/questions", "l4-v1/x", "l4-v1:3", "l4-v2", "l4-v1-lite/nav:2"):
        assert not is_suite(bad)
        with pytest.raises(ValueError) as e:
            builtin_suite(bad)
        assert "\n" not in str(e.value)
    # the other suites: a file suite has its SHA-256, a generated one none
    g = suite_info("game")
    assert g["version"] == 1 and g["n_tasks"] == 30 and g["pins"] is None
    assert suite_info("default") == {"name": "default", "version": None, "track": None, "sha256": None, "pins": None,
                                     "n_tasks": 10}
    assert suite_info("ladder:3")["n_tasks"] == 3 * 5 * 2 and suite_info("viewpoint")["n_tasks"] == 2 * 4 * 2
    with pytest.raises(ValueError, match="unknown suite"):
        suite_info("nope")


def test_pins_are_the_prompt_and_profile_of_this_version():
    from spatialact.agents.prompts import PROMPT_VERSION
    from spatialact.envs.gl.renderer import RENDER_QUALITIES

    assert L.PINS["prompt_version"] == PROMPT_VERSION
    assert L.PINS["renderer"] == "tiny" and L.PINS["render_quality"] in RENDER_QUALITIES
    assert L.PINS["profile"] == "paper"


def test_a_changed_file_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "l4-v1.jsonl"
    lines = L.suite_path().read_bytes().splitlines(keepends=True)
    bad.write_bytes(b"".join(lines[:-1]))
    monkeypatch.setattr(L, "suite_path", lambda: bad)
    with pytest.raises(ValueError, match="SHA-256") as e:
        L.frozen_suite_tasks("l4-v1/hand")
    assert "\n" not in str(e.value)


# ----- what every task carries --------------------------------------------------------------------------------------
def test_null_scores_stored_are_doing_nothing_by_hand(tasks):
    for t in tasks:
        stay = ActionSequence(tuple(Step.stay() for _ in range(max(1, t.n_steps))), t.sizes, t.gt.cap)
        one = score_episode(stay, t.gt, t.kind, "paper").total
        closed = score_episode(ActionSequence((), t.sizes, t.gt.cap), t.gt, t.kind, "paper").total
        assert t.meta["s0"] == {"one-shot": one, "closed-loop": closed}, t.id
        assert max(one, closed) <= L.S0_MAX
        assert set(t.meta["image_sha256"]) == {"start", "goal"}
        assert all(len(h) == 64 for h in t.meta["image_sha256"].values())
        assert t.meta["track"] == t.tags["track"] and t.meta["built_from"]
    # doing nothing is worth something on the tabletop tracks only (a nav step without translation aside)
    s0 = {tr: np.mean([t.meta["s0"]["one-shot"] for t in tasks if t.meta["track"] == tr]) for tr in L.TRACKS}
    assert s0["manip"] > 0.3 and s0["hand"] > 0.3 and s0["nav"] < 0.05


def test_no_ground_truth_passes_through_a_wall(tasks):
    from spatialact.envs import collision_problem

    rng = np.random.default_rng(0)
    nav = [t for t in tasks if t.meta["track"] in ("nav", "camera")]
    for i in rng.choice(len(nav), 40, replace=False):
        assert collision_problem(nav[i]) is None, nav[i].id


def test_game_tasks_carry_their_geodesic_distance(tasks):
    game = [t for t in tasks if t.meta["track"] == "game"]
    assert all(t.meta.get("d0_kind") == "geodesic" and t.meta["d0"] > 0 for t in game)


# ----- rebuilding -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("track,n", [("hand", 4), ("camera", 4), ("manip", 3), ("nav", 3)])
def test_first_tasks_of_a_track_rebuild_byte_for_byte(track, n):
    built, _ = L.build_track(track, limit=n)
    assert L.task_lines(built) == _shipped_lines(track)[:n]


@pytest.mark.slow
def test_first_game_tasks_rebuild_byte_for_byte():
    pytest.importorskip("vizdoom")
    built, _ = L.build_track("game", limit=2)
    assert L.task_lines(built) == _shipped_lines("game")[:2]


def test_camera_paths_are_smooth_walks_in_the_room():
    from spatialact.envs.registry import make_env

    env = make_env("nav", width=32, height=32, renderer="tiny", wrap=False)
    try:
        env.world.load_scene({"generator": "room", "seed": 7})
        a = L.camera_path(env.world, np.random.default_rng(3))
        b = L.camera_path(env.world, np.random.default_rng(3))
        scene = env.world.scene
    finally:
        env.close()
    poses, t = a
    assert np.array_equal(poses, b[0]) and np.array_equal(t, b[1])  # deterministic
    step = np.linalg.norm(np.diff(poses[:, :3, 3], axis=0), axis=1)
    # 0.45 m/s at 10 frames a second along the spline (a chord across a bend is a little shorter)
    assert abs(np.median(step) - 0.045) < 1e-4 and np.all((step > 0.03) & (step < 0.04501))
    assert np.allclose(np.diff(t), 0.1)
    R = poses[:, :3, :3]
    assert np.allclose(R @ R.transpose(0, 2, 1), np.eye(3), atol=1e-9)
    assert all(not scene.inside_obstacle(p[:3, 3], 0.3) for p in poses)
    assert np.all((poses[:, 2, 3] > 1.2) & (poses[:, 2, 3] < 1.75))
    roll = np.degrees(np.arcsin(np.clip(poses[:, 2, 0], -1, 1)))  # the image's x axis against the horizontal
    assert np.all(np.abs(roll) < 2.5)


# ----- images ---------------------------------------------------------------------------------------------------
def _rendered_by_eval(task):
    """The start and goal views an episode shows, through the evaluation's own episode runner at the pins."""
    from spatialact.agents import make_agent
    from spatialact.evaluation.episode import EpisodeConfig, run_episode
    from spatialact.image_files import array_sha256

    cfg = EpisodeConfig(mode="one-shot", renderer=L.PINS["renderer"], width=L.PINS["image_size"],
                        height=L.PINS["image_size"], render_quality=L.PINS["render_quality"], seed=12345)
    record, frames = run_episode(task, make_agent("oracle"), cfg)
    assert record["score"] == 1.0
    return {"start": array_sha256(frames.start), "goal": array_sha256(frames.goal)}


def test_image_hashes_are_what_an_evaluation_shows(tasks):
    for track in ("nav", "manip", "hand", "camera"):
        t = next(x for x in tasks if x.meta["track"] == track)
        assert _rendered_by_eval(t) == t.meta["image_sha256"], t.id
    # a task deeper in the file, rendered by itself, too (the builder reuses one environment per kind)
    t = [x for x in tasks if x.meta["track"] == "nav"][-1]
    assert _rendered_by_eval(t) == t.meta["image_sha256"]


@pytest.mark.slow
def test_game_image_hashes_are_what_an_evaluation_shows(tasks):
    pytest.importorskip("vizdoom")
    t = next(x for x in tasks if x.meta["track"] == "game")
    assert _rendered_by_eval(t) == t.meta["image_sha256"]


# ----- the measured half-widths -----------------------------------------------------------------------------------
def test_card_half_widths_are_met_and_recomputed(card):
    for track in L.TRACKS:
        hw = card["tracks"][track]["noisy_oracle_skill"]
        assert hw["n"] == L.TRACK_SIZES[track] and hw["noise"] == 2.0
        assert hw["half_width"] <= 0.03, track
        assert hw["lo"] < hw["skill"] < hw["hi"]
    spec = importlib.util.spec_from_file_location("make_l4_suite", ROOT / "scripts" / "make_l4_suite.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    hand = builtin_suite("l4-v1/hand")
    assert mod.half_widths(hand) == {"hand": card["tracks"]["hand"]["noisy_oracle_skill"]}


# ----- the question track -----------------------------------------------------------------------------------------
def test_question_track_ships_its_file_and_hashes(card):
    from spatialact.questions import load_questions

    q = card["questions"]
    data = L.questions_path().read_bytes()
    assert hashlib.sha256(data).hexdigest() == q["sha256"] and len(data) == q["bytes"]
    qs = load_questions(L.questions_path())  # validates every record (images are rendered where it is used)
    assert len(qs) == q["n"] and sum(q["per_type_format"].values()) == q["n"]
    types = {x["type"] for x in qs}
    assert {"relative_pose", "fov", "depth", "tracking", "task_flow"} <= types
    named = {str(Path(im["path"]).relative_to(L.questions_path().parent)) for x in qs for im in x["images"]}
    assert named and named <= set(q["files"])  # every image shown has its pixels' hash in the card
    total = L.suite_path().stat().st_size + L.card_path().stat().st_size + len(data)
    assert total < 6_000_000  # package data stays small: a few MB


@pytest.mark.slow
def test_question_track_first_build_is_reproduced(tmp_path, card):
    from spatialact.questions.suite import build_question_track, question_track_info

    path = build_question_track(tmp_path, chunks=1)
    shipped = L.questions_path().read_bytes()
    assert shipped.startswith(path.read_bytes())
    files = question_track_info(path)["files"]
    assert files and all(card["questions"]["files"][k] == v for k, v in files.items())


def test_question_track_rendered_otherwise_is_refused(tmp_path, monkeypatch):
    from spatialact.questions import suite as QS

    shipped = L.questions_path().read_bytes()

    def other_bytes(out_dir, chunks=QS.CHUNKS):  # a machine whose build writes another file
        out = Path(out_dir) / QS.QUESTIONS_FILE
        out.write_bytes(shipped.replace(b'"answer": "A"', b'"answer": "B"', 1))
        return out

    monkeypatch.setattr(QS, "build_question_track", other_bytes)
    with pytest.raises(ValueError, match="differs from the shipped") as e:
        QS.suite_questions(tmp_path)
    assert "\n" not in str(e.value)

    def same_bytes(out_dir, chunks=QS.CHUNKS):
        out = Path(out_dir) / QS.QUESTIONS_FILE
        out.write_bytes(shipped)
        return out

    files = json.loads(L.card_path().read_text(encoding="utf-8"))["questions"]["files"]
    first = sorted(files)[0]
    monkeypatch.setattr(QS, "build_question_track", same_bytes)
    monkeypatch.setattr(QS, "_file_hashes", lambda path: {**files, first: "0" * 64})  # one image's pixels differ
    with pytest.raises(ValueError, match="pixels other than") as e:
        QS.suite_questions(tmp_path)
    assert first in str(e.value) and "\n" not in str(e.value)


# ----- the baselines script -----------------------------------------------------------------------------------------
def test_baselines_script_writes_the_table_between_the_markers(tmp_path):
    spec = importlib.util.spec_from_file_location("l4_baselines", ROOT / "scripts" / "l4_baselines.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    todo = mod.plan("l4-v1-lite", ["hand", "nav"], ["oracle", "stay"])
    assert [(t, m, a) for t, m, a, _, _ in todo] == [
        ("hand", "one-shot", "oracle"), ("hand", "one-shot", "stay"), ("nav", "one-shot", "oracle"),
        ("nav", "one-shot", "stay"), ("nav", "closed-loop", "oracle"), ("nav", "closed-loop", "stay")]
    runs = tmp_path / "runs"
    for label in ("oracle", "stay"):
        out = mod.run_dir(runs, "l4-v1-lite", "hand", "one-shot", label)
        r = subprocess.run([sys.executable, "-m", "spatialact.cli.main", "eval", "--suite", "l4-v1-lite/hand",
                            "--agent", label, "--limit", "3", "--no-progress", "--out", str(out)],
                           capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, r.stderr
    doc = tmp_path / "benchmark.md"
    doc.write_text(f"# x\n\nbefore\n\n{mod.START}\nold\n{mod.END}\n\nafter\n", encoding="utf-8")
    rows = mod.table("l4-v1-lite", runs, [x for x in todo if x[0] == "hand"])
    mod.write_doc(doc, "l4-v1-lite", rows, lite=True)
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# x\n\nbefore\n\n") and text.endswith(f"{mod.END}\n\nafter\n") and "old" not in text
    oracle = next(r for r in rows if "| oracle |" in r)
    stay = next(r for r in rows if "| stay |" in r)
    assert "| 3 | 1.000 [1.000, 1.000] | 1.000 [1.000, 1.000] |" in oracle  # skill 1, score 1
    assert "| 3 | 0.000 [0.000, 0.000] |" in stay  # skill 0 by construction
    assert rows.index(oracle) < rows.index(stay)  # ranked by skill
    assert (runs / "l4-v1-lite" / "hand" / "one-shot" / "report" / "leaderboard.json").is_file()
