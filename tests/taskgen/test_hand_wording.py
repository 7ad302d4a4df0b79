"""Hand tasks say "hand" (its wrist), never "the gripper": in the tasks `tasks procedural --kind hand` and the
environment sample, in the shipped example file and in every prompt of a hand task (the answer key "gripper" is the
format's name and stays). The prompt version changed with that wording, and resuming a run made with another prompt
version is refused in one line that says so plainly."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from spatialact.agents import PROMPT_VERSION, build_prompt

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _text(messages) -> str:
    return "\n".join(p["text"] for m in messages for p in (m["content"] if isinstance(m["content"], list)
                                                            else [{"type": "text", "text": m["content"]}])
                     if p["type"] == "text")


def _without_answer_key(text: str) -> str:
    return text.replace('"gripper"', "")


@pytest.fixture(scope="module")
def hand_tasks():
    pytest.importorskip("pybullet")
    from spatialact.taskgen import procedural_tasks

    return procedural_tasks("hand", 4, seed=0)


def test_procedural_hand_tasks_name_the_hand(hand_tasks):
    reach = [t for t in hand_tasks if t.tags.get("variant") == "reach"]
    assert reach
    for t in reach:
        assert t.instruction == "Move the hand (its wrist) from its start pose to the goal pose."
    assert all("gripper" not in (t.instruction or "") for t in hand_tasks)


def test_manipulation_tasks_keep_the_gripper():
    pytest.importorskip("pybullet")
    from spatialact.taskgen import procedural_tasks

    t = next(t for t in procedural_tasks("manip", 4, seed=0) if t.tags.get("variant") == "reach")
    assert t.instruction == "Move the gripper from its start pose to the goal pose."


def test_ids_come_from_the_poses_and_the_shipped_examples_say_hand(hand_tasks):
    """The regenerated example file: same ids and poses as the generator gives, hand wording, nothing else new."""
    shipped = {json.loads(x)["id"]: json.loads(x) for x in (EXAMPLES / "tasks.jsonl").read_text().splitlines()}
    for t in hand_tasks:
        rec = shipped[t.id]
        assert np.allclose(rec["start_pose"], t.start_pose, atol=1e-12)
        assert np.allclose(rec["goal_pose"], t.goal_pose, atol=1e-12)
        assert rec["instruction"] == t.instruction
    assert not any("gripper" in (r.get("instruction") or "") for r in shipped.values() if r["kind"] == "hand")


@pytest.mark.parametrize("fmt", ["stepped", "flat", "vector"])
@pytest.mark.parametrize("mode", ["one-shot", "closed-loop"])
def test_no_hand_prompt_says_gripper(hand_tasks, fmt, mode):
    rgb = np.zeros((8, 8, 3), np.uint8)
    for t in hand_tasks:
        messages, _ = build_prompt(t.with_(answer_format=fmt), {"rgb": rgb, "goal_rgb": rgb}, mode)
        text = _without_answer_key(_text(messages))
        assert not re.search(r"gripper", text, re.I), (t.id, fmt, mode)
        assert "hand" in text


def test_the_prompt_version_changed():
    assert PROMPT_VERSION == "spatialact-l4-v2"


def test_resuming_with_another_prompt_version_is_refused_plainly(server, monkeypatch, tmp_path, capsys):
    """A run made with the old prompt (its config.json holding v1, or — made before the version was part of the
    configuration — only its provenance) is refused in one line naming both versions."""
    pytest.importorskip("openai")
    from _fabricate import checker_image, make_task
    from PIL import Image

    from spatialact.cli.main import main
    from spatialact.tasks import save_tasks

    Image.fromarray(checker_image()).save(tmp_path / "s.png")
    save_tasks([make_task("h", kind="hand", grippers=[1], start_image=str(tmp_path / "s.png"),
                          goal_image=str(tmp_path / "s.png"))], tmp_path / "t.jsonl")
    monkeypatch.setenv("SPATIALACT_TEST_KEY", "k")
    out = tmp_path / "run"
    argv = ["eval", "--tasks", str(tmp_path / "t.jsonl"), "--agent", "openai", "--agent-arg", "model=m",
            "--agent-arg", f"base_url={server.url}", "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY",
            "--env", "none", "--out", str(out), "--no-progress", "--json"]
    assert main(argv) == 0
    capsys.readouterr()
    stored = json.loads((out / "config.json").read_text())
    assert stored["config"]["prompt_version"] == PROMPT_VERSION
    assert main(argv) == 0  # the same prompt: resumes
    capsys.readouterr()

    stored["config"]["prompt_version"] = "spatialact-l4-v1"
    (out / "config.json").write_text(json.dumps(stored))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"the prompt changed since this run was made (prompt version spatialact-l4-v1 → {PROMPT_VERSION}" in err

    del stored["config"]["prompt_version"]  # a run stored before the version was part of the configuration
    stored["provenance"]["agent"]["params"]["prompt_version"] = "spatialact-l4-v1"
    (out / "config.json").write_text(json.dumps(stored))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"(prompt version spatialact-l4-v1 → {PROMPT_VERSION}" in err and err.count("\n") == 1
