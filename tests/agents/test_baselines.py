"""Baselines, make_agent and the prompt templates."""

from __future__ import annotations

import base64
import io
import math

import numpy as np
import pytest
from PIL import Image

from _fabricate import look_pose, make_task
from spatialact import geometry
from spatialact.action_space import ActionSequence, StepSizes, parse_response
from spatialact.agents import (AGENT_NAMES, PROMPT_VERSION, Agent, AgentConfigError, AgentTurn, build_prompt,
                               make_agent)


def _obs(mode="one-shot", **kw):
    rng = np.random.default_rng(1)
    o = {"rgb": rng.integers(0, 256, (24, 32, 3), dtype=np.uint8),
         "goal_rgb": rng.integers(0, 256, (24, 32, 3), dtype=np.uint8), "mode": mode, "step_index": 0}
    o.update(kw)
    return o


@pytest.mark.parametrize("name", ["random", "stay", "oracle", "noisy-oracle", "geometric"])
def test_baselines_follow_protocol(name):
    agent = make_agent(name, seed=3)
    assert isinstance(agent, Agent)
    d = agent.describe()
    assert d["agent"] == name and d["params"]["seed"] == 3
    task = make_task()
    agent.reset(task, mode="one-shot", seed=0)
    turn = agent.act(_obs())
    assert isinstance(turn, AgentTurn) and turn.error is None
    # the text goes through the real parser to the same sequence
    again = parse_response(turn.text, sizes=task.sizes)
    assert again.ok
    assert np.allclose(again.sequence.as_motions(), turn.parse.sequence.as_motions())


def test_make_agent_errors():
    with pytest.raises(AgentConfigError, match="unknown agent"):
        make_agent("gpt-magic")
    with pytest.raises(AgentConfigError, match="bad parameters"):
        make_agent("oracle", temperature=3)
    with pytest.raises(AgentConfigError, match="noise"):
        make_agent("noisy-oracle", noise=-1)
    with pytest.raises(AgentConfigError, match="seed"):
        make_agent("random", seed="x")
    assert set(AGENT_NAMES) >= {"random", "stay", "oracle", "noisy-oracle", "geometric", "openai"}


@pytest.mark.parametrize("fmt", ["flat", "stepped", "vector"])
def test_oracle_one_shot_is_exactly_gt(fmt):
    signed = [(-1, -4, 3, 0, -1, 0)] if fmt == "flat" else [(-1, -4, 3, 0, -1, 0), (2, 0, 0, 1, 0, -3)]
    kind = "manip" if fmt == "vector" else "nav"
    task = make_task(kind=kind, signed=signed, answer_format=fmt, grippers=[0, 1] if kind == "manip" else None)
    agent = make_agent("oracle")
    agent.reset(task)
    turn = agent.act(_obs())
    assert turn.parse.sequence == task.gt
    reparsed = parse_response(turn.text, sizes=task.sizes).sequence
    assert np.allclose(reparsed.to_poses(task.start_pose)[-1], task.goal_pose, atol=1e-12)
    assert list(reparsed.grippers()) == list(task.gt.grippers())


def _run_closed_loop(agent, task, T, max_steps=40):
    poses = [T]
    for k in range(max_steps):
        turn = agent.act({"pose": T, "mode": "closed-loop", "step_index": k})
        seq = turn.parse.sequence
        assert len(seq) == 1
        if seq.steps[0].is_stay():
            break
        T = T @ seq.steps[0].as_delta(seq.sizes)
        poses.append(T)
    return np.stack(poses)


@pytest.mark.parametrize("kind", ["nav", "manip"])
def test_oracle_closed_loop_reaches_an_off_grid_goal(kind):
    # goal far away (several capped steps) and not on the count grid
    T0 = look_pose([0.5, -0.3, 1.2], yaw=0.4)
    sizes = StepSizes.for_kind(kind)
    motion = np.array([0.91, -0.23, 1.37, 0.31, -0.52, 0.17]) * (sizes.translation / 0.0626)
    motion[3:] = [0.31, -0.52, 0.17]
    goal = T0 @ geometry.motion_to_delta(motion)
    task = make_task(kind=kind, start=T0).with_(goal_pose=goal)
    agent = make_agent("oracle")
    agent.reset(task, mode="closed-loop")
    poses = _run_closed_loop(agent, task, T0)
    assert len(poses) > 2  # needed more than one capped step
    pos_err = np.linalg.norm(poses[-1][:3, 3] - goal[:3, 3])
    rot_err = float(geometry.rotation_error(poses[-1], goal))
    assert pos_err <= task.success["position"] and rot_err <= task.success["rotation"]
    # quantisation bound: within half a unit per axis of the last step's frame
    assert pos_err <= math.sqrt(3) / 2 * sizes.translation + 1e-9


