"""`spatialact prompt` shows what `spatialact eval` sends: the messages prompt writes (messages.json) are the
messages eval's openai agent sends to a chat-completions server on loopback, byte for byte (images included), in
one-shot mode from the task's image files, in closed-loop mode from the rendered scene, and with both commands'
defaults (one definition: mode, renderer, image size). And prompt's inputs that used to end in a traceback — a
decompression-bomb PNG, a text file, a truncated PNG, a 100000-pixel side — are one line, exit 2."""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from _fabricate import make_task
from spatialact.cli.main import main
from spatialact.tasks import save_tasks

pytest.importorskip("openai")
pytest.importorskip("pybullet")


@pytest.fixture
def tasks(tmp_path):
    rng = np.random.default_rng(0)
    for name in ("s", "g"):
        Image.fromarray(rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)).save(tmp_path / f"{name}.png")
    room = {"generator": "room", "seed": 0}
    ts = [make_task("files", answer_format="flat", start_image=str(tmp_path / "s.png"),
                    goal_image=str(tmp_path / "g.png")),
          make_task("room-files", answer_format="stepped", start_image=str(tmp_path / "s.png"),
                    goal_image=str(tmp_path / "g.png"), scene=room),
          make_task("room", answer_format="stepped", scene=room)]
    save_tasks(ts, tmp_path / "tasks.jsonl")
    return tmp_path / "tasks.jsonl"


def _sent(server, monkeypatch, tmp_path, tasks, task_id, extra, out):
    """The messages of eval's first request for ``task_id`` (one task file holding only it)."""
    from spatialact.tasks import load_tasks

    one = tmp_path / f"{out}.jsonl"
    save_tasks([t for t in load_tasks(tasks) if t.id == task_id], one, relative_to=tasks.parent)
    monkeypatch.setenv("SPATIALACT_TEST_KEY", "k")
    n = len(server.requests)
    assert main(["eval", "--tasks", str(one), "--agent", "openai", "--agent-arg", "model=m", "--agent-arg",
                 f"base_url={server.url}", "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY", "--agent-arg",
                 "cache_dir=null", "--out", str(tmp_path / out), "--no-progress", "--json", *extra]) == 0
    return server.requests[n]["body"]["messages"]


def _shown(tmp_path, tasks, task_id, extra, out, capsys):
    capsys.readouterr()
    assert main(["prompt", task_id, "--tasks", str(tasks), "--out", str(tmp_path / out), "--json", *extra]) == 0, \
        capsys.readouterr().err
    capsys.readouterr()
    return json.loads((tmp_path / out / "messages.json").read_text())


@pytest.mark.parametrize("task_id, mode, extra", [
    ("files", "one-shot", []),  # no scene: the image files
    ("room-files", "one-shot", ["--size", "48", "--renderer", "tiny"]),  # one-shot with both files: the files
    ("room-files", "closed-loop", ["--size", "48", "--renderer", "tiny"]),  # closed-loop: rendered, not the files
])
def test_prompt_messages_are_the_messages_eval_sends(server, monkeypatch, tmp_path, tasks, capsys, task_id, mode,
                                                     extra):
    sent = _sent(server, monkeypatch, tmp_path, tasks, task_id, ["--mode", mode, *extra], f"run-{mode}")
    shown = _shown(tmp_path, tasks, task_id, ["--mode", mode, *extra], f"p-{mode}", capsys)
    assert shown == sent
    if mode == "closed-loop":  # the rendered view, not the task's 30x20 file
        im = np.asarray(Image.open(tmp_path / f"p-{mode}" / "image_1_current.png"))
        assert im.shape == (48, 48, 3)


@pytest.mark.slow
def test_prompt_defaults_are_evals(server, monkeypatch, tmp_path, tasks, capsys):
    """No mode, renderer or size given to either: the same messages (auto renderer, 384² when gl renders)."""
    sent = _sent(server, monkeypatch, tmp_path, tasks, "room", [], "run-default")
    shown = _shown(tmp_path, tasks, "room", [], "p-default", capsys)
    assert shown == sent
    from spatialact.envs.rendering import default_image_size

    side = default_image_size("auto", True)
    assert np.asarray(Image.open(tmp_path / "p-default" / "image_1_start.png")).shape == (side, side, 3)


def test_prompt_and_eval_defaults_have_one_definition():
    from spatialact.cli.main import build_parser
    from spatialact.evaluation.episode import EpisodeConfig

    for cmd in ("eval", "prompt"):
        args = build_parser(cmd).parse_args([cmd, *(["x", "--tasks", "t"] if cmd == "prompt" else ["--out", "o"])])
        assert (args.mode, args.renderer, args.size) == (EpisodeConfig.mode, EpisodeConfig.renderer, None), cmd


# ----- inputs that used to end in a traceback --------------------------------------------------------------------
def _png_header_only(path, w, h):
    """A PNG that claims w × h pixels: signature and IHDR, then an IDAT of a few bytes and IEND (a bomb's header)."""
    def chunk(t, data):
        return struct.pack(">I", len(data)) + t + data + struct.pack(">I", zlib.crc32(t + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64))
                     + chunk(b"IEND", b""))


@pytest.mark.parametrize("make, problem", [
    (lambda p: _png_header_only(p, 100_000, 100_000), "over the image size limit"),
    (lambda p: p.write_bytes(open("/etc/passwd", "rb").read()), "not an image"),
    (lambda p: p.write_bytes(Image.new("RGB", (64, 64)).tobytes()[:10]), "not an image"),
    ("truncated", "cannot be decoded"),
])
def test_bad_task_images_are_one_line(tmp_path, capsys, make, problem):
    bad = tmp_path / "bad.png"
    if make == "truncated":
        rng = np.random.default_rng(1)
        Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(bad)
        bad.write_bytes(bad.read_bytes()[:300])
    else:
        make(bad)
    Image.new("RGB", (8, 8)).save(tmp_path / "ok.png")
    save_tasks([make_task("t", start_image=str(bad), goal_image=str(tmp_path / "ok.png"))], tmp_path / "t.jsonl")
    rc = main(["prompt", "t", "--tasks", str(tmp_path / "t.jsonl"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"task 't': start_image {bad}: " in err and problem in err
    assert not (tmp_path / "o").exists()  # refused before anything was written


@pytest.mark.parametrize("argv, message", [
    (["--width", "100000", "--height", "100000"], "--width 100000: must be between 8 and 4096 pixels"),
    (["--size", "100000"], "--size 100000: must be between 8 and 4096 pixels"),
    (["--size", "4"], "--size 4: must be between 8 and 4096 pixels"),
    (["--height", "0"], "--height 0: must be between 8 and 4096 pixels"),
])
def test_image_side_bounded_as_eval_bounds_it(tmp_path, tasks, capsys, argv, message):
    rc = main(["prompt", "room", "--tasks", str(tasks), "--out", str(tmp_path / "o"), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()
