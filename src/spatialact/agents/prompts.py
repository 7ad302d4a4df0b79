"""Prompt templates after the SpatialTree paper's L4 prompts (appendix C.2 and its prompt examples).

``build_prompt(task, observation, mode)`` returns the chat-completions ``messages`` an MLLM agent sends and the
images they carry (in order). Four templates, picked by the task:

* navigation, flat answer: the paper's prompt; the three-image version (example view, start, goal, and the
  example's action sequence) when the task has an example with an image;
* navigation, stepped answer (``step_1``, ``step_2``, …);
* manipulation: the same motions for the gripper's end-effector frame plus a gripper state per step (stepped),
  or the paper's continuous vector format ``[dx, dy, dz, d_roll, d_pitch, d_yaw, gripper]``;
* hand: the motions of the wrist plus the gestures Push / Pull / Grab / Release.

Every prompt states the frame (camera / end-effector OpenCV axes: +X right, +Y down, +Z forward; motions in the
frame at the start of each step, translate then rotate), the units (the task's step sizes), the cap and the
answer format, and describes roll visually; a game task's prompt adds the game's key–mouse mapping
(:data:`GAME_CONTROLS`). Closed-loop prompts show the current and goal views and ask for the next single step only.
Poses are never sent.
"""

from __future__ import annotations

import base64
import json
import math

import numpy as np

from ..action_space import ActionSequence, parse_object, parse_response
from ..action_space.primitives import MOTION_PRIMITIVES, Primitive
from ..tasks.scene import GameScene
from ..vocab import MODES
from .base import observation_mode
from .cues import cue_content, cue_problem, parse_cues
from .images import PromptImage, png_data_url

__all__ = ["PROMPT_VERSION", "PromptedAgent", "build_prompt", "prompt_text",
           "SYSTEM_PROMPT", "prompt_version", "GAME_CONTROLS"]

# Bump when any template text changes: it is part of every cached request and every result's provenance.
# v2: hand tasks say "hand" where v1 said "gripper" (the reach instruction, the vector format's last element).
PROMPT_VERSION = "spatialact-l4-v2"


def prompt_version(cues=()) -> str:
    """The prompt version of a variant: :data:`PROMPT_VERSION`, with ``+cues=<names>`` appended when cue prompting
    (:mod:`spatialact.agents.cues`) adds cues; part of every cache key and of the agent's provenance."""
    cues = parse_cues(cues)
    return PROMPT_VERSION + (f"+cues={','.join(cues)}" if cues else "")

SYSTEM_PROMPT = ("You are an expert embodied agent. You look at images and answer with a JSON object describing "
                 "the actions to take, exactly in the requested format.")


_EFFECT = {
    Primitive.DOLLY_IN: "move forward (+Z)",
    Primitive.DOLLY_OUT: "move backward (−Z)",
    Primitive.TRUCK_RIGHT: "move right (+X)",
    Primitive.TRUCK_LEFT: "move left (−X)",
    Primitive.PEDESTAL_DOWN: "move down (+Y)",
    Primitive.PEDESTAL_UP: "move up (−Y)",
    Primitive.PAN_RIGHT: "turn right: positive rotation about +Y; the scene slides left in the image",
    Primitive.PAN_LEFT: "turn left: negative rotation about +Y; the scene slides right in the image",
    Primitive.TILT_UP: "look up: positive rotation about +X; the scene slides down in the image",
    Primitive.TILT_DOWN: "look down: negative rotation about +X; the scene slides up in the image",
    Primitive.ROLL_CCW: ("Roll CCW: positive rotation about +Z; the image turns counter-clockwise; the camera's "
                         "right side dips"),
    Primitive.ROLL_CW: ("Roll CW: negative rotation about +Z; the image turns clockwise; the camera's left side "
                        "dips"),
}

_SUBJECT = {
    "nav": ("camera", "Visual Navigation Action Sequence Generation",
            "You are an expert visual navigation agent. Your task is to generate a sequence of actions that moves "
            "the camera from a starting visual state to a target visual state."),
    "manip": ("gripper (end-effector)", "Robotic Gripper Manipulation Action Sequence Generation",
              "You are an expert robot manipulation agent. Your task is to generate a sequence of actions that "
              "moves a robot gripper (end-effector) from a starting state to a target state, both shown in "
              "images, and opens or closes the gripper where needed."),
    "hand": ("hand (wrist)", "Hand Manipulation Action Sequence Generation",
             "You are an expert at human hand manipulation. Your task is to generate a sequence of actions that "
             "moves a hand (its wrist) from a starting state to a target state, both shown in images, using "
             "wrist motions and the hand gestures push, pull, grab and release."),
}


