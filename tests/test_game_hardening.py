"""Game recordings hardened: a recording names its WAD only inside its folder or among the bundled WADs (a
path climbing out of it is refused before anything opens it); recordings are folders made with the user's umask;
meta.json's image size must be its video's; the report's top view draws the level's walls."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

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


def _copy(recorded, tmp_path, name="copy") -> Path:
    d = tmp_path / name
    shutil.copytree(recorded, d)
    return d


def _meta(d: Path, **changes):
    meta = json.loads((d / "meta.json").read_text())
    meta.update(changes)
    (d / "meta.json").write_text(json.dumps(meta))
    return meta


# ----- the WAD a recording names -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["../../../../etc/passwd", "/etc/passwd", "..", "sub/freedoom2.wad",
                                  "..\\..\\etc\\passwd"])
def test_a_wad_name_outside_the_recording_is_refused_before_it_is_opened(recorded, tmp_path, capsys, monkeypatch,
                                                                         name):
    d = _copy(recorded, tmp_path)
    meta = _meta(d)
    _meta(d, wad={"name": name, "sha256": meta["wad"]["sha256"]})
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
    d = _copy(recorded, tmp_path)
    traj = load_trajectory(d)
    assert game_scenes.recorded_wad(traj) == resolve_wad("freedoom2.wad")  # bundled
    shutil.copyfile(resolve_wad("freedoom2.wad"), d / "mine.wad")
    meta = _meta(d)
    _meta(d, wad={"name": "mine.wad", "sha256": meta["wad"]["sha256"]})
    assert game_scenes.recorded_wad(load_trajectory(d)) == (d / "mine.wad").resolve()
    # a link in the folder that leads out of it is refused
    (d / "mine.wad").unlink()
    (d / "mine.wad").symlink_to(resolve_wad("freedoom2.wad"))
    with pytest.raises(ValueError, match=r"field 'wad.name': mine.wad in the recording's folder is not a regular "
                                         r"file inside it"):
        game_scenes.recorded_wad(load_trajectory(d))
    _meta(d, wad={"name": "nowhere.wad", "sha256": meta["wad"]["sha256"]})
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

    d = _copy(recorded, tmp_path)
    _meta(d, image=image)
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


def test_the_reports_top_view_of_a_game_run_draws_the_levels_walls(tmp_path, capsys):
    from spatialact.report.game import game_levels, plot_game_paths
    from spatialact.report.load import load_runs
    from spatialact.tasks import load_tasks

    pytest.importorskip("pybullet")
    record_level(tmp_path / "walk", map="MAP01", seconds=5.0, seed=3, resolution=(160, 120))
    tasks = tmp_path / "tasks.jsonl"
    assert main(["tasks", "from-trajectory", str(tmp_path / "walk"), "--n", "2", "--out", str(tasks)]) == 0
    run = tmp_path / "run"
    assert main(["eval", "--tasks", str(tasks), "--mode", "closed-loop", "--agent", "oracle", "--out", str(run),
                 "--no-progress", "--json"]) == 0
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
