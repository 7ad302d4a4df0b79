"""Make the small example files under examples/ that notebooks/02_offline_scoring.ipynb scores.

    .venv/bin/python examples/make_examples.py          # rewrites examples/tasks.jsonl and examples/answers.jsonl

Everything comes from the project's own builders, deterministically (same bytes on every run):

* ``tasks.jsonl`` — 17 tasks: 6 navigation, 4 Franka manipulation and 4 floating-hand tasks in procedural scenes
  (``spatialact.taskgen.procedural_tasks``, seed 0), and 3 camera-path tasks cut from a TUM trajectory written here
  (``spatialact.tasks.pairs_from_trajectory``, no replay scene, no images): two sources, three kinds.
* ``answers.jsonl`` — what a mediocre model might answer, one ``{"task_id", "response"}`` line per task: the
  noisy-oracle baseline's answer (the ground truth with seeded count noise, gripper flipped now and then) wrapped
  the ways models write — a ```json fence after a sentence, bare JSON, a ``<think>`` block, primitive symbols,
  lower-case names — plus the mistakes a scorer must survive: an answer with no JSON at all (scored 0,
  ``parse_error``), one padded with extra Stay steps (they cost), a task nobody answered (``missing``) and an
  answer to a task id the file does not hold (``unknown_task``).

Needs the simulator extra (PyBullet) for the procedural tasks; scoring the files needs only the light core.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

# (kind, how many, seed): the procedural part of the task file
PROCEDURAL = (("nav", 6, 0), ("manip", 4, 0), ("hand", 4, 0))
NOISE, GRIP_FLIP, AGENT_SEED = 1.0, 0.15, 0
UNANSWERED = "hand-0-0003"  # left out of the answers on purpose: counted as missing
UNPARSEABLE = "nav-0-0004"  # answered with prose only
PADDED = "manip-0-0001"  # answered with two extra Stay steps


def camera_path_file(folder: Path) -> Path:
    """A 12 s hand-held camera walk (30 Hz) in TUM format: forward along +X at eye height, drifting sideways,
    bobbing, panning slowly left and back. Poses are C2W, world +Z up, camera OpenCV axes."""
    from spatialact import geometry
    from spatialact.envs.camera import look_at

    t = np.arange(360) / 30.0
    pos = np.stack([0.35 * t, 0.4 * np.sin(0.5 * t), 1.5 + 0.05 * np.sin(3.0 * t)], axis=1)
    yaw = 0.5 * np.sin(0.3 * t)
    poses = np.stack([look_at(p, p + [np.cos(a), np.sin(a), -0.1]) for p, a in zip(pos, yaw)])
    q, tr = geometry.pose_to_quat_trans(poses)
    lines = ["# a hand-held camera walk, made by examples/make_examples.py", "# timestamp tx ty tz qx qy qz qw"]
    lines += [" ".join(f"{x:.9f}" for x in [ti, *p, *qi]) for ti, p, qi in zip(t, tr, q)]
    path = folder / "walk.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def build_tasks() -> list:
    from spatialact.taskgen import procedural_tasks
    from spatialact.tasks import pairs_from_trajectory
    from spatialact.trajectories import load_trajectory

    tasks = []
    for kind, n, seed in PROCEDURAL:
        tasks += procedural_tasks(kind, n, seed)
    with tempfile.TemporaryDirectory() as tmp:
        traj = load_trajectory(camera_path_file(Path(tmp)), "tum")
        cam = pairs_from_trajectory(traj, n=3, seed=0, id_prefix="walk")
    # the file must not name the temporary folder the trajectory lived in
    tasks += [t.with_(meta={k: v for k, v in t.meta.items() if k not in ("path", "trajectory")}) for t in cam]
    return tasks


def wrap(text: str, symbols_text: str, style: int) -> str:
    """The answer text as a model might wrap it (style cycles through five ways)."""
    if style == 0:
        return f"The goal view is reached by the following moves.\n```json\n{text}\n```"
    if style == 1:
        return text
    if style == 2:
        return ("<think>Compare the two views: the landmarks shift, so the camera moved; estimate the "
                f"direction and the number of unit steps.</think>\n{text}")
    if style == 3:
        return f"```json\n{symbols_text}\n```"
    # lower-case names and counts written as text: the lenient parser reads them and records the repairs
    obj = json.loads(text)
    for step in obj.values():
        if isinstance(step, dict):
            step["actions"] = [a.lower() for a in step["actions"]]
            step["step_nums"] = [str(n) for n in step["step_nums"]]
    return f"Answer: {json.dumps(obj, ensure_ascii=False)}"


def build_answers(tasks) -> list[dict]:
    from spatialact.action_space import ActionSequence, Step
    from spatialact.agents import make_agent

    agent = make_agent("noisy-oracle", seed=AGENT_SEED, noise=NOISE, grip_flip=GRIP_FLIP)
    out = []
    for i, task in enumerate(tasks):
        if task.id == UNANSWERED:
            continue
        if task.id == UNPARSEABLE:
            out.append({"task_id": task.id, "response": "I cannot tell how the camera moved: the two views look "
                                                        "the same to me."})
            continue
        agent.reset(task, mode="one-shot")
        seq = agent.act({"mode": "one-shot", "step_index": 0}).parse.sequence
        if task.id == PADDED:
            seq = ActionSequence(seq.steps + (Step.stay(seq.steps[-1].gripper),) * 2, seq.sizes, seq.cap)
        fmt = "stepped" if task.answer_format != "vector" else "vector"
        text = seq.to_text(fmt)
        symbols = seq.to_text(fmt, names="symbol") if fmt != "vector" else text
        out.append({"task_id": task.id, "response": wrap(text, symbols, i % 5)})
    out.append({"task_id": "nav-9-9999", "response": '{"actions": ["Dolly In"], "step_nums": [3]}'})
    return out


def main(argv=None) -> int:
    folder = Path(argv[0]) if argv else HERE
    folder.mkdir(parents=True, exist_ok=True)
    from spatialact.tasks import save_tasks

    tasks = build_tasks()
    save_tasks(tasks, folder / "tasks.jsonl")
    answers = build_answers(tasks)
    with open(folder / "answers.jsonl", "w", encoding="utf-8") as f:
        for a in answers:
            f.write(json.dumps(a, ensure_ascii=False) + "\n")
    print(f"wrote {folder / 'tasks.jsonl'} ({len(tasks)} tasks) and {folder / 'answers.jsonl'} "
          f"({len(answers)} answers)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