def _action_table(kind: str) -> str:
    rows = ["| Category | Action | Symbol | Effect |", "| --- | --- | --- | --- |"]
    for p in MOTION_PRIMITIVES:
        cat = "Trans." if p.spec.axis < 3 else "Rot."
        rows.append(f"| {cat} | {p.value} | {p.symbol} | {_EFFECT[p]} |")
    rows.append(f"| Special | {Primitive.STAY.value} | {Primitive.STAY.symbol} | no movement |")
    if kind == "hand":
        rows += [
            "| Gesture | Push | push | push forward: the same as Dolly In of the hand |",
            "| Gesture | Pull | pull | pull back: the same as Dolly Out of the hand |",
            "| Gesture | Grab | grab | close the hand (grip state 1); its step_num is ignored |",
            "| Gesture | Release | release | open the hand (grip state 0); its step_num is ignored |",
        ]
    return "\n".join(rows)


def _frame_text(kind: str) -> str:
    subject = _SUBJECT[kind][0]
    return (f"Coordinate frame: every motion is expressed in the {subject}'s own frame at the start of the step "
            "(the image frame of its view): +X points right, +Y points down, +Z points forward (into the image). "
            "Within one step the translation happens first, then the rotation. Pan Right, Tilt Up and Roll CCW are "
            "the positive rotations. Roll CCW: the image turns counter-clockwise; the camera's right side dips.")


#: What a game task's prompt adds to the frame rule: the paper's key–mouse mapping (docs/game.md).
GAME_CONTROLS = ("Game controls: this task is played in a first-person game (Doom); the camera is the player's "
                 "view. Dolly In / Out = keys W / S (walk forward / back), Truck Right / Left = keys D / A (strafe), "
                 "Pan Right / Left = mouse x (turn), Tilt Up / Down = mouse y (look up / down: the game shifts the "
                 "image vertically, at most 32 degrees up and 56 degrees down), Pedestal Up / Down = fly up / down. "
                 "The player cannot roll: Roll is not executed. Walls stop the player.")


def _is_game(task) -> bool:
    """A game task: its scene is a game level, or (without a scene) it was cut from a game recording."""
    return task.source == "game" or isinstance(task.scene, GameScene)


def _sizes_text(task, cap: int) -> str:
    t, r = task.sizes.translation, task.sizes.rotation
    return ("Step sizes: the magnitude of each action is its step_num times a unit step.\n"
            f"- Translation: {t:.6g} metres per step.\n"
            f"- Rotation: {r:.6g} radians ({math.degrees(r):.4g} degrees) per step.\n"
            f'E.g. action "W" with step_num {cap} means moving forward by {cap * t:.6g} metres. '
            f"step_num is a non-negative integer, at most {cap} for one action in one step.")


def _format_text(task, one_step: bool) -> str:
    kind, fmt, cap = task.kind, task.answer_format, task.gt.cap
    t, r = task.sizes.translation, task.sizes.rotation
    grip = kind in ("manip", "hand")
    grip_word = "gripper" if kind == "manip" else "hand"
    if fmt == "vector":
        body = ("Answer with continuous action vectors. Each step is a list "
                f"[dx, dy, dz, d_roll, d_pitch, d_yaw, {grip_word}]: dx, dy, dz in metres along +X, +Y, +Z; "
                f"d_roll about +Z, d_pitch about +X, d_yaw about +Y in radians; {grip_word} 0 = open, 1 = closed. "
                f"Each translation component is at most {cap * t:.6g} m and each rotation at most "
                f"{cap * r:.6g} rad in magnitude.")
        if one_step:
            return body + ('\nOutput ONLY the next step, as a JSON list of 7 numbers, e.g. '
                           f'[0.0, 0.0, 0.02, 0.0, 0.0, 0.0, 0]. Output all zeros with the current {grip_word} state '
                           "when the current state already matches the target.")
        return body + ('\nYour final output MUST be a JSON object {"step_1": [...], "step_2": [...], ...} with '
                       f"{max(1, task.n_steps)} step(s).")
    grip_line = (f' Each step also has a key "gripper": 0 = {grip_word} open, 1 = {grip_word} closed.'
                 if grip else "")
    if one_step or fmt == "flat":
        ex = '{"actions": ["Truck Left", "Pedestal Up"], "step_nums": [1, 4]' + (', "gripper": 0' if grip else "") + "}"
        head = ('Your final output MUST be a JSON object containing two keys: "actions" and "step_nums". The lengths '
                "of both arrays must be identical. Use the action names or their symbols.")
        if one_step:
            return (head + grip_line + f"\nOutput ONLY the next single step, e.g. {ex}. When the current view "
                    'already matches the goal view, output {"actions": ["STOP"], "step_nums": [1]} to finish.')
        return head + grip_line + f"\nExample: {ex}"
    ex_steps = {"step_1": {"actions": ["Dolly In", "Pan Left"], "step_nums": [3, 2]},
                "step_2": {"actions": ["Truck Right"], "step_nums": [1]}}
    if grip:
        ex_steps["step_1"]["gripper"] = 0
        ex_steps["step_2"]["gripper"] = 1
    return ('Your final output MUST be a JSON object with one key per step, "step_1", "step_2", ..., in order; each '
            'step is an object with "actions" and "step_nums" (arrays of identical length).' + grip_line +
            f" The motion takes {max(1, task.n_steps)} step(s).\nExample: {json.dumps(ex_steps)}")


