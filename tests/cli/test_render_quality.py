"""--render-quality: threaded from the commands that render to the worlds they make, part of a run's configuration
(a resume at another quality is refused in one line naming both), and named by `report` when compared runs differ
in it. Real runs of `spatialact eval` on small procedural suites; images from the gl renderer where it starts."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

from spatialact.cli.main import main
from spatialact.evaluation.episode import RENDER_QUALITIES, EpisodeConfig
from spatialact.report import RunsDifferWarning, compare_runs, make_report
from spatialact.report.load import load_runs

COMMANDS = (["eval"], ["demo"], ["prompt"], ["replay"], ["questions", "build"])


def test_the_names_are_the_renderers():
    from spatialact.envs.gl import RENDER_QUALITIES as GL

    assert RENDER_QUALITIES == GL == ("default", "high")


@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
def test_every_rendering_command_takes_the_option(cmd, capsys):
    with pytest.raises(SystemExit) as e:
        main([*cmd, "--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--render-quality {default,high}" in out
    with pytest.raises(SystemExit) as e:  # an unknown quality: argparse's one line, exit 2
        main([*cmd, "--render-quality", "ultra"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--render-quality: invalid choice: 'ultra'" in err


def test_config_names_the_quality_only_when_not_the_default():
    assert "render_quality" not in EpisodeConfig().to_dict()  # runs made before the setting resume as they were
    assert EpisodeConfig(render_quality="high").to_dict()["render_quality"] == "high"
    with pytest.raises(ValueError, match="render_quality must be one of default, high, got 'ultra'"):
        EpisodeConfig(render_quality="ultra")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("rq")
    for name, extra in {"default": [], "high": ["--render-quality", "high"], "again": []}.items():
        assert main(["eval", "--suite", "nav:2", "--agent", "oracle", "--renderer", "tiny", "--out", str(d / name),
                     "--no-progress", *extra]) == 0
    return d


def test_the_quality_is_in_the_run_configuration(runs):
    def config(run):
        stored = json.loads((runs / run / "config.json").read_text())
        return stored["config"]

    assert "render_quality" not in config("default")
    assert config("high")["render_quality"] == "high"


@pytest.mark.parametrize("run,other,was,now", [("default", ["--render-quality", "high"], "default", "high"),
                                               ("high", [], "high", "default")])
def test_a_resume_at_another_quality_is_refused_in_one_line(runs, tmp_path, run, other, was, now):
    import shutil

    d = tmp_path / run
    shutil.copytree(runs / run, d)
    before = (d / "results.jsonl").read_bytes()
    r = subprocess.run([sys.executable, "-m", "spatialact.cli.main", "eval", "--suite", "nav:2", "--agent", "oracle",
                        "--renderer", "tiny", "--out", str(d), "--no-progress", *other],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    err = r.stderr.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert f"rendered at render quality {was} and cannot be resumed at {now}" in err
    assert f"--render-quality {was} to resume" in err
    assert (d / "results.jsonl").read_bytes() == before  # nothing run
    # the same quality resumes (nothing left to run)
    same = ["--render-quality", was] if was == "high" else []
    assert main(["eval", "--suite", "nav:2", "--agent", "oracle", "--renderer", "tiny", "--out", str(d), "--no-progress",
                 *same]) == 0


def test_report_warns_when_runs_differ_in_render_quality(runs, tmp_path):
    runs_ = load_runs([runs / "default", runs / "high"])
    cmp = compare_runs(runs_)
    assert cmp.differs == ("render quality",)
    assert [s.render_quality for s in cmp.setups] == ["default", "high"]
    note = cmp.note()
    assert "The runs differ in their render quality" in note
    assert "render quality default" in note and "render quality high" in note
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        make_report([runs / "default", runs / "high"], tmp_path / "rep")
    msgs = [str(x.message) for x in w if issubclass(x.category, RunsDifferWarning)]
    assert len(msgs) == 1 and "render quality high" in msgs[0]
    assert "render quality" in (tmp_path / "rep" / "report.md").read_text().split("##", 1)[0]
    # the same quality: no word about it
    same = compare_runs(load_runs([runs / "default", runs / "again"]))
    assert same.like_for_like and same.note() == ""


def test_the_quality_reaches_the_world_and_a_scope_sets_the_default():
    pytest.importorskip("pybullet")
    from spatialact.envs import make_env
    from spatialact.envs.rendering import BulletBackend, default_render_quality, render_quality_default

    def quality(env):
        world = env.unwrapped.world
        return world.render_quality, world.backend.render_quality

    env = make_env("nav", renderer="tiny", render_quality="high")
    assert quality(env) == ("high", "high")
    env.close()
    env = make_env("manip", renderer="tiny")
    assert quality(env) == ("default", "default")
    env.close()
    with render_quality_default("high"):
        assert default_render_quality() == "high"
        env = make_env("hand", renderer="tiny")
        assert quality(env) == ("high", "high")
        env.close()
        env = make_env("nav", renderer="tiny", render_quality="default")  # named: it wins
        assert quality(env) == ("default", "default")
        env.close()
        w = BulletBackend("tiny")
        assert w.render_quality == "high"
        w.close()
    assert default_render_quality() == "default"
    with pytest.raises(ValueError, match="render_quality must be one of default, high"):
        with render_quality_default("ultra"):
            pass


def _gl_or_skip():
    from spatialact.envs.gl import gl_available

    ok, why = gl_available()
    if not ok:
        pytest.skip(f"the gl renderer cannot start here: {why}")


def test_prompt_draws_at_the_quality_asked(tmp_path, capsys):
    """prompt --render-quality high draws what BulletBackend draws at high: another image than the default's, the
    same scene (edges differ, the mean barely)."""
    pytest.importorskip("pybullet")
    _gl_or_skip()
    from PIL import Image

    from spatialact.taskgen import procedural_tasks
    from spatialact.tasks import save_tasks

    task = procedural_tasks("manip", 1, seed=0)[0]
    tasks = tmp_path / "t.jsonl"
    save_tasks([task], tasks)
    ims = {}
    for q in RENDER_QUALITIES:
        out = tmp_path / q
        assert main(["prompt", task.id, "--tasks", str(tasks), "--renderer", "gl", "--size", "64",
                     "--render-quality", q, "--out", str(out)]) == 0
        pngs = sorted(out.glob("*.png"))
        assert pngs
        ims[q] = np.asarray(Image.open(pngs[0]).convert("RGB"), dtype=np.int16)
    capsys.readouterr()
    diff = np.abs(ims["high"] - ims["default"])
    assert diff.max() > 20  # edge pixels differ
    assert (diff.sum(-1) > 0).mean() < 0.6  # most of the image is the same
    assert abs(ims["high"].mean() - ims["default"].mean()) < 3


def test_replay_draws_at_the_quality_asked_and_says_so(tmp_path, capsys):
    """replay --render-quality reaches the world replay_trajectory makes (through render_quality_default): the
    contact sheets differ between the qualities, and replay.json names the quality."""
    pytest.importorskip("pybullet")
    _gl_or_skip()
    from PIL import Image

    from traj_helpers import smooth_poses, write_tum

    P, t = smooth_poses(60, 30.0, 4, scale=0.5)
    write_tum(tmp_path / "cam.txt", t, P)
    scene = {"type": "replay", "source": "camera_path", "format": "tum", "trajectory": "cam.txt",
             "keyframes": [0, 30, 59], "room": {"center": [0, 0, 0], "size": [20, 20, 20], "up": "+z"}}
    (tmp_path / "scene.json").write_text(json.dumps(scene))
    sheets = {}
    for q in RENDER_QUALITIES:
        out = tmp_path / q
        assert main(["replay", str(tmp_path / "cam.txt"), "--scene", str(tmp_path / "scene.json"), "--out", str(out),
                     "--height", "48", "--renderer", "gl", "--render-quality", q]) == 0
        assert json.loads((out / "replay.json").read_text())["render_quality"] == q
        sheets[q] = np.asarray(Image.open(out / "contact_sheet.png").convert("RGB"), dtype=np.int16)
    capsys.readouterr()
    assert sheets["high"].shape == sheets["default"].shape
    # gl draws the same quality bit for bit (test_envs_gl): any difference is the quality; edges differ most
    assert np.abs(sheets["high"] - sheets["default"]).max() > 8
