"""One episode: a task, an agent and (when the task has a scene) a simulator → one result record.

Modes (docs/evaluation.md):

* ``one-shot`` (the paper's): the agent sees the start and goal views once and answers a whole sequence; the
  answer is scored step by step against the ground truth and, when the task has a scene, executed in the
  simulator for the closed-loop metrics;
* ``closed-loop``: observe, act one step (the first step of the agent's answer), repeat until the agent answers
  Stay (or nothing usable) or ``max_steps`` steps have run; the executed steps are scored against the ground
  truth and the visited poses give the closed-loop metrics.

A one-shot answer is *executed* only up to :func:`execution_limit` steps (``max(max_steps, len(gt))``); scoring
still counts every step of it (docs/scoring.md: extra steps cost). Whether a task can run in a mode at all is
:func:`check_runnable`, asked for every task before a run writes anything.

Failures are not results: an episode whose agent call failed (connection, timeout, HTTP error, malformed reply
after the agent's retries) is recorded with ``reason: "api_error"`` and an exception inside the episode with
``reason: "error"``; both carry ``error`` and ``error_kind`` and no score (``score: null``). An answer that does
not parse is a result (``reason: "parse_error"``, score 0). A task whose input images cannot be read raises
:class:`TaskInputError`: the run stops.

Poses in records are 4×4 C2W matrices in metres (world +Z up, camera OpenCV axes), as nested lists. The record's
fields, keys, failure reasons and schema belong to :mod:`spatialact.records` (``episode_key``, ``record_key``,
``is_failure``, ``FAILURE_REASONS`` and ``RETRIED_ON_RESUME`` are imported from there); the layout is documented in
``docs/results.md``.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Generator

import numpy as np

from ..action_space import ActionSequence
from ..image_files import ImageFileError, array_sha256, image_file_problem, read_image_rgb
from ..records import SCORE_FIELDS, STEP_SCORE_FIELDS, episode_key, failure_scores
from ..tasks import Task
from ..tasks.scene import GameScene
from ..vocab import ENVS, MODES, PROFILES

__all__ = ["EpisodeConfig", "EpisodeFrames", "run_episode", "episode_steps", "AgentCall", "drive", "world_kind",
           "WorldPool", "episode_seed", "check_runnable", "execution_limit", "env_name", "TaskInputError",
           "observation_supplies", "free_camera_task", "images_match"]

_VARIANT = re.compile(r"[A-Za-z0-9_.-]{0,40}")
#: How the gl renderer draws (``spatialact.envs.gl.RENDER_QUALITIES``, the same names: tested; named here so a run's
#: configuration is checked without loading the simulator).
RENDER_QUALITIES = ("default", "high")


class TaskInputError(ValueError):
    """A task whose inputs cannot be used (an unreadable start or goal image): the run stops with this one line."""


@dataclass(frozen=True)
class EpisodeConfig:
    """How episodes are run; part of a run's configuration (a changed value refuses a resume).

    ``env``: ``pybullet`` (the embedded default), ``habitat`` (CameraNav on habitat-sim, when installed) or
    ``none`` (one-shot scoring only, no simulator). Images are ``width``×``height`` pixels. ``variant`` (empty by
    default) tells apart runs of the same tasks that diagnostics transform (e.g. ``"mirror"`` for FlipEval): it
    is part of every episode's key and record, and of the run configuration when not empty. ``render_quality``
    (:data:`RENDER_QUALITIES`): how the gl renderer draws — ``"default"`` (one sample per pixel and edge smoothing,
    the same on every device) or ``"high"`` (4× multisampling); part of the run configuration when not the
    default, so a resume at another quality is refused. ``collisions`` (default True): whether the walls and
    furniture of a free-camera scene (CameraNav in PyBullet) stop the camera (``make_env(..., collisions=...)``;
    other worlds ignore it); always part of the run configuration (a run made before walls existed resumes only
    with ``collisions=False``, ``eval --no-collisions``).
    """

    mode: str = "one-shot"
    env: str = "pybullet"
    renderer: str = "auto"
    width: int = 128
    height: int = 128
    max_steps: int = 20
    profile: str = "paper"
    weights: tuple[float, float, float] | None = None
    seed: int = 0
    variant: str = ""
    render_quality: str = "default"
    collisions: bool = True

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.env not in ENVS:
            raise ValueError(f"env must be one of {ENVS}, got {self.env!r}")
        if self.profile not in PROFILES:
            raise ValueError(f"profile must be 'paper' or 'paper+rot' for episodes, got {self.profile!r}")
        if self.weights is not None:
            w = tuple(float(x) for x in self.weights)
            if len(w) != 3 or any(not math.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
                raise ValueError(f"weights must be three non-negative numbers with a positive sum, got {self.weights!r}")
            from ..scorers.step import normalise_weights

            normalise_weights(w)  # the scorer's own rule (translation or rotation weighted), before any episode
            object.__setattr__(self, "weights", w)
        if not isinstance(self.variant, str) or not _VARIANT.fullmatch(self.variant):
            raise ValueError(f"variant must be at most 40 characters of [A-Za-z0-9_.-], got {self.variant!r}")
        if self.render_quality not in RENDER_QUALITIES:
            raise ValueError(f"render_quality must be one of {', '.join(RENDER_QUALITIES)}, "
                             f"got {self.render_quality!r}")
        if not isinstance(self.collisions, bool):
            raise ValueError(f"collisions must be true or false, got {self.collisions!r}")
        if int(self.max_steps) < 1:
            raise ValueError(f"max_steps must be at least 1, got {self.max_steps!r}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["weights"] = list(self.weights) if self.weights is not None else None
        if not self.variant:  # runs made before variants existed keep their configuration
            del d["variant"]
        if self.render_quality == "default":  # ... and before the render quality was a setting
            del d["render_quality"]
        return d


@dataclass
class EpisodeFrames:
    """RGB frames (H, W, 3) uint8 of one episode, stored by the caller: start, goal and final view."""

    start: np.ndarray | None = None
    goal: np.ndarray | None = None
    final: np.ndarray | None = None

    def items(self):
        return [(k, v) for k, v in (("start", self.start), ("goal", self.goal), ("final", self.final))
                if v is not None]


def episode_seed(seed: int, task_id: str) -> int:
    """A per-episode seed that depends only on the run seed and the task: episodes give the same result in
    whatever order, process or Ray worker they run."""
    h = hashlib.sha256(f"{seed}|{task_id}".encode()).digest()
    return int.from_bytes(h[:4], "little") & 0x7FFFFFFF  # fits a C int (OpenCV's RNG seed is one)


def _image_problem(path) -> str | None:
    """Why an image file a task names cannot be used (one line), or None: missing, not a regular file, not an
    image, over ``spatialact.image_files.MAX_IMAGE_PIXELS`` or not decodable (decoded once per file version)."""
    return image_file_problem(path)


def _load_image(path: str | None, what: str = "image", task_id: str = "?") -> np.ndarray | None:
    """An RGB (H, W, 3) uint8 image file, or None without a path; an unusable file raises TaskInputError (the
    pre-run check has read it already, so this happens only when the file changed since)."""
    if not path:
        return None
    try:
        return read_image_rgb(path)
    except ImageFileError as e:
        raise TaskInputError(f"task {task_id!r}: {what} {e}") from None


def env_name(task: Task, cfg: EpisodeConfig) -> str:
    """The simulator an episode runs in: tasks without a scene are scored one-shot without one."""
    return "none" if (cfg.env == "none" or task.scene is None) else cfg.env


def execution_limit(task: Task, cfg: EpisodeConfig) -> int:
    """How many steps run: ``max(cfg.max_steps, len(task.gt))`` — of a one-shot answer, and of a closed-loop episode
    (a task whose ground truth needs 37 steps gets 37 turns, however small ``--max-steps``). Scoring counts every
    step of a one-shot answer whatever its length; only the simulation (and the replayed poses) stop here."""
    return max(int(cfg.max_steps), len(task.gt))


def _shows_recorded_frames(task: Task, cfg: EpisodeConfig) -> bool:
    """One-shot with a simulator shows a task's recorded start and goal frames (as the paper), not renders."""
    return cfg.mode == "one-shot" and bool(task.start_image and task.goal_image)


