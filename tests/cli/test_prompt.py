"""`spatialact prompt`: prints the exact prompt and writes the images an agent would receive."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
from PIL import Image

from _fabricate import make_task
from spatialact.agents import PROMPT_VERSION
from spatialact.cli.main import main
from spatialact.tasks import save_tasks


@pytest.fixture
def task_file(tmp_path):
    rng = np.random.default_rng(0)
    start, goal = (rng.integers(0, 256, (20, 30, 3), dtype=np.uint8) for _ in range(2))
    Image.fromarray(start).save(tmp_path / "s.png")
    Image.fromarray(goal).save(tmp_path / "g.png")
    t = make_task("nav:001", answer_format="flat", start_image=str(tmp_path / "s.png"),
                  goal_image=str(tmp_path / "g.png"))
    t2 = make_task("noimg", answer_format="stepped")
    t3 = make_task("room:001", answer_format="flat", start_image=str(tmp_path / "s.png"),
                   goal_image=str(tmp_path / "g.png"), scene={"generator": "room", "seed": 0})
    save_tasks([t, t2, t3], tmp_path / "tasks.jsonl")
    return tmp_path / "tasks.jsonl", start, goal


def test_prompt_prints_text_and_writes_images(task_file, tmp_path, capsys):
    path, start, goal = task_file
    out = tmp_path / "out"
    assert main(["prompt", "nav:001", "--tasks", str(path), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Visual Navigation" in text and "0.0626 metres per step" in text and PROMPT_VERSION in text
    assert "[image: " in text and "image_1_start.png" in text
    assert np.array_equal(np.asarray(Image.open(out / "image_1_start.png")), start)
    assert np.array_equal(np.asarray(Image.open(out / "image_2_goal.png")), goal)
    msgs = json.loads((out / "messages.json").read_text())
    urls = [p["image_url"]["url"] for p in msgs[1]["content"] if p["type"] == "image_url"]
    dec = np.asarray(Image.open(io.BytesIO(base64.b64decode(urls[1].split(",", 1)[1]))))
    assert np.array_equal(dec, goal)
    assert (out / "prompt.txt").read_text().startswith("# prompt for task nav:001")


def test_prompt_closed_loop_and_json(task_file, tmp_path, capsys):
    path, _, _ = task_file
    assert main(["prompt", "room:001", "--tasks", str(path), "--mode", "closed-loop", "--json", "--out",
                 str(tmp_path / "o2")]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["mode"] == "closed-loop" and len(js["images"]) == 2
    texts = [p["text"] for p in js["messages"][1]["content"] if p["type"] == "text"]
    assert any("ONLY the next single step" in t for t in texts)


def test_prompt_errors(task_file, capsys):
    path, _, _ = task_file
    assert main(["prompt", "missing", "--tasks", str(path)]) == 2
    assert "no task with id 'missing'" in capsys.readouterr().err
    assert main(["prompt", "noimg", "--tasks", str(path)]) == 2
    assert "no scene to render" in capsys.readouterr().err
    # closed-loop needs a scene, as eval says: no prompt for an episode that cannot run
    assert main(["prompt", "nav:001", "--tasks", str(path), "--mode", "closed-loop"]) == 2
    assert "task 'nav:001' has no scene (scene: null), so it cannot run closed-loop" in capsys.readouterr().err


@pytest.mark.slow
def test_prompt_renders_a_procedural_task(tmp_path, capsys):
    from spatialact.taskgen import procedural_tasks

    tasks = procedural_tasks("nav", 1, seed=0)
    save_tasks(tasks, tmp_path / "p.jsonl")
    out = tmp_path / "o"
    rc = main(["prompt", tasks[0].id, "--tasks", str(tmp_path / "p.jsonl"), "--out", str(out), "--width", "64",
               "--height", "48"])
    assert rc == 0, capsys.readouterr().err
    im = np.asarray(Image.open(out / "image_1_start.png"))
    assert im.shape == (48, 64, 3) and im.std() > 1


def test_prompt_renders_with_the_gl_renderer(tmp_path, capsys):
    """--renderer gl draws the same view with the project's renderer: not TinyRenderer's pixels, the same scene."""
    pytest.importorskip("spatialact.envs")
    from spatialact.envs.gl import gl_available

    ok, why = gl_available()
    if not ok:
        pytest.skip(f"the gl renderer cannot start here: {why}")
    from spatialact.taskgen import procedural_tasks

    tasks = procedural_tasks("nav", 1, seed=0)
    save_tasks(tasks, tmp_path / "p.jsonl")
    ims = {}
    for r in ("tiny", "gl"):
        rc = main(["prompt", tasks[0].id, "--tasks", str(tmp_path / "p.jsonl"), "--out", str(tmp_path / r),
                   "--width", "64", "--height", "48", "--renderer", r])
        assert rc == 0, capsys.readouterr().err
        ims[r] = np.asarray(Image.open(tmp_path / r / "image_1_start.png")).astype(float)
    assert ims["gl"].shape == ims["tiny"].shape == (48, 64, 3)
    assert np.abs(ims["gl"] - ims["tiny"]).mean() > 2  # another renderer drew it
    a, b = ims["gl"].mean(2).ravel(), ims["tiny"].mean(2).ravel()
    assert np.corrcoef(a, b)[0, 1] > 0.5, np.corrcoef(a, b)[0, 1]  # the same view


def test_prompt_size_takes_wxh_and_a_suite(tmp_path, capsys):
    """--size WxH as eval takes it (a rendered view of W x H pixels); --suite as eval takes it."""
    out = tmp_path / "o"
    rc = main(["prompt", "nav-0-0000", "--suite", "default:1", "--size", "40x24", "--renderer", "tiny", "--out",
               str(out), "--json"])
    assert rc == 0, capsys.readouterr().err
    assert np.asarray(Image.open(out / "image_1_start.png")).shape == (24, 40, 3)
    with pytest.raises(SystemExit) as e:
        main(["prompt", "nav-0-0000", "--suite", "default:1", "--size", "40y24"])
    assert e.value.code == 2
    assert "is not an image size: N (N x N pixels) or WxH" in capsys.readouterr().err


def test_prompt_text_refuses_batch_options(task_file, tmp_path, capsys):
    path, _, _ = task_file
    assert main(["prompt", "--tasks", str(path)]) == 2
    assert "name a TASK_ID" in capsys.readouterr().err
    assert main(["prompt", "nav:001", "--tasks", str(path), "--agent-arg", "model=m"]) == 2
    assert "--agent-arg goes with --format openai-batch" in capsys.readouterr().err
