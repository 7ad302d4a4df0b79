"""The sample recordings in examples/ and the commands of examples/README.md.

* Every ``spatialact`` line of examples/README.md's ``bash`` block runs, as written, in a copy of examples/ (a
  temporary folder standing for the repository root), in order, exits 0 and prints what the README says; each has a
  check below (the README lists exactly the checked commands). Together they write only under ``scratch/`` (ignored
  by git): the copy of examples/ is byte for byte what it was.
* The samples are what examples/make_samples.py writes (parquet tables, JSON, HDF5 datasets and the TUM text
  regenerated and compared; the videos decode to the frames the script draws) and stay small.
* The DROID sample's joint positions are the posture the Panda has at the recorded poses.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shlex
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pybullet")
pytest.importorskip("pyarrow")
pytest.importorskip("h5py")
pytest.importorskip("av")
pytest.importorskip("cv2")

from spatialact.cli.main import main  # noqa: E402
from spatialact.trajectories import load_trajectory  # noqa: E402

from traj_helpers import make_samples_module  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SAMPLES = ("droid", "egodex", "camera_walk.txt")
MAX_SAMPLE_BYTES = 2 * 1024 * 1024  # all three recordings together


def readme_commands() -> list[str]:
    """The ``spatialact`` command lines of examples/README.md's ``bash`` blocks, comments dropped, spaces normalised."""
    out, inside = [], False
    for line in (EXAMPLES / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```bash"
            continue
        if inside and line.startswith("spatialact "):
            out.append(" ".join(shlex.split(line, comments=True)))
    return out


def _files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """Runs every README command in order in a fresh folder holding a copy of examples/; returns the folder, the
    copy's files before, and {command: (exit code, stdout, stderr)}."""
    root = tmp_path_factory.mktemp("clone")
    shutil.copytree(EXAMPLES, root / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    before = _files(root / "examples")
    results, cwd = {}, os.getcwd()
    os.chdir(root)
    try:
        for cmd in readme_commands():
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(shlex.split(cmd)[1:])
            results[cmd] = (code, out.getvalue(), err.getvalue())
    finally:
        os.chdir(cwd)
    return root, before, results


def _lines(text: str) -> list[str]:
    return [x for x in text.splitlines() if x.strip()]


def _errors_only(err: str) -> str:
    """Standard error less the progress bars (tqdm lines redrawn with carriage returns)."""
    return "\n".join(x for x in err.replace("\r", "\n").splitlines() if x.strip() and "ep/s" not in x
                     and "ep]" not in x and "%|" not in x)


# ----- what each command must print and write ----------------------------------------------------------------------
def _score(profile: str, out_file: str):
    def check(root, out, err):
        lines = _lines(out)
        # skill leads (the 16 answers whose task is known), then the paper's raw score over all 17 lines
        assert lines[0].startswith("skill (0: doing nothing") and f"profile {profile}, weights 0.333,0.333,0.333" in lines[0]
        assert re.search(r"^overall\s+16\s+-?[01]\.\d{4}\s", out, re.M)
        assert re.search(r"^overall\s+17\s+0\.\d{4}\s", out, re.M)
        assert "lines 17, scored 17, ok 15; parse_error 1" in out and "unknown_task 1" in out and "missing 1" in out
        assert len((root / out_file).read_text().splitlines()) == 17
    return check


def _extract(first: str, n_steps: int, grips=None):
    def check(root, out, err):
        lines = _lines(out)
        assert lines[0].startswith(first), lines[0]
        answer = json.loads(lines[-1])  # the stepped answer JSON closes the output
        assert list(answer) == [f"step_{k}" for k in range(1, n_steps + 1)]
        if grips is not None:
            assert [answer[k]["gripper"] for k in answer] == grips
    return check


def _tasks(out_file: str, n: int, kind: str, source: str):
    def check(root, out, err):
        from spatialact.tasks import load_tasks

        assert _lines(out)[0].startswith(f"{n} tasks → {out_file}")
        assert _errors_only(err) == ""  # nothing skipped: every pair the builder drew is written
        tasks = load_tasks(root / out_file)
        assert len(tasks) == n and {t.kind for t in tasks} == {kind}
        assert all(t.scene and t.scene["type"] == "replay" and t.scene["source"] == source for t in tasks)
    return check


def _eval(root, out, err):
    from spatialact.evaluation import read_records

    lines = _lines(out)
    assert lines[0] == "oracle · closed-loop · file:scratch/droid.jsonl · skill: 0 doing nothing, 1 the ground truth"
    # skill [interval], score, then success 1.000 (closed-loop s0 is 0: skill equals the step score)
    assert re.search(r"^all\s+10\s+0\.\d{3} \[[0-9., ]+\]\s+0\.\d{3}\s+1\.000\s", out, re.M), out
    recs = read_records(root / "scratch" / "runs" / "droid")
    assert len(recs) == 10 and all(r["success"] is True and r["simulated"] is True for r in recs)


def _replay(root, out, err):
    m = re.match(r"droid: (\d+) keyframes replayed in a droid scene; largest pose error ([0-9.]+) mm, ([0-9.]+) deg "
                 r"\(bound ([0-9.]+) mm, ([0-9.]+) deg\)", out)
    assert m, out
    k, pe, re_, bt, br = (float(g) for g in m.groups())
    assert k >= 10 and pe <= bt + 2.0 and re_ <= br + 1.0  # the quantisation bound, plus the Panda's IK tolerance
    folder = root / "scratch" / "replay-droid"
    assert {p.name for p in folder.iterdir()} == {"replay.mp4", "contact_sheet.png", "replay.json"}
    assert json.loads((folder / "replay.json").read_text())


CHECKS = {
    "spatialact score examples/answers.jsonl examples/tasks.jsonl --out scratch/example_scores.jsonl":
        _score("paper", "scratch/example_scores.jsonl"),
    "spatialact score examples/answers.jsonl examples/tasks.jsonl --profile lmms-eval --out "
    "scratch/example_lmms.jsonl": _score("lmms-eval", "scratch/example_lmms.jsonl"),
    "spatialact extract examples/egodex/basic_pick_place/0.hdf5 --entity rightHand":
        _extract("egodex: 127 frames at 30 fps, 8 keyframes, 7 steps (metric mode, body frame)", 7,
                 [0, 0, 1, 1, 1, 0, 0]),
    "spatialact extract examples/camera_walk.txt":
        _extract("tum: 600 frames at 30.0299 fps, 21 keyframes, 20 steps (metric mode, body frame)", 20),
    "spatialact tasks from-trajectory examples/droid --episode 0 --out scratch/droid.jsonl --n 10":
        _tasks("scratch/droid.jsonl", 10, "manip", "droid"),
    "spatialact eval --tasks scratch/droid.jsonl --mode closed-loop --agent oracle --out scratch/runs/droid": _eval,
    "spatialact replay examples/droid --episode 0 --out scratch/replay-droid": _replay,
    "spatialact tasks from-trajectory examples/egodex/basic_pick_place/0.hdf5 --out scratch/egodex.jsonl --n 10":
        _tasks("scratch/egodex.jsonl", 10, "hand", "egodex"),
    "spatialact tasks from-trajectory examples/camera_walk.txt --out scratch/walk.jsonl --n 10":
        _tasks("scratch/walk.jsonl", 10, "nav", "camera_path"),
}


def test_readme_lists_exactly_the_checked_commands():
    assert readme_commands() and sorted(readme_commands()) == sorted(CHECKS)


@pytest.mark.slow
@pytest.mark.parametrize("cmd", list(CHECKS), ids=[" ".join(c.split()[1:3]) for c in CHECKS])
def test_readme_command_runs_as_written(ran, cmd):
    root, _, results = ran
    code, out, err = results[cmd]
    assert code == 0, f"{cmd}\n{out}\n{_errors_only(err)}"
    CHECKS[cmd](root, out, err)


@pytest.mark.slow
def test_commands_write_only_under_scratch(ran):
    root, before, _ = ran
    assert _files(root / "examples") == before  # nothing in the checkout's examples/ changed or appeared
    assert sorted(p.name for p in root.iterdir()) == ["examples", "scratch"]
    assert "scratch/" in (ROOT / ".gitignore").read_text().splitlines()


# ----- the samples ------------------------------------------------------------------------------------------------
def test_samples_are_small():
    sizes = {name: sum(p.stat().st_size for p in ([EXAMPLES / name] if (EXAMPLES / name).is_file()
                                                   else (EXAMPLES / name).rglob("*")) if p.is_file())
             for name in SAMPLES}
    assert all(sizes.values()) and sum(sizes.values()) < MAX_SAMPLE_BYTES, sizes


def _bad_pixels(a: np.ndarray, b: np.ndarray) -> float:
    """Share of pixels where two RGB frames differ by more than 64 in some channel (codec noise stays far below)."""
    return float((np.abs(a.astype(np.int16) - b.astype(np.int16)).max(axis=-1) > 64).mean())


def test_camera_walk_is_what_the_script_writes():
    ms = make_samples_module()
    assert (EXAMPLES / "camera_walk.txt").read_text() == ms.camera_walk_text()
    traj = load_trajectory(EXAMPLES / "camera_walk.txt")
    assert traj.meta["source"] == "tum" and len(traj) == 600
    speed = np.linalg.norm(np.diff(traj.positions, axis=0), axis=1) * 30.0
    assert 0.2 < np.median(speed) < 0.4 and np.all(np.abs(traj.positions[:, 2] - 1.35) < 0.05)  # walking, hand-held


@pytest.mark.slow
def _same_table(stored, made, atol: float = 1e-6) -> None:
    """The same columns and values; floats to ``atol`` (the joint postures come from PyBullet's inverse kinematics,
    whose last bits differ between processors: 3.2914e-06 against 3.2919e-06 was seen for one angle)."""
    import pyarrow as pa

    assert stored.schema.equals(made.schema) and stored.num_rows == made.num_rows
    for name in stored.column_names:
        a, b = stored.column(name).combine_chunks(), made.column(name).combine_chunks()
        t = a.type
        while pa.types.is_list(t) or pa.types.is_fixed_size_list(t):
            t = t.value_type
        if pa.types.is_floating(t):
            x = np.array(a.to_pylist(), dtype=np.float64)
            y = np.array(b.to_pylist(), dtype=np.float64)
            assert x.shape == y.shape and np.allclose(x, y, rtol=0, atol=atol), name
        else:
            assert a.equals(b), name


def test_droid_sample_is_what_the_script_writes():
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    ms = make_samples_module()
    ep = ms.droid_episode()
    root = EXAMPLES / "droid"
    data = ms.droid_data(ep)
    _same_table(pq.read_table(root / "data" / "chunk-000" / "file-000.parquet"), data)
    for rel, content in ms.droid_meta(ep["n"], data).items():
        if isinstance(content, dict):
            assert json.loads((root / rel).read_text()) == content, rel
        elif isinstance(content, pa.Table):
            assert pq.read_table(root / rel).equals(content), rel
        else:
            pd.testing.assert_frame_equal(pd.read_parquet(root / rel), content)
    for cam in ms.DROID_CAMERAS:
        traj = load_trajectory(root, episode=0, camera=cam)
        assert traj.meta["video_key"] == f"observation.images.{cam}" and len(traj) == ep["n"]
        for i, frame in zip((30, 60, 100), traj.frames([30, 60, 100])):
            assert frame.shape == (180, 320, 3) and _bad_pixels(frame, ep["videos"][cam][i]) < 2e-3, (cam, i)


@pytest.mark.slow
def test_egodex_sample_is_what_the_script_writes():
    import h5py

    ms = make_samples_module()
    ep = ms.egodex_episode()
    path = EXAMPLES / ms.EGODEX_FILE
    with h5py.File(path, "r") as f:
        names = []
        f.visit(lambda k: names.append(k) if isinstance(f[k], h5py.Dataset) else None)
        assert sorted(names) == sorted(ep["datasets"])
        for name, arr in ep["datasets"].items():
            assert f[name].dtype == np.float32 and np.array_equal(f[name][()], arr), name
        assert {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()} == ep["attrs"]
    traj = load_trajectory(path, entity="rightHand")
    idx = [40, 63, 100]
    for frame, drawn in zip(traj.frames(idx), ms.egodex_frames(ep["motion"], ep["joints"], idx)):
        assert frame.shape == (1080, 1920, 3) and _bad_pixels(frame, drawn) < 5e-4
    assert traj.gripper.any() and not traj.gripper[0] and not traj.gripper[-1]  # picks up, then lets go


@pytest.mark.slow
def test_droid_sample_records_the_posture_of_its_poses():
    """``cart`` is forward kinematics of ``joint_position`` (as on the robot): the replay's IK seeds are exact."""
    from spatialact import geometry
    from spatialact.envs.replay_world import droid_joint_positions

    ms = make_samples_module()
    traj = load_trajectory(EXAMPLES / "droid", episode=0)
    q = droid_joint_positions(traj)
    assert q is not None and q.shape == (len(traj), 7) and np.all(q[:, 3] < -0.5)
    gripper = np.zeros(len(traj))
    _, flange = ms.panda_links(q, gripper)
    assert np.abs(flange[:, :3, 3] - traj.poses[:, :3, 3]).max() < 1e-5  # float32 storage of both
    assert np.max(geometry.rotation_error(flange, traj.poses)) < 1e-5