def observation_supplies(task: Task, cfg: EpisodeConfig) -> frozenset:
    """What the agent's observations of ``task`` under ``cfg`` hold beyond the two views: ``pose`` always;
    ``depth``, ``intrinsics`` and ``simulator`` (the unwrapped environment, for privileged tools) when the
    simulator renders the views — not with ``--env none`` or a one-shot task showing its recorded frames.
    Agents that need more (cue prompting, tools) are asked through their ``check_task(task, supplies)``."""
    if env_name(task, cfg) == "none" or _shows_recorded_frames(task, cfg):
        return frozenset({"pose"})
    if cfg.variant == "mirror":  # a simulator handle would answer in the unmirrored world: withheld (diagnostics)
        return frozenset({"pose", "depth", "intrinsics"})
    return frozenset({"pose", "depth", "intrinsics", "simulator"})


def check_runnable(task: Task, cfg: EpisodeConfig) -> str | None:
    """Why ``task`` cannot run with ``cfg`` (one line naming the task and the field or option), or None.

    Asked for every task before a run writes anything. Closed-loop needs a scene and a simulator (a task with
    ``scene: null``, or ``--env none``, runs one-shot only); without a simulator the agent sees the task's
    ``start_image`` and ``goal_image``, which must be given. Every image the episode will read — the start and
    goal images without a simulator or when one-shot shows the recorded frames, an example image — must be a
    readable image of at most ``spatialact.image_files.MAX_IMAGE_PIXELS`` (64 megapixels) whose pixels decode. The
    scene itself is checked by the world it names (``task.scene.world`` → ``spatialact.envs.registry.world_class``
    → ``World.check_task(task, cfg)``: the PyBullet worlds build procedural, mesh and replay scenes, the game world
    its levels), so a new kind of scene brings its check with its world and nothing here changes. (A free-camera
    task whose ground truth goes through walls is not refused: the run warns about it,
    ``spatialact.evaluation.runner.collision_note``.)
    """
    tid = f"task {task.id!r}"
    problem = gt_problem(task)
    if problem:
        return f"{tid}: {problem}"
    env = env_name(task, cfg)
    if cfg.mode == "closed-loop":
        if task.scene is None:
            return f"{tid} has no scene (scene: null), so it cannot run closed-loop; run it with --mode one-shot"
        if cfg.env == "none":
            return (f"{tid}: --env none scores one-shot answers only; closed-loop needs a simulator "
                    f"(--env pybullet)")
    if env == "none":
        for field in ("start_image", "goal_image"):
            if not getattr(task, field):
                why = "it has no scene" if task.scene is None else "--env none runs no simulator"
                return (f"{tid}: {field} is missing, and {why} to render the view: the agent needs the task's "
                        f"start_image and goal_image")
    else:
        problem = _world_problem(task, cfg, env)
        if problem:
            return problem
    return _images_problem(task, cfg, tid)


