"""Game recordings hardened: a recording names its WAD only inside its folder or among the bundled WADs (a
path climbing out of it is refused before anything opens it); recordings are folders made with the user's umask;
meta.json's image size must be its video's; the report's top view draws the level's walls."""

from __future__ import annotations

import json
import shutil

import pytest

from traj_helpers import copy_recording, edit_meta

pytest.importorskip("vizdoom")

from spatialact.cli.main import main  # noqa: E402
from spatialact.envs.doom.record import record_level  # noqa: E402
from spatialact.envs.doom.wad import resolve_wad  # noqa: E402
from spatialact.taskgen import game_scenes  # noqa: E402
from spatialact.trajectories import load_trajectory  # noqa: E402


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    out = tmp_path_factory.mktemp("hard") / "walk"
    record_level(out, map="MAP01", seconds=1.0, seed=1, resolution=(160, 120))
    return out


# ----- the WAD a recording names -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["../../../../etc/passwd", "/etc/passwd", "..", "sub/freedoom2.wad",
                                  "..\\..\\etc\\passwd"])
def test_a_wad_name_outside_the_recording_is_refused_before_it_is_opened(recorded, tmp_path, capsys, monkeypatch,
                                                                         name):
    d = copy_recording(recorded, tmp_path)
    meta = edit_meta(d)
    edit_meta(d, wad={"name": name, "sha256": meta["wad"]["sha256"]})
    hashed = []
    real = game_scenes.wad_sha256
    monkeypatch.setattr(game_scenes, "wad_sha256", lambda p: hashed.append(str(p)) or real(p))
    monkeypatch.setattr(game_scenes, "check_wad", lambda *a, **k: hashed.append(str(a[0])))
    code = main(["tasks", "from-trajectory", str(d), "--n", "2", "--out", str(tmp_path / "t.jsonl")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert "'wad.name'" in err and "Traceback" not in err
    assert hashed == []  # nothing was opened
    assert not (tmp_path / "t.jsonl").exists()


def test_a_wad_in_the_recording_folder_or_bundled_is_found(recorded, tmp_path):
    d = copy_recording(recorded, tmp_path)
    traj = load_trajectory(d)
    assert game_scenes.recorded_wad(traj) == resolve_wad("freedoom2.wad")  # bundled
    shutil.copyfile(resolve_wad("freedoom2.wad"), d / "mine.wad")
    meta = edit_meta(d)
    edit_meta(d, wad={"name": "mine.wad", "sha256": meta["wad"]["sha256"]})
    assert game_scenes.recorded_wad(load_trajectory(d)) == (d / "mine.wad").resolve()
    # a link in the folder that leads out of it is refused
    (d / "mine.wad").unlink()
    (d / "mine.wad").symlink_to(resolve_wad("freedoom2.wad"))
    with pytest.raises(ValueError, match=r"field 'wad.name': mine.wad in the recording's folder is not a regular "
                                         r"file inside it"):
        game_scenes.recorded_wad(load_trajectory(d))
    edit_meta(d, wad={"name": "nowhere.wad", "sha256": meta["wad"]["sha256"]})
    with pytest.raises(ValueError, match=r"field 'wad.name': nowhere.wad is neither in the recording's folder nor"):
        game_scenes.recorded_wad(load_trajectory(d))


# ----- the recording folder's mode ---------------------------------------------------------------------------
@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002])
def test_game_record_makes_its_folder_with_the_users_umask(tmp_path, capsys, mask):
    import os
    import stat

    old = os.umask(mask)
    try:
        code = main(["game", "record", "--map", "MAP01", "--seconds", "0.1", "--resolution", "160x120",
                     "--out", str(tmp_path / "rec"), "--no-progress"])
        os.mkdir(tmp_path / "plain")
    finally:
        os.umask(old)
    assert code == 0, capsys.readouterr().err
    mode = stat.S_IMODE((tmp_path / "rec").stat().st_mode)
    assert mode == 0o777 & ~mask == stat.S_IMODE((tmp_path / "plain").stat().st_mode)
    assert stat.S_IMODE((tmp_path / "rec" / "depth").stat().st_mode) == 0o777 & ~mask


# ----- meta.json's image size against the video's -------------------------------------------------------------
@pytest.mark.parametrize("image, field", [({"width": 320, "height": 240}, "image.width"),
                                          ({"width": 160, "height": 90}, "image.height")])
def test_meta_size_other_than_the_videos_is_refused_everywhere(recorded, tmp_path, capsys, image, field):
    from spatialact.trajectories import TrajectoryError

    d = copy_recording(recorded, tmp_path)
    edit_meta(d, image=image)
    size = f"{image['width']}x{image['height']}"
    want = f"field '{field}': image is {size} pixels, but rgb.mp4's frames are 160x120"
    with pytest.raises(TrajectoryError, match=want.replace(".", r"\.").replace("'", "'")):
        load_trajectory(d)
    for argv in (["tasks", "from-trajectory", str(d), "--n", "2", "--out", str(tmp_path / "t.jsonl")],
                 ["replay", str(d), "--out", str(tmp_path / "replay")],
                 ["questions", "build", "--trajectory", str(d), "--n", "2", "--out", str(tmp_path / "q.jsonl")]):
        code = main(argv)
        err = capsys.readouterr().err.strip()
        assert code == 2 and "\n" not in err, (argv[0], err)
        assert "meta.json" in err and f"'{field}'" in err and "160x120" in err, (argv[0], err)
    assert not (tmp_path / "t.jsonl").exists()


