"""FlipEval for actions (3DSRBench; docs/diagnostics.md): the task an agent sees mirrored left-right, its answer
mirrored back.

The mirror is conjugation by ``M = diag(−1, 1, 1, 1)`` (:func:`spatialact.action_space.mirror`): a pose ``T``
(C2W, metres, world +Z up, camera OpenCV axes) becomes ``M T M`` — the world reflected in its x = 0 plane *and*
the camera's own x axis reflected, so the mirrored frame is right-handed again. Seen through the camera, this is
exactly a left-right flip of the image: the view rendered at ``M T M`` in the mirrored scene is the view rendered
at ``T`` in the original scene with its columns reversed (pixel column ``u`` → ``W − 1 − u``; the principal point
moves to ``W − 1 − cx``). So the agent can be shown a mirrored world without building one: flip every image it
sees, conjugate every pose, mirror the ground truth (Truck, Pan and Roll change side) and swap the left/right words
of the instruction; what it answers there is mirrored back before it is executed and scored in the real one.

* :func:`mirror_task`, :func:`mirror_observation`, :func:`mirror_instruction`, :func:`flip_image` — the pieces;
* :class:`MirroredAgent` — wraps any agent (what ``spatialact eval --flip`` runs for the ``mirror`` variant);
* :class:`~spatialact.diagnostics.wrapper.MirrorWrapper` — wraps a Gymnasium environment of :mod:`spatialact.envs`
  (closed loop, RL);
* :func:`mirror_inconsistency` — how much an agent's answer changes under the flip.

Scores are mirror-invariant (distances, cosines and geodesic angles do not change under a reflection), so an
answer given in the mirrored world scores the same against ``mirror(gt)`` as its mirror does against ``gt``.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..action_space import ActionSequence, mirror
from ..tasks import Task
from ..vocab import VARIANTS  # episode variants the runner knows: "" the task as it is, "mirror" FlipEval's

__all__ = ["flip_image", "mirror_instruction", "mirror_task", "mirror_observation", "mirror_turn", "MirroredAgent",
           "mirror_inconsistency", "variant_agent", "check_variant", "mirror_K", "mirror_info", "IMAGE_KEYS",
           "POSE_KEYS"]

#: Observation entries that are images (H, W[, C]) and are flipped left-right.
IMAGE_KEYS = ("rgb", "goal_rgb", "start_rgb", "example_rgb", "wrist_rgb", "recorded_rgb", "depth")
#: Observation entries that are C2W poses and are conjugated.
POSE_KEYS = ("pose", "goal_pose", "commanded_pose")
#: Observation entries that cannot be mirrored and are withheld from the mirrored agent (a live simulator handle
#: would answer in the unmirrored world).
WITHHELD_KEYS = ("simulator",)


def flip_image(img: np.ndarray) -> np.ndarray:
    """An image (H, W) or (H, W, C) with its columns reversed (left-right flip), as a new contiguous array."""
    a = np.asarray(img)
    if a.ndim < 2:
        raise ValueError(f"flip_image: expected an (H, W[, C]) image, got shape {a.shape}")
    return np.ascontiguousarray(a[:, ::-1])


# Left/right words of an instruction and their mirror. Whole words only, case kept (Left → Right, LEFT → RIGHT).
_SWAP = {"left": "right", "right": "left", "leftward": "rightward", "rightward": "leftward",
         "leftwards": "rightwards", "rightwards": "leftwards", "leftmost": "rightmost", "rightmost": "leftmost",
         "lefthand": "righthand", "righthand": "lefthand",
         "clockwise": "counterclockwise", "counterclockwise": "clockwise", "anticlockwise": "clockwise",
         "cw": "ccw", "ccw": "cw"}
_HYPHEN_SWAP = {("counter", "clockwise"): "clockwise", ("anti", "clockwise"): "clockwise",
                ("left", "hand"): "right-hand", ("right", "hand"): "left-hand"}


def _cased(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    if like[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def mirror_instruction(text: str | None) -> str | None:
    """The instruction as it reads in the mirrored world: left ↔ right, clockwise ↔ counter-clockwise (also
    "anticlockwise", "counter-clockwise", CW ↔ CCW, left-hand ↔ right-hand), whole words only, case kept. One pass
    over the text (linear time); everything else is unchanged. None stays None."""
    if text is None:
        return None
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if not text[i].isalpha():
            j = i
            while j < n and not text[j].isalpha():
                j += 1
            out.append(text[i:j])
            i = j
            continue
        j = i
        while j < n and text[j].isalpha():
            j += 1
        word = text[i:j]
        low = word.lower()
        # "counter-clockwise", "anti-clockwise", "left-hand": two words joined by one hyphen
        if j + 1 < n and text[j] == "-" and text[j + 1].isalpha():
            k = j + 1
            while k < n and text[k].isalpha():
                k += 1
            pair = (low, text[j + 1:k].lower())
            if pair in _HYPHEN_SWAP:
                out.append(_cased(_HYPHEN_SWAP[pair], word))
                i = k
                continue
        out.append(_cased(_SWAP[low], word) if low in _SWAP else word)
        i = j
    return "".join(out)


def _mirror_pose(T) -> np.ndarray:
    return mirror(np.asarray(T, dtype=np.float64))


def mirror_task(task: Task) -> Task:
    """The task in the mirrored world: start and goal poses ``M T M``, ground truth ``mirror(gt)``, the example's
    pose and sequence mirrored, the instruction's left/right words swapped, ``meta["mirrored"] = True``. Images
    stay file references (the agent is shown them flipped through :func:`mirror_observation`); the scene, sizes,
    tags and id are those of the task."""
    example = task.example
    if isinstance(example, dict):
        example = dict(example)
        if example.get("start_pose") is not None:
            example["start_pose"] = _mirror_pose(example["start_pose"]).tolist()
        seq = example.get("sequence")
        if isinstance(seq, ActionSequence):
            example["sequence"] = mirror(seq)
        elif isinstance(seq, dict):
            example["sequence"] = mirror(ActionSequence.from_dict(seq)).to_dict()
    return replace(task, start_pose=_mirror_pose(task.start_pose), goal_pose=_mirror_pose(task.goal_pose),
                   gt=mirror(task.gt), example=example, instruction=mirror_instruction(task.instruction),
                   meta={**task.meta, "mirrored": True})


def mirror_K(K, width: int) -> np.ndarray:
    """Pinhole K of the flipped image: ``cx → W − 1 − cx`` and the skew changes sign (pixel centres at integers)."""
    K2 = np.array(K, dtype=np.float64, copy=True)
    K2[0, 2] = (width - 1) - K2[0, 2]
    K2[0, 1] = -K2[0, 1]
    return K2


def mirror_observation(obs: dict) -> dict:
    """An observation dict as seen in the mirrored world: every image of :data:`IMAGE_KEYS` flipped left-right
    (depth too), every pose of :data:`POSE_KEYS` conjugated by M, ``intrinsics`` for the flipped image
    (``cx → W − 1 − cx``, W the width of ``rgb``, else of ``depth``), the simulator handle withheld; other entries
    (step index, mode, …) as they are. Works on the runner's agent observations and on a Gymnasium observation."""
    out = {}
    width = None
    for key in ("rgb", "depth", "goal_rgb", "start_rgb"):
        v = obs.get(key)
        if v is not None and np.ndim(v) >= 2:
            width = int(np.shape(v)[1])
            break
    for key, v in obs.items():
        if key in WITHHELD_KEYS:
            continue
        if v is None:
            out[key] = None
        elif key in IMAGE_KEYS:
            out[key] = flip_image(v)
        elif key in POSE_KEYS:
            out[key] = _mirror_pose(v)
        elif key == "intrinsics":
            if width is None:
                raise ValueError("mirror_observation: intrinsics without an image to take the width from")
            out[key] = mirror_K(v, width)
        else:
            out[key] = v
    return out