def _world_problem(task: Task, cfg: EpisodeConfig, env: str) -> str | None:
    """The pre-run check of the world ``task``'s scene names (``World.check_task``), or the missing package."""
    try:
        from ..envs.registry import world_class

        world = world_class(task.scene)
    except ImportError as e:
        return f"--env {env}: the simulator needs a missing package ({e}; pip install 'spatialact[sim]')"
    except ValueError as e:
        return f"task {task.id!r}: {e}"
    if env == "habitat" and world.habitat_stands_in:
        problem = _habitat_problem(task)
        if problem:
            return problem
    return world.check_task(task, cfg)


_HABITAT: dict[str, bool] = {}


def _habitat_problem(task: Task) -> str | None:
    """``--env habitat``: habitat-sim runs navigation tasks only, and must be installed."""
    if task.kind != "nav":
        return f"task {task.id!r}: --env habitat runs navigation tasks only, not {task.kind!r} (use --env pybullet)"
    if "ok" not in _HABITAT:
        from ..envs.habitat_backend import habitat_available

        _HABITAT["ok"] = habitat_available()
    if not _HABITAT["ok"]:
        from ..envs.habitat_backend import INSTALL_HINT

        return f"--env habitat: {INSTALL_HINT}"
    return None


def _images_problem(task: Task, cfg: EpisodeConfig, tid: str) -> str | None:
    """The first image the episode will read that is not usable (one line naming task, field and path), or None."""
    fields = []
    if env_name(task, cfg) == "none" or _shows_recorded_frames(task, cfg):
        fields += [("start_image", task.start_image), ("goal_image", task.goal_image)]
    example = task.example if isinstance(task.example, dict) else None
    if example and example.get("start_image"):
        fields.append(("example.start_image", example["start_image"]))
    for field, path in fields:
        problem = _image_problem(path)
        if problem:
            return f"{tid}: {field} {path}: {problem}"
    return None


def gt_problem(task: Task) -> str | None:
    """Why ``task``'s ground truth is no ground truth, or None: replayed from ``start_pose`` (``Task.gt_poses``,
    the body frame of docs/conventions.md) it must end within the task's success thresholds of ``goal_pose``, or
    every score of the run would be measured against a sequence that does not lead to the goal (a hand-written task
    with the sign of a motion flipped scored its oracle 1 while failing). The one check, shared with
    ``spatialact score``: :func:`spatialact.scorers.ground_truth.ground_truth_problem`."""
    from ..scorers.ground_truth import ground_truth_problem

    return ground_truth_problem(task)