def test_oracle_closed_loop_without_pose_replays_gt():
    task = make_task(signed=[(1, 0, 0, 0, 0, 0), (0, 0, 2, 0, 0, 0)])
    agent = make_agent("oracle")
    agent.reset(task, mode="closed-loop")
    steps = [agent.act({"mode": "closed-loop", "step_index": k}).parse.sequence.steps[0] for k in range(3)]
    assert steps[0] == task.gt.steps[0] and steps[1] == task.gt.steps[1] and steps[2].is_stay()


def test_random_is_deterministic_per_seed():
    tasks = [make_task(f"t{i}", signed=[(1, 2, 3, 0, 0, 0)] * 3) for i in range(4)]

    def answers(seed):
        a = make_agent("random", seed=seed)
        out = []
        for t in tasks:
            a.reset(t, seed=0)
            out.append(a.act(_obs()).text)
        return out

    assert answers(7) == answers(7)
    assert answers(7) != answers(8)
    # order independence: visiting tasks in reverse gives the same answer per task
    a = make_agent("random", seed=7)
    rev = []
    for t in reversed(tasks):
        a.reset(t, seed=0)
        rev.append(a.act(_obs()).text)
    assert rev[::-1] == answers(7)
    assert len(ActionSequence.from_json(answers(7)[0], sizes=tasks[0].sizes)) == 3


def test_noisy_oracle_seeded_and_close():
    task = make_task(signed=[(3, -2, 5, 1, -1, 0)] * 2)
    a1, a2 = make_agent("noisy-oracle", seed=1, noise=1.0), make_agent("noisy-oracle", seed=1, noise=1.0)
    a1.reset(task), a2.reset(task)
    s1, s2 = a1.act(_obs()).parse.sequence, a2.act(_obs()).parse.sequence
    assert s1 == s2
    diff = np.abs(np.stack([s.signed_counts() for s in s1]) - np.stack([s.signed_counts() for s in task.gt]))
    assert diff.max() <= 6 and diff.sum() > 0
    a0 = make_agent("noisy-oracle", seed=1, noise=0.0)
    a0.reset(task)
    assert a0.act(_obs()).parse.sequence == task.gt


def test_stay():
    task = make_task(signed=[(1, 0, 0, 0, 0, 0)] * 3)
    a = make_agent("stay")
    a.reset(task)
    seq = a.act(_obs()).parse.sequence
    assert len(seq) == 3 and all(s.is_stay() for s in seq)
    a.reset(task, mode="closed-loop")
    assert len(a.act({"mode": "closed-loop"}).parse.sequence) == 1


def test_stay_answers_the_null_answer():
    from spatialact.scorers import null_answer, null_score, score_answer

    task = make_task(signed=[(1, 0, 0, 0, 0, 0), (0, 0, 2, 0, 0, 0)])
    a = make_agent("stay")
    a.reset(task)
    turn = a.act(_obs())
    assert turn.parse.sequence == null_answer(task) and len(null_answer(task)) == 2
    assert score_answer(turn.text, task)["score"] == null_score(task)  # its score is s0, through the parser
    # closed-loop: one Stay turn, which executes nothing: the null answer's empty sequence
    a.reset(task, mode="closed-loop")
    assert a.act({"mode": "closed-loop"}).parse.sequence.steps[0].is_stay()
    assert len(null_answer(task, "closed-loop")) == 0 and null_score(task, "closed-loop") == 0.0


# ----- prompts ------------------------------------------------------------------------------------------------

def _decode(url):
    assert url.startswith("data:image/png;base64,")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"))


def _texts(messages):
    return "\n".join(p["text"] for p in messages[1]["content"] if p["type"] == "text")


