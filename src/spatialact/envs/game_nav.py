"""``spatialact/GameNav-v0``: move the player's camera from a start view to a goal view in a real Doom level.

**World.** :class:`~spatialact.envs.game_world.GameWorld`: a level of a Doom WAD played through ViZDoom (the
``game`` extra; ``wad=`` a bundled name — ``freedoom2.wad`` (default) or ``freedoom1.wad`` — or a path, ``map=``
default ``MAP01``), no HUD, weapon or crosshair, no monsters unless ``monsters=True``. The controlled frame is the
player's camera: pose (4, 4) C2W, metres (1 map unit = 1/32 m), the map's x east and y north, world +Z up, OpenCV
axes (+X right, +Y down, +Z forward); the eye 1.28 m above the floor. Game tasks (``source: "game"``) name their
level in ``scene`` (``{"type": "game", "wad", "map", "wad_sha256", "start", ...}``); ``make_env("nav", task=...)``
routes them here. The game runs in a worker process, every call with a deadline: a game engine that is killed,
crashes or hangs fails the step (or reset) that met it with ``EngineStopped`` ("the game engine stopped: …"), never
the caller, and the next ``reset`` starts a new one (docs/game.md "The engine's processes").

**Steps go through the game.** A step's body-frame Δ is executed by the game's physics, not applied to the pose:
the player walks to ``T @ Δ`` (momentum, braking, collisions; within 1 mm in open space), flies a commanded height,
turns and looks exactly. The key–mouse mapping: Dolly = W/S, Truck = A/D, Pan = mouse x, Tilt = mouse y (Doom's
look, within 32° up and 56° down; ``info["tilt_clamped"]``), Pedestal = fly up/down; **Roll cannot be executed**
(dropped, ``info["roll_dropped"]`` in radians). A wall, a step too high or a closed door stops the player:
``info["blocked"]`` is True and the pose is where it stopped (16 map units, 0.5 m, from a wall).

**Observation** (``Dict``): ``rgb`` (H, W, 3) uint8, the player's view; ``goal_rgb``, the view at the goal pose
(rendered once per episode by starting the level there); ``depth`` (H, W) float32 metres when ``depth=True`` (the
game's 8-bit depth buffer: quantisation 0.223 m, clipped at 20 m); ``recorded_rgb`` with ``observation="both"``
(tasks cut from a recording). Images are 160 × 120 by default (``height=120``, ``width`` 4:3 of it); the game
renders 160×120, 320×240 or 640×480 (the smallest covering the size asked for) and other sizes are resized. The
camera's intrinsics (``intrinsics``, per frame): fx from the 90° horizontal field of view, **fy = 1.2·fx**, the
principal point moved down by fy·tan(tilt); ``fov_deg`` is ignored.

**Actions** (``action_mode``): ``discrete`` ``Discrete(13)`` (0 Stay, 1–12 one unit of one primitive), ``step``
``MultiDiscrete([2·cap+1]*6 + [3])`` (signed counts per primitive; the gripper element is ignored), ``continuous``
``Box(7)`` (one vector-format step); see :mod:`spatialact.envs.base`.

**Reward, termination.** The decrease of ``position_error / 0.2 m + rotation_error / 10°`` plus 10 on success
(within 0.20 m / 10° of the goal, by default); ``terminated`` on success when ``terminate_on_success``,
``truncated`` after ``max_steps``.

**Info.** CameraNav's (``pose``, ``goal_pose``, ``position_error``, ``rotation_error``, ``success``, ``blocked``,
...) and the game's: ``reached``, ``game_tics``, ``roll_dropped``, ``tilt_clamped``, ``level_exit`` (a step that
crossed the level's exit line is undone and counts as blocked); ``renderer`` is ViZDoom's.

**Reset.** ``reset(options={"task": task})`` loads the task's level (the game process is kept while it stays the
same) and starts it with the player at ``start_pose`` (deterministic: the level as at the map's start, within one
map unit and 0.5°); without a task it draws a random goal the game reaches (a start on a seeded walk through the
level, 1–3 random steps of Truck, Dolly and Pan executed by the engine). The same seed gives the same images.
"""

from __future__ import annotations

from .base import SpatialActEnv
from .game_world import GameWorld

__all__ = ["GameNavEnv"]


class GameNavEnv(SpatialActEnv):
    """Navigation in a Doom level; see the module docstring and :class:`~spatialact.envs.base.SpatialActEnv`.
    ``height`` defaults to 120 and ``width`` to 4:3 of it (the game's screen)."""

    kind = "nav"
    n_discrete = 13
    world_class = GameWorld

    def __init__(self, task=None, action_mode: str = "step", renderer: str = "tiny", width: int | None = None,
                 height: int = 120, **kw):
        if width is None:
            width = int(round(int(height) * 4 / 3))
        super().__init__(task, action_mode, renderer, width, height, **kw)