def world_kind(task: Task, cfg: EpisodeConfig) -> str | None:
    """What an episode of ``task`` under ``cfg`` holds while it runs: ``"game"`` (a game level: a world and its
    engine process), ``"world"`` (a simulated world: a physics client and its renderer) or None (``--env none``, a
    task without a scene: images only). The runner bounds the live episodes of each kind (docs/evaluation.md)."""
    if env_name(task, cfg) == "none":
        return None
    return "game" if isinstance(task.scene, GameScene) else "world"


def free_camera_task(task: Task, cfg: EpisodeConfig) -> bool:
    """Whether ``task`` runs in a free-camera world under ``cfg`` (CameraNav in PyBullet: a procedural room, a mesh
    or a camera path's replay room), the worlds whose walls ``cfg.collisions`` turns on or off."""
    return task.kind == "nav" and env_name(task, cfg) == "pybullet" and not isinstance(task.scene, GameScene)


_TAKES_COLLISIONS: dict[str, bool] = {}


def _collision_kwargs(task: Task, cfg: EpisodeConfig) -> dict:
    """``{"collisions": cfg.collisions}`` for a free-camera task, else nothing (the other worlds take no such
    keyword). A free-camera world without walls (an older build of the environments) is given nothing: it behaves
    as ``collisions=False``."""
    if not free_camera_task(task, cfg):
        return {}
    if "ok" not in _TAKES_COLLISIONS:
        import inspect

        from ..envs.camera_nav import CameraNavEnv

        _TAKES_COLLISIONS["ok"] = any("collisions" in inspect.signature(f).parameters
                                      for f in (CameraNavEnv.__init__, CameraNavEnv.world_class.__init__))
    return {"collisions": bool(cfg.collisions)} if _TAKES_COLLISIONS["ok"] else {}


class WorldPool:
    """The environments of finished episodes, kept for the next episode in the same scene (``eval --concurrency``;
    docs/evaluation.md, "Many requests in flight").

    Only where it is safe: free-camera worlds (:func:`free_camera_task`: CameraNav in PyBullet), whose camera moves
    kinematically through a static scene, so a world reset to another task in its scene (``load_scene`` keeps a
    scene whose spec is the same and puts it back) is the world a fresh one would be — the records are the same with
    and without the pool (tested: ``eval --concurrency 1``, no pool, against 8). Reuse skips the scene's build and
    the environment's first-reset checks (about half an episode's CPU in a procedural suite, where tasks share
    rooms). At most ``max_idle`` environments are kept, the least recently used closed first; an episode that
    ended in an exception closes its environment instead. Used from the world's thread only."""

    def __init__(self, max_idle: int = 8):
        from collections import OrderedDict

        self.max_idle = max(0, int(max_idle))
        self._idle: OrderedDict = OrderedDict()  # (key, serial) -> env, oldest first
        self._serial = 0
        self.reused = self.made = 0

    @staticmethod
    def key(task: Task, cfg: EpisodeConfig) -> str | None:
        """What an environment must share with a task to run it (None: not pooled)."""
        if not free_camera_task(task, cfg):
            return None
        import json

        return json.dumps([task.kind, task.scene, cfg.renderer, cfg.width, cfg.height, cfg.render_quality,
                           cfg.collisions, cfg.max_steps, cfg.seed], sort_keys=True, default=str)

    def take(self, key: str | None, task: Task, cfg: EpisodeConfig):
        """An idle environment for ``key`` (the most recently kept), else a new one (None for ``--env none``)."""
        if key is not None:
            for k in reversed(self._idle):
                if k[0] == key:
                    self.reused += 1
                    return self._idle.pop(k)
        env = _make_env(task, cfg)
        self.made += env is not None
        return env

    def has(self, key: str | None) -> bool:
        """Whether an idle environment for ``key`` waits here."""
        return key is not None and any(k[0] == key for k in self._idle)

    def give(self, key: str | None, env) -> None:
        """Keep ``env`` for ``key`` (closed when it is not poolable, or the oldest when the pool is full)."""
        if env is None:
            return
        if key is None or self.max_idle == 0:
            env.close()
            return
        self._serial += 1
        self._idle[(key, self._serial)] = env
        while len(self._idle) > self.max_idle:
            self._idle.popitem(last=False)[1].close()

    def __len__(self) -> int:
        return len(self._idle)

    def close(self) -> None:
        while self._idle:
            try:
                self._idle.popitem(last=False)[1].close()
            except Exception:  # noqa: BLE001 - closing at the end: nothing more to do
                pass


