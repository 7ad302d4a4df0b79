"""Inputs a run reads, refused before it starts: a decompression-bomb PNG, a PNG cut off
after its header and a file that is no image, named as a task's image (or a question's); a room layout that is a
path; a replay scene whose recording is no trajectory. Each is one line naming the task (or question), the field and
the file, exit 2, and no run directory — where today's code raised Pillow's ``DecompressionBombError`` or failed
inside the run."""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import pytest

pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

from _fabricate import checker_image, make_task  # noqa: E402
from spatialact.cli.main import main  # noqa: E402
from spatialact.evaluation.episode import EpisodeConfig, TaskInputError, check_runnable, run_episode  # noqa: E402
from spatialact.image_files import MAX_IMAGE_PIXELS, ImageFileError, image_file_problem, read_image_rgb  # noqa: E402
from spatialact.tasks import save_tasks  # noqa: E402


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bomb_png(w: int, h: int) -> bytes:
    """A well-formed PNG header claiming ``w``×``h`` RGB pixels, with a few rows of data (a decompression bomb's
    header: what a reader decides on before decoding)."""
    raw = zlib.compress(b"\0" * (1 + 3 * w) * 4, 9)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + _chunk(b"IDAT", raw) + _chunk(b"IEND", b""))


def _save_png(path: Path, seed: int = 0) -> Path:
    Image.fromarray(checker_image(seed=seed)).save(path)
    return path


def _eval(capsys, tf: Path, out: Path, *extra) -> tuple[int, str]:
    code = main(["eval", "--no-progress", "--tasks", str(tf), "--out", str(out), "--agent", "oracle", *extra])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def _one_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    return lines[0]


def _image_task_file(folder: Path, bad: bytes | None, field: str = "start_image", n: int = 2, **kw) -> Path:
    """``n`` tasks with start and goal images; the last task's ``field`` image holds ``bad``."""
    folder.mkdir(parents=True, exist_ok=True)
    tasks = []
    for i in range(n):
        s, g = _save_png(folder / f"s{i}.png", i), _save_png(folder / f"g{i}.png", 50 + i)
        if i == n - 1 and bad is not None:
            (s if field == "start_image" else g).write_bytes(bad)
        tasks.append(make_task(f"t{i}", start_image=str(s), goal_image=str(g), answer_format="flat", **kw))
    return save_tasks(tasks, folder / "tasks.jsonl")


# ----- the limit and the reader ----------------------------------------------------------------------------------
def test_the_image_size_limit_is_read_from_the_header(tmp_path):
    assert MAX_IMAGE_PIXELS == 64_000_000
    at = tmp_path / "at.png"
    at.write_bytes(bomb_png(8000, 8000))  # exactly the limit: the header passes (its data is cut short)
    assert image_file_problem(at, decode=False) is None
    over = tmp_path / "over.png"
    over.write_bytes(bomb_png(8001, 8000))  # one column over: below Pillow's own limit, refused by ours
    assert image_file_problem(over, decode=False).startswith("8001×8000 pixels is over the image size limit of 64 "
                                                             "megapixels")
    huge = tmp_path / "huge.png"
    huge.write_bytes(bomb_png(20000, 20000))  # over Pillow's limit: its DecompressionBombError, as one line
    assert "over the image size limit of 64 megapixels" in image_file_problem(huge)
    with pytest.raises(ImageFileError, match=f"^{huge}: over the image size limit"):
        read_image_rgb(huge)


def test_the_reader_names_each_kind_of_unusable_file(tmp_path):
    good = _save_png(tmp_path / "good.png")
    assert image_file_problem(good) is None and read_image_rgb(good).shape == (32, 48, 3)
    cut = tmp_path / "cut.png"
    cut.write_bytes(good.read_bytes()[:80])
    assert image_file_problem(cut, decode=False) is None  # the header alone is fine
    assert image_file_problem(cut).startswith("cannot be decoded")
    text = tmp_path / "passwd"
    text.write_text("root:x:0:0:root:/root:/bin/bash\n")
    assert image_file_problem(text).startswith("not an image Pillow can read")
    assert image_file_problem(tmp_path / "gone.png") == "no such file"
    assert image_file_problem(tmp_path) == "not a file"
    fifo = tmp_path / "fifo.png"
    os.mkfifo(fifo)
    assert image_file_problem(fifo) == "not a regular file"  # never opened: a FIFO would block the reader


# ----- eval: refused before the run ------------------------------------------------------------------------------
@pytest.mark.parametrize("what,bad,expect", [
    ("bomb", bomb_png(20000, 20000), "over the image size limit of 64 megapixels"),
    ("over our limit", bomb_png(9000, 9000), "9000×9000 pixels is over the image size limit"),
    ("truncated", None, "cannot be decoded"),
    ("text", b"root:x:0:0:root:/root:/bin/bash\n", "not an image Pillow can read"),
])
@pytest.mark.parametrize("field", ["start_image", "goal_image"])
def test_eval_refuses_an_unusable_task_image_before_the_run(tmp_path, capsys, what, bad, expect, field):
    if bad is None:
        good = _save_png(tmp_path / "model.png")
        bad = good.read_bytes()[:80]  # header intact, pixels cut off: passed the old header check
    tf = _image_task_file(tmp_path / "tasks", bad, field)
    out = tmp_path / "run"
    code, err = _eval(capsys, tf, out, "--env", "none")
    line = _one_line(err)
    path = tmp_path / "tasks" / ("s1.png" if field == "start_image" else "g1.png")
    assert code == 2 and f"task 't1': {field} {path}: {expect}" in line
    assert not out.exists()  # nothing written: not one episode ran


