"""Cue prompting (matches, depth, size): the cue texts and images with hand-computed numbers, the prompt version and
cache key, and the refusal before a run where the environment cannot supply a cue."""

from __future__ import annotations

import base64
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from _fabricate import make_task
from spatialact.agents import AgentConfigError, PROMPT_VERSION, build_prompt, make_agent
from spatialact.agents.cues import cue_problem, parse_cues
from spatialact.agents.openai_agent import request_key
from spatialact.agents.prompts import prompt_version

pytest.importorskip("cv2")

K = np.array([[50.0, 0, 31.5], [0, 50.0, 31.5], [0, 0, 1]])


def _obs(depth=None):
    rng = np.random.default_rng(3)
    cur = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    o = {"rgb": cur, "goal_rgb": np.roll(cur, 4, axis=1), "mode": "one-shot",
         "depth": np.full((64, 64), 2.0, np.float32) if depth is None else depth, "intrinsics": K.copy()}
    return o


def _texts(messages):
    return [p["text"] for p in messages[1]["content"] if p["type"] == "text"]


def _images(messages):
    out = []
    for p in messages[1]["content"]:
        if p["type"] == "image_url":
            raw = base64.b64decode(p["image_url"]["url"].split(",", 1)[1])
            out.append(np.asarray(Image.open(io.BytesIO(raw)).convert("RGB")))
    return out


def test_parse_cues():
    assert parse_cues(None) == () and parse_cues("") == ()
    assert parse_cues("depth, MATCHES") == ("matches", "depth")
    assert parse_cues(["size", "depth", "size"]) == ("depth", "size")
    with pytest.raises(AgentConfigError, match=r"cues: unknown cue 'colour' \(expected any of matches, depth, size"):
        parse_cues("matches,colour")
    with pytest.raises(AgentConfigError, match="cues must be a comma-separated list"):
        parse_cues(3)
    assert prompt_version() == PROMPT_VERSION
    assert prompt_version("size,matches") == PROMPT_VERSION + "+cues=matches,size"


def test_size_cue_numbers_by_hand():
    task = make_task()  # navigation: 0.0626 m and 0.0725 rad per unit
    messages, images = build_prompt(task, _obs(), cues=("size",))
    text = next(t for t in _texts(messages) if t.startswith("Cue (size"))
    # 64 px at fx = 50 and 2 m: 2.56 m across; 1 m is 25 px; a unit of truck 0.0626·50/2 = 1.565 px; dolly
    # 2/(2-0.0626) - 1 = 3.23 %; a unit of pan 50·tan(0.0725) = 3.63 px; field of view 2·atan(64/100) = 65.2°
    assert f"{math.degrees(2 * math.atan(64 / 100)):.1f} degrees" == "65.2 degrees"
    for piece in ("horizontal field of view of 65.2 degrees", "median depth of 2.00 m", "about 2.56 m across",
                  "about 25 px wide", "by about 1.6 px;", "about 3.2% larger", "by about 3.6 px sideways"):
        assert piece in text, piece
    assert len(images) == 2  # the size cue is text only
    manip = make_task(kind="manip", grippers=[0])
    text = next(t for t in _texts(build_prompt(manip, _obs(), cues=("size",))[0]) if t.startswith("Cue (size"))
    assert "moves the gripper" in text and "0.5 px" in text  # 0.02 m · 50 / 2 m