def _make_env(task: Task, cfg: EpisodeConfig):
    name = env_name(task, cfg)
    if name == "none":
        return None
    from ..envs import make_env

    return make_env(task.kind, task=task, action_mode="continuous", renderer=cfg.renderer, width=cfg.width,
                    height=cfg.height, seed=cfg.seed, backend=name, max_steps=max(cfg.max_steps, 1),
                    terminate_on_success=False, render_quality=cfg.render_quality, **_collision_kwargs(task, cfg))


def _observation(task: Task, cfg: EpisodeConfig, env, obs: dict | None, info: dict | None, start_rgb,
                 step_index: int) -> dict:
    """What an agent sees (the ``Agent`` protocol's observation dict)."""
    o: dict[str, Any] = {"step_index": step_index, "mode": cfg.mode, "start_rgb": start_rgb, "depth": None,
                         "intrinsics": None}
    if obs is not None and _shows_recorded_frames(task, cfg):
        # One-shot shows the recorded start and goal frames, as the paper does (a trajectory task's images); the
        # simulator only executes the answer. Depth and intrinsics belong to the simulated camera: none given.
        o["rgb"] = _load_image(task.start_image, "start_image", task.id)
        o["goal_rgb"] = _load_image(task.goal_image, "goal_image", task.id)
        o["pose"] = np.asarray(info["pose"], dtype=np.float64)
    elif obs is not None:
        u = env.unwrapped
        o["rgb"], o["goal_rgb"] = obs["rgb"], obs["goal_rgb"]
        o["depth"] = obs["depth"] if "depth" in obs else u.observation_depth()  # the rgb camera's depth
        o["intrinsics"] = np.asarray(u.intrinsics, dtype=np.float64)
        o["pose"] = np.asarray(info["pose"], dtype=np.float64)
        o["simulator"] = u  # for privileged tools only (agents.tools); never sent to a model
    else:
        o["rgb"] = _load_image(task.start_image, "start_image", task.id)
        o["goal_rgb"] = _load_image(task.goal_image, "goal_image", task.id)
        o["pose"] = task.start_pose
    if o["start_rgb"] is None:
        o["start_rgb"] = o["rgb"]
    return o


def _score(pred: ActionSequence, parse, task: Task, cfg: EpisodeConfig, n_repairs: int) -> dict:
    """The :data:`~spatialact.records.SCORE_FIELDS` of an answered episode, in their order: the raw score, ``s0``
    (``spatialact.scorers.null_score`` of the task under the run's mode, profile and weights: the zero of skill),
    the step scores, ``reason`` and ``parse_error`` (the parser's reason when nothing was usable)."""
    from ..scorers import null_score, score_episode

    s = score_episode(pred, task.gt, kind=task.kind, profile=cfg.profile, weights=cfg.weights).to_dict()
    ok = parse is not None and parse.ok
    vals = {"score": float(s["total"]), "s0": null_score(task, cfg.mode, cfg.profile, cfg.weights),
            **{k: s.get(k) for k in STEP_SCORE_FIELDS}, "per_step": s.get("per_step"),
            "net_translation_error": s.get("net_translation_error"),
            "net_rotation_error": s.get("net_rotation_error"), "weights": s.get("weights"),
            "ok": bool(ok), "reason": None, "parse_error": None, "n_repairs": int(n_repairs)}
    if parse is not None and not parse.ok:
        # docs/scoring.md, docs/parsing.md: text with no usable step scores 0 with reason parse_error.
        vals.update(score=0.0, reason="parse_error", parse_error=str(parse.error or "no usable step"))
    return {k: vals[k] for k in SCORE_FIELDS}


@dataclass(frozen=True)
class AgentCall:
    """What an episode waits for (:func:`episode_steps` yields it): ``fn(*args, **kwargs)`` — its agent's ``reset``
    or ``act`` — run by whoever drives the episode, who sends the return value back in (or throws the exception in).
    ``observation``: the observation an ``act`` is given (None for ``reset``)."""

    fn: Callable
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    observation: dict | None = None

    def __call__(self):
        return self.fn(*self.args, **self.kwargs)


def drive(steps: Generator) -> Any:
    """Run an episode generator (:func:`episode_steps`) here, calling each :class:`AgentCall` on this thread as it
    comes; returns what the generator returns. An exception of a call is thrown into the generator (the episode
    records it, or lets it through)."""
    try:
        call = next(steps)
        while True:
            try:
                result = call()
            except BaseException as e:  # noqa: BLE001 - the episode decides (it records Exceptions)
                call = steps.throw(e)
            else:
                call = steps.send(result)
    except StopIteration as stop:
        return stop.value