def mirror_turn(turn):
    """An :class:`~spatialact.agents.AgentTurn` given in the mirrored world, as it acts in the real one: its parsed
    sequence mirrored back. The raw text stays what the agent said (in the mirrored world); ``info["mirrored"]``."""
    parse = replace(turn.parse, sequence=mirror(turn.parse.sequence))
    return replace(turn, parse=parse, info={**dict(turn.info or {}), "mirrored": True})


class MirroredAgent:
    """Any agent, playing in the mirrored world (FlipEval): ``reset`` gives it :func:`mirror_task` of the task, each
    ``act`` shows it :func:`mirror_observation` of the observation (and the task's example image flipped, when the
    task has one) and returns its turn with the sequence mirrored back (:func:`mirror_turn`). ``describe`` is the
    wrapped agent's, so records name the agent itself; the variant tells them apart."""

    def __init__(self, agent):
        self.agent = agent
        self.name = getattr(agent, "name", "?")
        self.task = None
        self._example_rgb = None

    def reset(self, task, **kwargs) -> None:
        self.task = task
        self._example_rgb = None
        example = task.example if isinstance(task.example, dict) else {}
        if example.get("start_image"):
            from PIL import Image

            with Image.open(example["start_image"]) as im:
                self._example_rgb = flip_image(np.asarray(im.convert("RGB")))
        self.agent.reset(mirror_task(task), **kwargs)

    def act(self, observation: dict):
        obs = mirror_observation(observation)
        if self._example_rgb is not None and obs.get("example_rgb") is None:
            obs["example_rgb"] = self._example_rgb
        return mirror_turn(self.agent.act(obs))

    def describe(self) -> dict:
        return self.agent.describe() if hasattr(self.agent, "describe") else {"agent": self.name}

    def __getattr__(self, name):  # model, params, … of the wrapped agent
        if name == "agent":
            raise AttributeError(name)
        return getattr(self.agent, name)