def test_depth_and_matches_cues_images_and_texts():
    task = make_task()
    depth = np.tile(np.linspace(1.0, 5.0, 64, dtype=np.float32), (64, 1))  # near on the left, far on the right
    messages, images = build_prompt(task, _obs(depth), cues="depth,matches")
    assert [(im.label, im.role) for im in images] == [("Image 1", "start"), ("Image 2", "goal"),
                                                      ("Image 3", "matches"), ("Image 4", "depth")]
    sent = _images(messages)
    assert len(sent) == 4 and all(np.array_equal(a, im.rgb) for a, im in zip(sent, images))
    m_text = next(t for t in _texts(messages) if t.startswith("Cue (correspondences)"))
    assert "median of 4.0 px right and 0.0 px vertically" in m_text and "Image 3 (matches cue):" in m_text
    assert images[2].rgb.shape == (64, 128, 3)
    d_text = next(t for t in _texts(messages) if t.startswith("Cue (depth)"))
    assert "Median depth 3.00 m" in d_text and "(10, 10): 1.63 m" in d_text
    d_img = images[3].rgb.astype(int)
    assert d_img[:, 2, 0].mean() > d_img[:, 2, 2].mean() + 50  # near: red
    assert d_img[:, 61, 2].mean() > d_img[:, 61, 0].mean() + 50  # far: blue
    # the cues come after the views and before the rules
    texts = _texts(messages)
    assert texts.index(m_text) > 0 and texts[-1].startswith("1. Action Space")
    with pytest.raises(ValueError, match="need the current view's depth"):
        build_prompt(task, dict(_obs(), depth=None), cues=("depth",))


def test_cue_problem_names_the_task_and_the_cue():
    task = make_task()
    assert cue_problem(task, ("matches",), {"pose"}) is None
    assert cue_problem(task, ("matches", "depth", "size"), {"pose", "depth", "intrinsics"}) is None
    why = cue_problem(task, ("size",), {"pose", "depth"})
    assert why.startswith("task 't0': --agent-arg cues=size needs the intrinsics") and "\n" not in why


def test_the_variant_is_part_of_the_prompt_version_and_the_cache_key(server, tmp_path, api_key):
    kw = dict(model="m", base_url=server.url, api_key_env="SPATIALACT_TEST_KEY", cache_dir=tmp_path / "c",
              max_retries=0)
    plain, cued = make_agent("openai", **kw), make_agent("openai", cues="depth,matches", **kw)
    assert cued.describe()["params"]["prompt_version"] == PROMPT_VERSION + "+cues=matches,depth"
    assert cued.describe()["params"]["cues"] == ["matches", "depth"]
    req = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    assert request_key(req, plain.prompt_version) != request_key(req, cued.prompt_version)
    task = make_task()
    for agent in (plain, cued, cued):
        agent.reset(task)
        assert agent.act(_obs()).parse.ok
    assert len(server.requests) == 2  # the cued agent's second turn came from the cache; the plain one's did not
    assert len(_images(server.requests[1]["body"]["messages"])) == 4
    entries = [json.loads(p.read_text()) for p in Path(tmp_path / "c").rglob("*.json")]
    assert sorted(e["prompt_version"] for e in entries) == sorted([PROMPT_VERSION, cued.prompt_version])


def _image_task_file(tmp_path, scene=None):
    from spatialact.tasks import save_tasks

    rng = np.random.default_rng(0)
    paths = []
    for name in ("start.png", "goal.png"):
        Image.fromarray(rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)).save(tmp_path / name)
        paths.append(str(tmp_path / name))
    task = make_task(start_image=paths[0], goal_image=paths[1], scene=scene)
    f = tmp_path / "tasks.jsonl"
    save_tasks([task], f)
    return task, f