def run_episode(task: Task, agent, cfg: EpisodeConfig, repeat: int = 0) -> tuple[dict, EpisodeFrames]:
    """Run one episode and return (record, frames): :func:`episode_steps` driven on this thread (:func:`drive`).
    The record holds no images; the caller stores the frames."""
    return drive(episode_steps(task, agent, cfg, repeat))


def episode_steps(task: Task, agent, cfg: EpisodeConfig, repeat: int = 0,
                  pool: WorldPool | None = None) -> Generator[AgentCall, Any, tuple[dict, EpisodeFrames]]:
    """One episode as a generator: it steps the world itself and yields an :class:`AgentCall` each time it needs
    its agent — the ``reset``, then one ``act`` (one-shot) or one per turn (closed-loop) —, expecting the call's
    return value back (``send``) or its exception (``throw``); it returns (record, frames). The record holds no
    images; the caller stores the frames. Whoever drives it must do so on one thread (the world's: a GL context
    belongs to the thread that made it); the agent's calls may run on another (``eval --concurrency``: the runner
    interleaves many episodes on one thread while their agents wait for their models).
    ``repeat`` (``eval --repeats K``: 0 to K-1) goes into the record and, above 0, its key (``|r<repeat>``).
    ``pool``: a :class:`WorldPool` the environment is taken from and given back to (None: made here, closed at the
    end).

    ``agent`` gets ``reset(task, mode=cfg.mode, seed=<the episode's seed>)``; an agent object from outside the
    package is wrapped first (``spatialact.agents.adapt_agent``: a ``reset(task)`` gets the task alone, an
    ``async def act`` is awaited on the event loop of the thread that runs the call, an answer given as text is
    parsed).

    Never raises for a bad model answer: a parse failure scores 0 with reason ``parse_error`` and the (empty)
    answer still executes, so the closed-loop figures exist. A failed agent call (the turn's ``error``) gives a
    record with ``reason: "api_error"`` and no score; an exception inside the simulator or the agent gives
    ``reason: "error"`` and no score. An unreadable task image raises :class:`TaskInputError`.
    """
    t0 = time.perf_counter()
    frames = EpisodeFrames()
    turns: list = []
    env = key = None
    clean = False
    from ..agents import adapt_agent

    agent = adapt_agent(agent)  # an outside agent: reset given what it takes, async awaited, text answers parsed
    if cfg.variant:  # e.g. "mirror": the agent plays the task mirrored, its answers come back mirrored (FlipEval)
        from ..diagnostics.mirror import variant_agent

        agent = variant_agent(agent, cfg.variant)
    try:
        key = WorldPool.key(task, cfg) if pool is not None else None
        env = pool.take(key, task, cfg) if pool is not None else _make_env(task, cfg)
        obs, info = env.reset(seed=cfg.seed, options={"task": task}) if env is not None else (None, None)
        observation = _observation(task, cfg, env, obs, info, None, 0)
        frames.start, frames.goal = observation.get("rgb"), observation.get("goal_rgb")
        gl = info.get("renderer") if isinstance(info, dict) else None  # which GL answered (docs/environments.md)
        if observation["rgb"] is None or observation["goal_rgb"] is None:
            raise TaskInputError(f"task {task.id!r} has neither a scene nor start/goal images")
        # the protocol's reset: the mode and the episode's seed (the one its agent was built with: AgentSpec.build)
        yield AgentCall(agent.reset, (task,),
                        {"mode": cfg.mode, "seed": (episode_seed(cfg.seed, task.id) + int(repeat)) & 0x7FFFFFFF})
        if cfg.mode == "one-shot":
            turn = yield AgentCall(agent.act, (observation,), observation=observation)
            turns.append(turn)
            pred, parse = turn.parse.sequence, turn.parse
            n_repairs = len(parse.repairs)
            # Only the first execution_limit steps run (a 10 000-step answer must not hold a worker for hours);
            # the score below still counts every step of the answer.
            executed = pred[: execution_limit(task, cfg)] if getattr(turn, "error", None) is None else pred[:0]
            if env is not None:
                from ..envs import execute_sequence

                result = execute_sequence(env, executed, task)
                poses = np.asarray(result.poses)
                frames.final = result.frames[-1] if result.frames is not None else None
                last_info = result.infos[-1] if result.infos else info
                blocked = [bool(i.get("blocked")) for i in result.infos[1:]]
            else:
                poses, last_info = executed.to_poses(task.start_pose), None
            n_executed = len(executed)
        else:
            blocked = []
            pred, parse, n_repairs, poses, last_info = yield from _closed_loop(task, agent, cfg, env, observation,
                                                                              info, turns, frames, blocked)
            n_executed = len(pred)
        failed = next((t for t in turns if getattr(t, "error", None)), None)
        if failed is not None:  # the agent call failed: no answer, so no result (docs/evaluation.md)
            record = _record(task, agent, cfg, None, None, None, turns, task.start_pose[None],
                             failed.error, time.perf_counter() - t0,
                             ("api_error", getattr(failed, "error_kind", None) or "agent"), repeat)
        else:
            scores = _score(pred, parse, task, cfg, n_repairs)
            closed = _closed_metrics(poses, task, last_info, env is not None)
            record = _record(task, agent, cfg, scores, closed, pred, turns, poses, None,
                             time.perf_counter() - t0, None, repeat)
            record["n_executed"] = int(n_executed)
            record["truncated"] = bool(cfg.mode == "one-shot" and len(pred) > n_executed)
        record["gl_renderer"] = gl
        if failed is None and env is not None and getattr(env.unwrapped.world, "blocks_motion", False):
            record["blocked"] = blocked  # per executed step: a wall stopped it short (optional: worlds with walls)
        match = images_match(task, frames)
        if match is not None:  # optional: only for a task that pins its images (a frozen suite)
            record["images_match"] = match
        clean = True  # the world is as an episode leaves it: it may run another
    except TaskInputError:
        raise  # the task file is at fault, not the episode: the run stops
    except Exception as e:  # the run goes on; the reason is kept with the episode
        record = _record(task, agent, cfg, None, None, None, turns, task.start_pose[None],
                         f"{e.__class__.__name__}: {e}", time.perf_counter() - t0, ("error", "exception"), repeat)
    finally:
        if env is not None:
            if pool is not None and clean:
                pool.give(key, env)
            else:
                env.close()
    return record, frames