def check_variant(variant: str) -> None:
    """Refuse an unknown episode variant (ValueError, one line naming the known ones)."""
    if variant not in VARIANTS:
        known = ", ".join(repr(v) for v in VARIANTS)
        raise ValueError(f"unknown episode variant {variant!r} (known: {known})")


def variant_agent(agent, variant: str):
    """The agent an episode of ``variant`` runs: the agent itself for "", a :class:`MirroredAgent` for "mirror"."""
    check_variant(variant)
    return MirroredAgent(agent) if variant == "mirror" else agent


# ----- inconsistency ------------------------------------------------------------------------------------------
def mirror_inconsistency(plain: ActionSequence, flipped: ActionSequence, kind: str = "nav",
                         profile: str | None = None) -> float:
    """How differently an agent answers the same task plain and mirrored, in [0, 1].

    ``plain``: its answer on the original views; ``flipped``: its answer on the mirrored views, *not yet mirrored
    back*. With ``m = mirror(flipped)`` (what the flipped answer means in the original world) it is
    ``1 − (score(m against plain) + score(plain against m)) / 2`` — episode step scores under ``profile``
    (default ``paper+rot`` for navigation, so that rotations count, and ``paper`` otherwise), averaged both ways
    because the relative-distance score is not symmetric. 0: the answer is mirror-consistent (the oracle's is,
    exactly); NaN when either answer is empty (nothing to compare: an answer that did not parse)."""
    from ..scorers import score_episode

    if not isinstance(plain, ActionSequence) or not isinstance(flipped, ActionSequence):
        raise TypeError("mirror_inconsistency takes two ActionSequence objects")
    if len(plain) == 0 or len(flipped) == 0:
        return math.nan
    if profile is None:
        profile = "paper+rot" if kind == "nav" else "paper"
    m = mirror(flipped)
    a = score_episode(m, plain, kind=kind, profile=profile).total
    b = score_episode(plain, m, kind=kind, profile=profile).total
    return float(1.0 - (a + b) / 2.0)


def mirror_info(info: dict) -> dict:
    """An environment's ``info`` dict in the mirrored world: its poses (:data:`POSE_KEYS`) conjugated, the world
    positions (3,) of ``objects`` with x negated, ``mirrored: True``; the rest (errors, success, …) unchanged."""
    out = dict(info)
    for key in POSE_KEYS:
        if out.get(key) is not None:
            out[key] = _mirror_pose(out[key])
    if isinstance(out.get("objects"), dict):
        out["objects"] = {n: np.asarray(x, dtype=np.float64) * np.array([-1.0, 1.0, 1.0])
                          for n, x in out["objects"].items()}
    out["mirrored"] = True
    return out