def test_a_cue_the_environment_cannot_supply_is_refused_before_the_run(server, tmp_path, api_key, capsys):
    pytest.importorskip("openai")
    from spatialact.cli.main import main

    _, f = _image_task_file(tmp_path)
    base = ["eval", "--tasks", str(f), "--env", "none", "--agent", "openai", "--agent-arg", "model=m",
            "--agent-arg", f"base_url={server.url}", "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY", "--no-progress",
            "--json"]
    capsys.readouterr()
    out = tmp_path / "refused"
    assert main(base + ["--agent-arg", "cues=matches,depth", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cues=depth needs the depth of the current view" in err
    assert not out.exists() and not server.requests
    # the correspondence cue needs only the two images: it runs
    out = tmp_path / "matches"
    assert main(base + ["--agent-arg", "cues=matches", "--out", str(out)]) == 0
    assert len(server.requests) == 1 and len(_images(server.requests[0]["body"]["messages"])) == 3
    rec = json.loads((out / "results.jsonl").read_text())
    assert rec["provenance"]["agent"]["params"]["prompt_version"] == PROMPT_VERSION + "+cues=matches"


def test_a_one_shot_task_showing_recorded_frames_has_no_depth(tmp_path):
    from spatialact.evaluation.episode import EpisodeConfig, observation_supplies
    from spatialact.evaluation.runner import TaskNotRunnable, check_tasks

    task, _ = _image_task_file(tmp_path, scene={"generator": "room", "seed": 0})

    class Cued:
        def check_task(self, task, supplies):
            return cue_problem(task, ("depth",), supplies)

    assert observation_supplies(task, EpisodeConfig(mode="one-shot")) == {"pose"}
    with pytest.raises(TaskNotRunnable, match="cues=depth needs the depth"):
        check_tasks([task], EpisodeConfig(mode="one-shot"), Cued())
    # closed-loop renders the views: depth, intrinsics (and the simulator for privileged tools)
    assert observation_supplies(task, EpisodeConfig(mode="closed-loop")) >= {"depth", "intrinsics", "simulator"}
    check_tasks([task], EpisodeConfig(mode="closed-loop"), Cued())


def test_rendered_views_give_every_cue(server, tmp_path, api_key):
    pytest.importorskip("openai")
    pytest.importorskip("pybullet")
    from spatialact.cli.main import main

    out = tmp_path / "run"
    assert main(["eval", "--suite", "nav:1", "--size", "64", "--renderer", "tiny", "--agent", "openai",
                 "--agent-arg", "model=m", "--agent-arg", f"base_url={server.url}", "--agent-arg",
                 "api_key_env=SPATIALACT_TEST_KEY", "--agent-arg", "cues=matches,depth,size", "--no-progress",
                 "--json", "--out", str(out)]) == 0
    body = server.requests[0]["body"]
    texts = _texts(body["messages"])
    assert len(_images(body["messages"])) == 4
    assert any(t.startswith("Cue (depth)") for t in texts) and any(t.startswith("Cue (size and scale)") for t in texts)
    rec = json.loads((out / "results.jsonl").read_text())
    assert rec["provenance"]["agent"]["params"]["prompt_version"] == PROMPT_VERSION + "+cues=matches,depth,size"


def test_spatialact_prompt_shows_the_cued_prompt(tmp_path, capsys):
    pytest.importorskip("pybullet")
    from spatialact.cli.main import main
    from spatialact.taskgen.suites import builtin_suite
    from spatialact.tasks import save_tasks

    task, f = _image_task_file(tmp_path)
    capsys.readouterr()
    assert main(["prompt", task.id, "--tasks", str(f), "--cues", "depth", "--out", str(tmp_path / "p0")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--cues depth needs the depth of the current view" in err
    assert main(["prompt", task.id, "--tasks", str(f), "--cues", "nope", "--out", str(tmp_path / "p0")]) == 2
    assert "--cues: unknown cue 'nope'" in capsys.readouterr().err
    assert main(["prompt", task.id, "--tasks", str(f), "--cues", "matches", "--out", str(tmp_path / "p1")]) == 0
    assert (tmp_path / "p1" / "image_3_matches.png").is_file()
    rendered = builtin_suite("nav:1")[0]
    save_tasks([rendered], tmp_path / "r.jsonl")
    out = tmp_path / "p2"
    assert main(["prompt", rendered.id, "--tasks", str(tmp_path / "r.jsonl"), "--cues", "size,depth,matches",
                 "--width", "96", "--height", "96", "--out", str(out)]) == 0
    text = (out / "prompt.txt").read_text()
    assert f"prompt version {PROMPT_VERSION}+cues=matches,depth,size" in text and "Cue (size and scale)" in text
    assert sorted(p.name for p in out.glob("*.png")) == ["image_1_start.png", "image_2_goal.png",
                                                         "image_3_matches.png", "image_4_depth.png"]