def _closed_loop(task, agent, cfg, env, observation, info, turns, frames, blocked):
    """Observe, act one step (each turn an :class:`AgentCall` yielded), repeat. Returns (executed sequence, last
    parse, repairs, visited poses, last info); ``blocked`` gets one flag per executed step (the world stopped it
    short)."""
    if env is None:
        raise ValueError(f"task {task.id!r} has no scene: closed-loop mode needs a simulator")
    start_rgb = observation["rgb"]
    executed, n_repairs, last_info, parse = [], 0, info, None
    poses = [np.asarray(info["pose"], dtype=np.float64)]
    while len(executed) < execution_limit(task, cfg):
        turn = yield AgentCall(agent.act, (observation,), observation=observation)
        turns.append(turn)
        parse = turn.parse
        n_repairs += len(parse.repairs)
        seq = parse.sequence
        if not parse.ok or len(seq) == 0:
            break
        step = seq.steps[0]
        prev_grip = executed[-1].gripper if executed else None
        if step.is_stay() and step.gripper in (None, prev_grip):
            break  # Stay ends the episode (docs/evaluation.md)
        obs, last_info = env.unwrapped.apply_step(step, seq.sizes)
        executed.append(step)
        blocked.append(bool(last_info.get("blocked")))
        poses.append(np.asarray(last_info["pose"], dtype=np.float64))
        observation = _observation(task, cfg, env, obs, last_info, start_rgb, len(executed))
    frames.final = observation.get("rgb")
    pred = ActionSequence(tuple(executed), task.sizes)
    if parse is not None and not parse.ok and executed:
        parse = None  # a late unusable answer ends the loop; the executed steps still count
    return pred, parse, n_repairs, np.stack(poses), last_info


def images_match(task: Task, frames: EpisodeFrames) -> bool | None:
    """Whether the start and goal images of an episode are the ones its task pins (``meta["image_sha256"]``,
    ``{"start": hex, "goal": hex}``: a frozen suite's images at its pinned renderer, quality and size), compared by
    :func:`spatialact.image_files.array_sha256`; None when the task pins no image or an image is missing."""
    pins = (task.meta or {}).get("image_sha256") if isinstance(task.meta, dict) else None
    if not isinstance(pins, dict) or not pins:
        return None
    views = {"start": frames.start, "goal": frames.goal}
    if any(name not in views or views[name] is None for name in pins):
        return None
    return all(array_sha256(views[name]) == str(h).lower() for name, h in pins.items())