def _example_sequence_text(example: dict, task) -> str | None:
    seq = example.get("sequence")
    if seq is None:
        return None
    try:
        if isinstance(seq, dict) and "steps" in seq and "sizes" in seq:
            s = ActionSequence.from_dict(seq)
        else:
            s = parse_object(seq, sizes=task.sizes).sequence
        fmt = "flat" if len(s) == 1 and not s.has_vectors else ("vector" if s.has_vectors else "stepped")
        return json.dumps(s.to_json(fmt), indent=1)
    except Exception:  # an unreadable example is shown as stored rather than dropped
        return json.dumps(seq)


def _load_rgb(path: str | None) -> np.ndarray | None:
    if not path:
        return None
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def build_prompt(task, observation: dict, mode: str = "one-shot", cues=()) -> tuple[list[dict], list[PromptImage]]:
    """The chat-completions messages for one turn, and the images they carry (in order).

    ``observation``: ``rgb`` (current view; the start view in one-shot mode), ``goal_rgb``, optionally
    ``start_rgb``, ``example_rgb`` (else ``task.example["start_image"]`` is read) and ``previous_steps`` (the
    agent's own earlier steps as answer JSON, closed-loop). ``mode``: ``one-shot`` or ``closed-loop``.
    ``cues`` (names of :data:`spatialact.agents.cues.CUES`): cue texts and images (correspondences, depth, size)
    placed after the views, before the rules; see :func:`spatialact.agents.cues.cue_content`.
    Images travel as base64 PNG data URLs; the pose is never sent.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be 'one-shot' or 'closed-loop', got {mode!r}")
    kind = task.kind
    _, title, intro = _SUBJECT[kind]
    cap = task.gt.cap
    images: list[PromptImage] = []
    text: list[str] = [f"Task: {title}", intro]
    if task.instruction:
        text.append(f"Instruction: {task.instruction}")
    closed = mode == "closed-loop"

    cur = observation.get("rgb")
    if cur is None and not closed:
        cur = observation.get("start_rgb")
    goal = observation.get("goal_rgb")
    if cur is None or goal is None:
        raise ValueError(f"task {task.id!r}: the observation needs 'rgb' and 'goal_rgb' images")

    example = task.example or {}
    ex_rgb = observation.get("example_rgb")
    if ex_rgb is None and example.get("start_image") and kind == "nav" and task.answer_format == "flat" and not closed:
        ex_rgb = _load_rgb(example["start_image"])
    ex_text = _example_sequence_text(example, task) if ex_rgb is not None else None
    use_example = (not closed and kind == "nav" and task.answer_format == "flat" and ex_rgb is not None
                   and ex_text is not None)

    if closed:
        images = [PromptImage("Image 1", "current", cur), PromptImage("Image 2", "goal", goal)]
        text.append("You act step by step in a loop. Image 1 is the current view; Image 2 is the target view. After "
                    "each step you will see the new current view. Give only the next step.")
        prev = observation.get("previous_steps") or []
        if prev:
            text.append(f"Steps already taken ({len(prev)}): " + "; ".join(str(p) for p in prev))
    elif use_example:
        images = [PromptImage("Image 1", "example", ex_rgb), PromptImage("Image 2", "start", cur),
                  PromptImage("Image 3", "goal", goal)]
        text.append("Context and Example\nWe provide three sequential images: Image 1, Image 2, and Image 3. To "
                    "help you understand the task, we are providing the complete action sequence that navigates "
                    "from Image 1 to Image 2 as an example.\nExample Action Sequence from Image 1 to Image 2:\n"
                    + ex_text)
        text.append("Your Core Task\nNow, carefully observe Image 2 (the starting state) and Image 3 (the target "
                    "state). Your mission is to generate the action sequence required to move from Image 2 to "
                    "Image 3.")
    else:
        images = [PromptImage("Image 1", "start", cur), PromptImage("Image 2", "goal", goal)]
        text.append("Image 1 shows the starting state and Image 2 the target state. Generate the action sequence "
                    "required to move from Image 1 to Image 2.")

    rules = ["1. Action Space\nYou must choose from the following elementary actions. In your output, use the "
             "action name or its symbol.\n" + _action_table(kind),
             "2. " + _frame_text(kind) + ("\n" + GAME_CONTROLS if _is_game(task) else ""),
             "3. " + _sizes_text(task, cap),
             "4. Required Output Format\n" + _format_text(task, one_step=closed)]

    content: list[dict] = [{"type": "text", "text": "\n\n".join(text)}]
    for im in images:
        content.append({"type": "text", "text": f"{im.label} ({im.role} view):"})
        content.append({"type": "image_url", "image_url": {"url": png_data_url(im.rgb)}})
    if cues:
        labels = {("current" if im.role == "start" else im.role): im.label for im in images}
        cue_images, cue_parts = cue_content(task, cur, goal, observation, cues, labels, first_label=len(images) + 1)
        images = images + cue_images
        for part in cue_parts:
            if isinstance(part, PromptImage):
                content.append({"type": "image_url", "image_url": {"url": png_data_url(part.rgb)}})
            else:
                content.append({"type": "text", "text": part})
    content.append({"type": "text", "text": "\n\n".join(rules)})
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": content}]
    return messages, images


def prompt_text(messages: list[dict]) -> str:
    """The messages as readable text, images shown as ``[image: N bytes PNG]`` placeholders."""
    out = []
    for m in messages:
        out.append(f"--- {m['role']} ---")
        content = m["content"]
        if isinstance(content, str):
            out.append(content)
            continue
        for part in content:
            if part["type"] == "text":
                out.append(part["text"])
            else:
                url = part["image_url"]["url"]
                n = len(base64.b64decode(url.split(",", 1)[1]))
                out.append(f"[image: {n} bytes PNG]")
    return "\n".join(out)


class PromptedAgent:
    """What the agents that prompt a model (``openai``, ``hf``, the tool-using ones) share: the task and mode of the
    episode, the cue set and the steps taken so far, and the prompt of a turn. Subclasses set ``name``, ``mode``
    and ``cues``."""

    name = "prompted"
    task = None
    mode = "one-shot"
    cues: tuple = ()

    def check_task(self, task, supplies) -> str | None:
        """Why this agent cannot run ``task`` where the observation supplies ``supplies`` (a cue the environment
        cannot give), or None; asked by the runner for every task before a run starts."""
        return cue_problem(task, self.cues, supplies)

    def reset(self, task, mode: str | None = None, seed: int | None = None, **kwargs) -> None:
        self.task = task
        if mode is not None:
            self.mode = mode
        self._history = []

    def turn_prompt(self, observation: dict) -> tuple[list, list]:
        """The messages and images of this turn (:func:`build_prompt`): the pose is never shown; closed-loop turns
        carry the steps taken so far."""
        if self.task is None:
            raise RuntimeError(f"{self.name}: act() called before reset(task)")
        mode = observation_mode(observation, self.mode)
        obs = {k: v for k, v in observation.items() if k != "pose"}
        if mode == "closed-loop":
            obs["previous_steps"] = list(self._history)
        return build_prompt(self.task, obs, mode, cues=self.cues)

    def parse_turn(self, text: str, observation: dict):
        """Parse the model's ``text`` against the task's sizes and cap; in closed loop, a parsed answer's first step
        joins the steps the next prompt shows."""
        parse = parse_response(text, sizes=self.task.sizes, cap=self.task.gt.cap)
        if parse.ok and observation_mode(observation, self.mode) == "closed-loop":
            first = parse.sequence[:1]
            self._history.append(first.to_text("vector" if first.has_vectors else "flat"))
        return parse