# ----- the report's top view draws the level's walls ---------------------------------------------------------
def _grey_pixels(png) -> int:
    """Pixels of the walls' colours (black, grey, antialiased between: no hue, darker than the background);
    the text is the same in the figures compared."""
    import numpy as np
    from PIL import Image

    a = np.asarray(Image.open(png).convert("RGB")).astype(int)
    return int(((a.max(-1) - a.min(-1) < 12) & (a.max(-1) < 230)).sum())


@pytest.fixture(scope="module")
def game_run(tmp_path_factory):
    """Two tasks cut from a 5-second walk of MAP01, and the oracle's closed-loop run on them (no --size)."""
    pytest.importorskip("pybullet")
    d = tmp_path_factory.mktemp("game_run")
    record_level(d / "walk", map="MAP01", seconds=5.0, seed=3, resolution=(160, 120))
    tasks = d / "tasks.jsonl"
    assert main(["tasks", "from-trajectory", str(d / "walk"), "--n", "2", "--out", str(tasks)]) == 0
    run = d / "run"
    assert main(["eval", "--tasks", str(tasks), "--mode", "closed-loop", "--agent", "oracle", "--out", str(run),
                 "--no-progress", "--json"]) == 0
    return tasks, run


def test_the_reports_top_view_of_a_game_run_draws_the_levels_walls(game_run, tmp_path, capsys):
    from spatialact.report.game import game_levels, plot_game_paths
    from spatialact.report.load import load_runs
    from spatialact.tasks import load_tasks

    tasks, run = game_run
    assert main(["report", str(run), "--out", str(tmp_path / "rep")]) == 0
    capsys.readouterr()
    png = tmp_path / "rep" / "figures" / "game_top_0.png"
    assert png.is_file()
    assert "figures/game_top_0.png" in (tmp_path / "rep" / "report.md").read_text()
    # the same episodes drawn without the level: the walls are what the report's figure has in more
    (r,) = load_runs([run])
    levels = game_levels(r)
    ids = {t.id for t in load_tasks(tasks)}
    assert set(levels) == ids and {m for _, m in levels.values()} == {"MAP01"}
    eps = [e for e in r.records][:3]
    bare = plot_game_paths(r, eps, {}, tmp_path / "bare.png")
    walled = plot_game_paths(r, eps, levels, tmp_path / "walled.png")
    assert _grey_pixels(walled) > _grey_pixels(bare) + 1000
    assert _grey_pixels(png) == _grey_pixels(walled)


# ----- the game's 4:3 image size -----------------------------------------------------------------------------
def test_game_runs_default_to_the_games_4_3_and_take_a_non_square_size(game_run, tmp_path, capsys):
    from spatialact.envs.registry import make_env
    from spatialact.evaluation.results import read_records
    from spatialact.tasks import load_tasks

    tasks, run = game_run
    cfg = json.loads((run / "config.json").read_text())["config"]
    assert (cfg["width"], cfg["height"]) == (128, 96)  # no --size: the game's 4:3 at the default width
    assert len(read_records(run)) == 2
    out = tmp_path / "wide"
    assert main(["eval", "--tasks", str(tasks), "--mode", "closed-loop", "--agent", "oracle", "--size", "160x120",
                 "--limit", "1", "--out", str(out), "--no-progress", "--json"]) == 0
    capsys.readouterr()
    cfg = json.loads((out / "config.json").read_text())["config"]
    assert (cfg["width"], cfg["height"]) == (160, 120)
    (rec,) = read_records(out)
    assert rec["success"] is True
    # a square size is still taken as given (N x N)
    assert main(["eval", "--tasks", str(tasks), "--mode", "one-shot", "--agent", "oracle", "--size", "96",
                 "--limit", "1", "--out", str(tmp_path / "sq"), "--no-progress", "--json"]) == 0
    cfg = json.loads((tmp_path / "sq" / "config.json").read_text())["config"]
    assert (cfg["width"], cfg["height"]) == (96, 96)
    # the observation at 4:3 keeps the game's pixel aspect, fy = 1.2 fx (square: squashed, 1.6)
    task = load_tasks(tasks)[0]
    for (w, h), ratio in (((128, 96), 1.2), ((160, 120), 1.2), ((128, 128), 1.6)):
        env = make_env("nav", task=task, width=w, height=h, action_mode="continuous")
        try:
            obs, _ = env.reset()
            assert obs["rgb"].shape == (h, w, 3)
            cam = env.unwrapped.world.camera
            assert cam.fy / cam.fx == pytest.approx(ratio, rel=1e-6)
            assert cam.fx == pytest.approx((w / 2) / 1.0, rel=1e-6)  # 90 degrees across: fx = (W/2) / tan(45)
        finally:
            env.close()
    capsys.readouterr()


@pytest.mark.parametrize("size, why", [("320x", "is not an image size"), ("x240", "is not an image size"),
                                       ("3e2x240", "is not an image size"), ("-5", "is not an image size"),
                                       ("320x240x3", "is not an image size"), ("1x240", "must be between")])
def test_a_bad_size_is_refused_in_one_line(tmp_path, capsys, size, why):
    try:  # argparse's refusal exits; the bounds' is a one-line CLIError (exit 2)
        code = main(["eval", "--suite", "game", "--agent", "stay", "--size", size, "--out", str(tmp_path / "r")])
    except SystemExit as e:
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert "--size" in err and why in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()