def _closed_metrics(poses: np.ndarray, task: Task, last_info, simulated: bool) -> dict | None:
    """The closed-loop figures; an object-state test (pick and place) is judged by the simulator, not by the pose,
    and decides success before SPL is computed (so SPL is 0 whenever success is false)."""
    from ..scorers import closed_loop_metrics

    judged = simulated and isinstance(last_info, dict) and (task.success or {}).get("object_state")
    m = dict(closed_loop_metrics(poses, task, object_success=bool(last_info.get("success", False)) if judged
                                 else None))
    m["simulated"] = simulated
    return m


def _usage(turns) -> dict:
    """The episode's API figures, summed over its turns: tokens, ``cost_usd`` (what the agent says the calls
    cost; 0 for cache hits), ``cached`` (how many turns came from the response cache) and ``turns``. A count or
    cost a turn reports as unknown (``None``: token counts the endpoint stated were not believable, a reply cut
    at the byte cap) makes that total ``None`` (unknown, not zero)."""
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "cached": 0, "turns": len(turns)}
    for t in turns:
        u = getattr(t, "usage", None) or {}
        cached = bool(u.get("cached"))
        usage["cached"] += int(cached)
        for k in ("prompt_tokens", "completion_tokens"):
            if k in u and u[k] is None and not cached:
                usage[k] = None
            elif usage[k] is not None:
                usage[k] += int(u.get(k, 0) or 0)
        c = getattr(t, "cost_usd", 0.0)
        if c is None and not cached:
            usage["cost_usd"] = None
        elif usage["cost_usd"] is not None:
            c = float(c or 0.0)
            usage["cost_usd"] += c if math.isfinite(c) else 0.0
    return usage


def _record(task, agent, cfg, scores, closed, pred, turns, poses, error, wall_s, failure=None, repeat=0) -> dict:
    """One result record. ``failure`` is ``(reason, error_kind)`` for a failed episode (no score), else None."""
    desc = agent.describe() if hasattr(agent, "describe") else {"agent": getattr(agent, "name", "?")}
    agent_name = desc.get("agent") or desc.get("name") or getattr(agent, "name", "?")
    env = env_name(task, cfg)
    if failure is not None:
        scores = failure_scores(failure[0])
    closed = closed or {}
    parse = turns[-1].parse if turns and failure is None else None
    texts = [getattr(t, "text", "") for t in turns]
    rec = {
        "key": episode_key(task.id, agent_name, env, cfg.mode, cfg.seed, cfg.variant, repeat),
        "task_id": task.id, "kind": task.kind, "source": task.source, "tags": dict(task.tags),
        "agent": agent_name, "model": desc.get("model"), "env": env, "mode": cfg.mode, "seed": cfg.seed,
        "variant": cfg.variant, "repeat": int(repeat),
        **scores,
        "repairs": list(parse.repairs) if parse is not None else [],
        "response": (texts[0] if len(texts) == 1 else texts) if turns else None,
        "pred": pred.to_dict() if pred is not None else None,
        "gt": task.gt.to_dict(),
        "gt_poses": task.gt_poses().tolist(),
        "pred_poses": np.asarray(poses).tolist(),
        "start_pose": task.start_pose.tolist(), "goal_pose": task.goal_pose.tolist(),
        "final_position_error": closed.get("final_position_error"),
        "final_rotation_error": closed.get("final_rotation_error"),
        "success": closed.get("success"), "path_length": closed.get("path_length"), "d0": closed.get("d0"),
        "spl": closed.get("spl"), "n_steps": closed.get("n_steps", len(pred) if pred is not None else 0),
        "n_executed": 0, "truncated": False,
        "simulated": closed.get("simulated", False),
        "latency_s": float(sum(getattr(t, "latency_s", 0.0) or 0.0 for t in turns)),
        "usage": _usage(turns), "wall_s": float(wall_s), "error": error,
        "error_kind": failure[1] if failure is not None else None,
    }
    if desc.get("tools") is not None:  # a tool-using agent: its tool set and every call, per turn
        rec["tools"] = desc["tools"]
        rec["privileged"] = bool(desc.get("privileged"))
        rec["tool_calls"] = [dict(c, turn=i) for i, t in enumerate(turns)
                             for c in ((getattr(t, "info", None) or {}).get("tool_calls") or ())]
    if any(getattr(t, "response_truncated", False) for t in turns):  # optional in the schema: only when true
        rec["response_truncated"] = True
    return rec