def test_prompt_nav_flat_three_images(tmp_path):
    ex = np.full((24, 32, 3), 77, np.uint8)
    Image.fromarray(ex).save(tmp_path / "ex.png")
    task = make_task(answer_format="flat",
                     example={"start_image": str(tmp_path / "ex.png"),
                              "sequence": ActionSequence.from_signed_counts([[0, -2, 1, 0, 0, 0]]).to_dict()})
    obs = _obs()
    messages, images = build_prompt(task, obs, "one-shot")
    assert [im.role for im in images] == ["example", "start", "goal"]
    urls = [p["image_url"]["url"] for p in messages[1]["content"] if p["type"] == "image_url"]
    assert len(urls) == 3
    assert np.array_equal(_decode(urls[0]), ex)
    assert np.array_equal(_decode(urls[1]), obs["rgb"]) and np.array_equal(_decode(urls[2]), obs["goal_rgb"])
    text = _texts(messages)
    assert "Example Action Sequence from Image 1 to Image 2" in text and '"Pedestal Up"' in text
    assert "0.0626 metres per step" in text and "0.0725 radians" in text
    assert "at most 10" in text
    assert "+X points right, +Y points down, +Z points forward" in text
    assert "Roll CCW: the image turns counter-clockwise; the camera's right side dips" in text
    assert '"actions" and "step_nums"' in text
    assert PROMPT_VERSION


def test_prompt_variants_state_sizes_and_format():
    manip = make_task(kind="manip", answer_format="vector", signed=[(1, 0, 2, 0, 0, 0)], grippers=[1])
    m, imgs = build_prompt(manip, _obs(), "one-shot")
    t = _texts(m)
    assert "[dx, dy, dz, d_roll, d_pitch, d_yaw, gripper]" in t and "0.02 metres per step" in t
    assert "gripper" in t and len(imgs) == 2
    hand = make_task(kind="hand", answer_format="stepped", signed=[(0, 0, 1, 0, 0, 0)], grippers=[1])
    t = _texts(build_prompt(hand, _obs(), "one-shot")[0])
    assert "Grab" in t and "Push" in t and '"step_1"' in t and "hand" in t
    nav = make_task(answer_format="stepped")
    t = _texts(build_prompt(nav, _obs(mode="closed-loop"), "closed-loop")[0])
    assert "ONLY the next single step" in t and "STOP" in t and "current view" in t
    with pytest.raises(ValueError, match="goal_rgb"):
        build_prompt(nav, {"rgb": _obs()["rgb"]}, "one-shot")


def test_prompt_never_contains_pose():
    task = make_task()
    obs = _obs(pose=np.full((4, 4), 12345.678))
    messages, _ = build_prompt(task, obs, "one-shot")
    assert "12345" not in str(messages)


def test_oracle_closed_loop_follows_gt_on_path_and_scores_like_one_shot():
    # a two-step ground truth: on the path, the closed-loop oracle answers exactly the gt steps, then Stay
    task = make_task(signed=[(3, 0, 4, 0, 0, 0), (0, 0, 0, 0, 5, 2)])
    agent = make_agent("oracle")
    agent.reset(task, mode="closed-loop")
    poses = _run_closed_loop(agent, task, task.start_pose)
    assert np.allclose(poses, task.gt_poses(), atol=1e-12)


def test_closed_loop_oracle_does_not_stop_at_an_idle_ground_truth_step():
    """A ground-truth step that rounds to nothing (extraction of a still interval) must not end the episode as a
    Stay would: the oracle plans from its pose instead and reaches the goal."""
    from _fabricate import make_task
    from spatialact.agents import make_agent
    from spatialact.evaluation.episode import EpisodeConfig, run_episode

    task = make_task("idle", signed=((2, 0, 3, 0, 0, 0), (0, 0, 0, 0, 0, 0), (0, 1, 4, 0, 2, 0)),
                     scene={"generator": "room", "seed": 3})
    rec, _ = run_episode(task, make_agent("oracle"), EpisodeConfig(mode="closed-loop", width=32, height=32))
    assert rec["error"] is None and rec["simulated"] is True
    assert rec["success"] is True and rec["n_steps"] >= 2