def test_recorded_frames_of_a_task_with_a_scene_are_checked_too(tmp_path, capsys):
    """One-shot with a simulator shows a task's recorded start and goal images (not renders): they are read, so
    they are checked — before, a text file there passed and the run stopped at that task."""
    tf = _image_task_file(tmp_path / "tasks", b"not an image", scene={"generator": "room", "seed": 0})
    out = tmp_path / "run"
    code, err = _eval(capsys, tf, out)
    assert code == 2 and f"task 't1': start_image {tmp_path / 'tasks' / 's1.png'}: not an image" in _one_line(err)
    assert not out.exists()


def test_an_image_replaced_after_the_check_still_stops_the_run_in_one_line(tmp_path):
    tf_dir = tmp_path / "tasks"
    tf_dir.mkdir()
    s, g = _save_png(tf_dir / "s.png"), _save_png(tf_dir / "g.png", 1)
    task = make_task("t0", start_image=str(s), goal_image=str(g), answer_format="flat")
    cfg = EpisodeConfig(env="none")
    assert check_runnable(task, cfg) is None
    s.write_bytes(bomb_png(20000, 20000))
    from spatialact.agents import make_agent

    with pytest.raises(TaskInputError, match=f"^task 't0': start_image {s}: over the image size limit"):
        run_episode(task, make_agent("oracle"), cfg)


# ----- scenes: a layout that is a path, a recording that is no trajectory -----------------------------------------
def test_a_room_layout_that_is_no_layout_is_refused_before_the_run(tmp_path, capsys):
    tasks = [make_task("r0", scene={"generator": "room", "seed": 1}),
             make_task("r1", scene={"generator": "room", "seed": 2, "params": {"layout": "../../etc"}})]
    tf = save_tasks(tasks, tmp_path / "tasks.jsonl")
    out = tmp_path / "run"
    code, err = _eval(capsys, tf, out)
    assert code == 2 and not out.exists()
    assert _one_line(err).endswith("task 'r1': scene.params.layout must be one of living, kitchen, office, "
                                   "playroom, got '../../etc'")
    assert check_runnable(make_task("ok", scene={"generator": "room", "seed": 2, "params": {"layout": "office"}}),
                          EpisodeConfig()) is None


@pytest.mark.parametrize("fmt", ["tum", "kitti", "npz"])
def test_a_replay_recording_that_is_no_trajectory_is_refused_before_the_run(tmp_path, capsys, fmt):
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n")
    scene = {"type": "replay", "source": "camera_path", "trajectory": str(passwd), "keyframes": [0, 1],
             "room": {"center": [0, 0, 1.5], "size": [6, 6, 3], "up": "+z"}}
    scene["format"] = fmt
    tf = save_tasks([make_task("p0", scene=scene)], tmp_path / "tasks.jsonl")
    out = tmp_path / "run"
    code, err = _eval(capsys, tf, out)
    line = _one_line(err)
    assert code == 2 and not out.exists()
    assert f"task 'p0': scene.trajectory: {passwd}:" in line


def test_a_replay_recording_that_is_a_device_is_never_read(tmp_path):
    scene = {"type": "replay", "source": "camera_path", "trajectory": "/dev/zero", "keyframes": [0, 1]}
    assert check_runnable(make_task("p0", scene=scene), EpisodeConfig()) == (
        "task 'p0': scene.trajectory /dev/zero: not a regular file or a folder (the replay scene's recording)")


# ----- question files: the same limit ------------------------------------------------------------------------------
def test_questions_score_refuses_a_bomb_image_before_asking(tmp_path, capsys):
    pytest.importorskip("pybullet")
    from spatialact.questions import build_questions, load_questions

    res = build_questions(tmp_path / "q.jsonl", n=1, seed=0, size=64, types=["depth"])
    q = load_questions(res.path)[0]
    img = Path(q["images"][0]["path"])
    img.write_bytes(bomb_png(9000, 9000))  # a well-formed PNG: the prompt's own check sent it as it is
    out = tmp_path / "run"
    code = main(["questions", "score", str(res.path), "--agent", "oracle", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and not out.exists()
    assert _one_line(err).endswith(f"question {q['id']!r}: field 'images': {img}: 9000×9000 pixels is over the "
                                   "image size limit of 64 megapixels (spatialact.image_files.MAX_IMAGE_PIXELS)")


def test_questions_score_refuses_a_bomb_in_another_format_before_any_reader_decodes_it(tmp_path, capsys):
    """A BMP claiming 20 000 × 20 000 pixels: the prompt re-encodes non-PNG images, and Pillow's open raised
    ``DecompressionBombError`` there (a traceback)."""
    pytest.importorskip("pybullet")
    from spatialact.questions import build_questions, load_questions

    res = build_questions(tmp_path / "q.jsonl", n=1, seed=0, size=64, types=["depth"])
    q = load_questions(res.path)[0]
    img = Path(q["images"][0]["path"])
    header = struct.pack("<2sIHHI", b"BM", 54, 0, 0, 54) + struct.pack("<IiiHHIIiiII", 40, 20000, 20000, 1, 24, 0,
                                                                       0, 0, 0, 0, 0)
    img.write_bytes(header + b"\0" * 64)
    code = main(["questions", "score", str(res.path), "--agent", "oracle", "--out", str(tmp_path / "run"),
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"question {q['id']!r}: field 'images': {img}: over the image size limit of 64 megapixels" in _one_line(err)
