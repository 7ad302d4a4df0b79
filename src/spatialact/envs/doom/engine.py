"""``DoomEngine``: one headless ViZDoom game (a Doom level) in spatialact's frames and units.

Frames and units (docs/game.md):

* 1 map unit = 1/32 m (:data:`UNIT_M`); the world is the map's (x east, y north) with +Z up; poses are C2W (4, 4)
  float64 in metres, camera axes OpenCV's (+X right, +Y down, +Z forward);
* the camera sits at the game's view point (``CAMERA_POSITION_X/Y/Z``: the player's x, y and z plus its view
  height, 41 units ≈ 1.28 m when standing); its yaw is ``ANGLE`` (degrees counter-clockwise from east) and its
  tilt is ``-PITCH`` (Doom's pitch is positive looking down); the camera cannot roll;
* Doom's look up/down is not a rotation of the camera: the image of a pitched view is the level view shifted
  vertically by ``fy·tan(tilt)`` rows. :meth:`DoomEngine.pose` reports the tilt as a rotation (what a model's Tilt
  did); :meth:`DoomEngine.view_pose` (level) with :meth:`DoomEngine.intrinsics` (principal point moved down by
  ``fy·tan(tilt)``) is the exact camera of the rendered image;
* pixels are not square: ``fx = (W/2)/tan(FOV/2)`` with ``CAMERA_FOV`` horizontal (90° by default, 4:3 screens),
  ``fy = 1.2·fx``; principal point at the image centre, pixel centres at integer coordinates (OpenCV);
* depth is ViZDoom's 8-bit buffer: level k is a perpendicular distance of about
  ``(DEPTH_STEP_UNITS·k + offset)`` map units (:data:`DEPTH_CALIBRATION`, measured on walls; floors read up to
  one level nearer); 255 is "this far or farther".

Motion goes through the game's physics (momentum, friction, collisions): :meth:`DoomEngine.execute` drives the
player to ``T @ Δ`` with per-tic inputs (forward/side thrust, exact turns and looks, the ``fly`` cheat for height)
until it is within :data:`POSITION_TOL_UNITS` and at rest, or blocked (no progress). vizdoom is imported when an
engine is built; without it a one-line :class:`GameUnavailable` says how to install it.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
import numpy as np

from ... import geometry
from ...cache import cache_dir
from .wad import DEFAULT_MAP, check_map, check_wad, resolve_wad, wad_sha256

__all__ = ["DoomEngine", "Execution", "GameUnavailable", "INSTALL_HINT", "UNIT_M", "TICRATE", "EYE_HEIGHT_UNITS",
           "PLAYER_RADIUS_UNITS", "PIXEL_ASPECT", "TILT_UP_LIMIT_DEG", "TILT_DOWN_LIMIT_DEG", "POSITION_TOL_UNITS",
           "HEIGHT_TOL_UNITS", "WALK_SPEED_MPS", "RESOLUTIONS", "DEPTH_STEP_UNITS", "DEPTH_CALIBRATION",
           "SETTLE_TICS", "VARIABLES", "require_vizdoom", "level_rotation", "yaw_tilt_roll", "depth_to_metres",
           "camera_pose", "camera_intrinsics"]

INSTALL_HINT = "pip install 'spatialact[game]'"
UNIT_M = 1.0 / 32.0                 # metres per map unit
TICRATE = 35                        # game tics per second
EYE_HEIGHT_UNITS = 41.0             # standing view height above the floor
PLAYER_RADIUS_UNITS = 16.0          # collision radius: the camera stays this far from a wall
PIXEL_ASPECT = 1.2                  # fy / fx
TILT_UP_LIMIT_DEG = 32.0            # the engine's look limits
TILT_DOWN_LIMIT_DEG = 56.0
POSITION_TOL_UNITS = 0.25           # execute(): horizontal distance to the target at rest (0.78 cm)
HEIGHT_TOL_UNITS = 0.5              # execute(): vertical distance when height is flown (the fly cheat bobs ±0.1)
WALK_SPEED_MPS = 1.4                # default speed of execute() and the explorer (Doom walks at ~9 m/s)
SETTLE_TICS = 10                    # after new_episode(): vizdoom ignores turns for the first 7 tics
FRICTION = 0xE800 / 0x10000         # Doom's ground friction per tic (0.90625)
MAX_THRUST = 50                     # largest forward/side input a tic (Doom's run): 50/32 units/tic
STALL_TICS = 8                      # tics without progress that make a move blocked
STALL_UNITS = 0.02                  # progress smaller than this is none
ANGLE_UNITS = 65536                 # the game's turn and look resolution: 360/65536 degrees
# Resolutions with a measured depth calibration (4:3, so the 90° field of view is horizontal).
RESOLUTIONS = ((160, 120), (320, 240), (640, 480))
# Depth: level k covers perpendicular distances [STEP·k + c, STEP·(k+1) + c) map units, c per screen height,
# measured on a wall 20-350 units away (tests/envs/doom/test_engine.py checks it). The reported depth is the middle.
DEPTH_STEP_UNITS = 7.14
DEPTH_CALIBRATION = {120: 2.57, 240: 5.39, 480: 10.95}

# Doom's ground movement, modelled to plan a walk without drawing every tic (DoomEngine._planned_walk): in 16.16
# fixed point, a thrust of u input units adds FixedMul(u·2048, sine table) along the view (side thrust: 90° to the
# right), the player moves by its velocity, then the velocity is zeroed when both components are below STOPSPEED and
# there was no input, else multiplied by the friction (the ground's, or the fly cheat's 0xEB00: measured 0.91797 a
# tic). The sine table here is the ideal one (8192 fine angles, half-step offset); the game's differs by up to 4e-4
# in magnitude, so a plan is checked against the game when it ends.
_FINE_SINE = np.round(65536.0 * np.sin((np.arange(8192) + 0.5) * (2.0 * np.pi / 8192))).astype(np.int64).tolist()
_STOPSPEED = 0x1000
_FRICTION_FIXED = 0xE800
_FRICTION_FLY_FIXED = 0xEB00

VARIABLES = _VARS = ("POSITION_X", "POSITION_Y", "POSITION_Z", "VELOCITY_X", "VELOCITY_Y", "VELOCITY_Z", "ANGLE", "PITCH",
         "VIEW_HEIGHT", "CAMERA_POSITION_X", "CAMERA_POSITION_Y", "CAMERA_POSITION_Z", "CAMERA_FOV")
_BUTTONS = ("MOVE_FORWARD_BACKWARD_DELTA", "MOVE_LEFT_RIGHT_DELTA", "TURN_LEFT_RIGHT_DELTA", "LOOK_UP_DOWN_DELTA",
            "MOVE_UP_DOWN_DELTA")
_INIT_LOCK = threading.Lock()
# The camera at yaw 0 (looking east, +X of the world): right = -Y, down = -Z, forward = +X.
_R0 = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


class GameUnavailable(ImportError):
    """vizdoom is not installed; the message is one line saying how to install it."""


def require_vizdoom():
    """The vizdoom module, or :class:`GameUnavailable` with the install command."""
    try:
        import vizdoom
    except ImportError:
        raise GameUnavailable(f"the game needs vizdoom, which is not installed: {INSTALL_HINT}") from None
    return vizdoom


def level_rotation(yaw: float, tilt: float = 0.0) -> np.ndarray:
    """Camera-to-world rotation (3, 3) of a camera at ``yaw`` (radians counter-clockwise from world +X about +Z)
    tilted up by ``tilt`` (radians, about the camera's +X): ``R_z(yaw) @ R0 @ R_x(tilt)``."""
    return geometry.rot_z(yaw) @ _R0 @ geometry.rot_x(tilt)


def yaw_tilt_roll(R) -> tuple[float, float, float]:
    """Inverse of :func:`level_rotation` with a roll: ``R = level_rotation(yaw, tilt) @ R_z(roll)``; radians."""
    pan, tilt, roll = geometry.matrix_to_ptr(_R0.T @ np.asarray(R, dtype=np.float64))
    return float(-pan), float(tilt), float(roll)


def depth_to_metres(levels: np.ndarray, height: int) -> np.ndarray:
    """Metres (float32) of an 8-bit depth buffer of a screen ``height`` rows tall (the middle of each level)."""
    c = DEPTH_CALIBRATION[int(height)]
    return ((np.asarray(levels, dtype=np.float32) + 0.5) * DEPTH_STEP_UNITS + c) * np.float32(UNIT_M)


def camera_pose(v: np.ndarray) -> np.ndarray:
    """C2W (4, 4) float64 in metres of the camera of the game variables ``v`` (:data:`VARIABLES` order): at the view
    point, yaw ``ANGLE``, the tilt ``-PITCH`` as a rotation about the camera's +X (world +Z up, OpenCV axes)."""
    return geometry.make_pose(level_rotation(math.radians(v[6]), -math.radians(v[7])), v[9:12] * UNIT_M)


def camera_intrinsics(v: np.ndarray, width: int, height: int) -> np.ndarray:
    """Pinhole K (3, 3) in pixels of a ``width`` × ``height`` screen drawn with the game variables ``v``: ``fx`` from
    ``CAMERA_FOV`` (horizontal; 90° when the game reports none), ``fy = 1.2·fx``, principal point at the centre moved
    down by ``fy·tan(tilt)`` (see :meth:`DoomEngine.view_pose`)."""
    fov = v[12] if v[12] > 0 else 90.0
    fx = float(f"{(width / 2.0) / math.tan(math.radians(fov) / 2.0):.12g}")  # 160, not 160.00000000000003
    fy = float(f"{PIXEL_ASPECT * fx:.12g}")
    cy = (height - 1) / 2.0 + fy * math.tan(-math.radians(v[7]))
    return np.array([[fx, 0.0, (width - 1) / 2.0], [0.0, fy, cy], [0.0, 0.0, 1.0]])


def _wrap_deg(a: float) -> float:
    return (a + 180.0) % 360.0 - 180.0


@dataclass(frozen=True)
class Execution:
    """What :meth:`DoomEngine.execute` did. Poses C2W (4, 4) float64, metres, world +Z up, OpenCV axes.

    ``target``: ``T @ Δ`` as commanded; ``pose``: where the player ended (at rest); ``reached``: the translation
    ended within the tolerance; ``blocked``: a wall, floor or ceiling stopped it; ``tics``: game tics used;
    ``position_error_m``: distance from the target position; ``roll_dropped``: the roll (radians) the camera
    cannot make; ``tilt_clamped``: the tilt was cut to the engine's look limits; ``flew``: height was flown."""

    pose: np.ndarray
    target: np.ndarray
    reached: bool
    blocked: bool
    tics: int
    position_error_m: float
    yaw_error_rad: float
    roll_dropped: float
    tilt_clamped: bool
    flew: bool


class DoomEngine:
    """A headless ViZDoom level: start, move through the game's physics, read the pose, render rgb + depth.

    ``wad``: a path or a bundled name (default ``freedoom2.wad``); ``map``: default ``MAP01``; ``resolution``:
    one of :data:`RESOLUTIONS`; ``monsters``: False keeps the level empty (``+sv_nomonsters 1``; the game ignores
    ``+nomonsters``). No HUD, weapon, crosshair, screen flashes or view bob. vizdoom's ini file and working folder
    live in spatialact's cache, never in the caller's working directory. Use as a context manager or call :meth:`close`.
    ``vizdoom_path``: the program the binding starts as the game (default: vizdoom's own binary; the worker of
    :mod:`spatialact.envs.doom.worker` gives its launcher). The engine runs in the caller's process: a game that dies
    can hang or crash it; worlds use :class:`~spatialact.envs.doom.worker.EngineProcess`, this engine in a worker.
    """

    def __init__(self, wad=None, map: str = DEFAULT_MAP, resolution: tuple[int, int] = (320, 240), *,
                 monsters: bool = False, depth: bool = True, speed_mps: float = WALK_SPEED_MPS,
                 vizdoom_path=None):
        vzd = require_vizdoom()
        self.wad_path = resolve_wad(wad)
        self.map = check_map(self.wad_path, map)
        check_wad(self.wad_path, [self.map])  # damaged map data crashes the game process: refused before it starts
        resolution = tuple(int(v) for v in resolution)
        if resolution not in RESOLUTIONS:
            raise ValueError(f"resolution {resolution[0]}x{resolution[1]} is not one of "
                             f"{', '.join(f'{w}x{h}' for w, h in RESOLUTIONS)}")
        if not (math.isfinite(speed_mps) and 0.1 <= speed_mps <= 10.0):
            raise ValueError(f"speed_mps must be between 0.1 and 10 m/s, got {speed_mps:g}")
        self.width, self.height = resolution
        self.monsters = bool(monsters)
        self.speed_units = speed_mps / UNIT_M / TICRATE   # per tic
        self.engine_version = str(getattr(vzd, "__version__", "unknown"))
        self._vzd = vzd
        self._game = self._build(vzd, depth, vizdoom_path)
        self._var = [getattr(vzd.GameVariable, v) for v in _VARS]
        self._v = None          # the game variables of the current tic, read once (see variables())
        self._pose, self._pose_of = None, None  # pose() of those variables
        self.tics = 0
        self.drawn_tics = 0     # tics drawn since the engine was built (tic(); run_undrawn() draws none)
        self.flying = False
        self.start()

    # ----- set-up -------------------------------------------------------------------------------------
    def _build(self, vzd, depth: bool, vizdoom_path=None):
        g = vzd.DoomGame()
        if vizdoom_path is not None:  # a launcher of the game's binary (spatialact.envs.doom.worker)
            g.set_vizdoom_path(str(vizdoom_path))
        work = cache_dir("vizdoom")
        g.set_doom_config_path(str(work / "_vizdoom.ini"))
        g.set_doom_game_path(str(self.wad_path))
        g.set_doom_map(self.map)
        g.set_screen_resolution(getattr(vzd.ScreenResolution, f"RES_{self.width}X{self.height}"))
        g.set_screen_format(vzd.ScreenFormat.RGB24)
        g.set_depth_buffer_enabled(bool(depth))
        for setter in ("set_render_hud", "set_render_weapon", "set_render_crosshair", "set_render_decals",
                       "set_render_particles", "set_render_messages", "set_render_screen_flashes",
                       "set_window_visible", "set_sound_enabled", "set_console_enabled"):
            getattr(g, setter)(False)
        g.set_mode(vzd.Mode.PLAYER)
        g.set_seed(0)
        g.set_episode_timeout(0)
        g.add_game_args(f"+sv_nomonsters {0 if self.monsters else 1} +movebob 0 +freelook 1 +sv_cheats 1")
        g.set_available_buttons([getattr(vzd.Button, b) for b in _BUTTONS])
        g.set_available_game_variables([getattr(vzd.GameVariable, v) for v in _VARS])
        # The game process writes ./_vizdoom/ in its working directory: start it in the cache folder.
        with _INIT_LOCK:
            cwd = os.getcwd()
            os.chdir(work)
            try:
                g.init()
            finally:
                os.chdir(cwd)
        return g

    @property
    def wad_sha256(self) -> str:
        """SHA-256 of the WAD file (provenance)."""
        return wad_sha256(self.wad_path)

    def describe(self) -> dict:
        """Provenance: WAD name and SHA-256, map, engine version, resolution, monsters."""
        return {"wad": self.wad_path.name, "wad_sha256": self.wad_sha256, "map": self.map,
                "engine": "vizdoom", "engine_version": self.engine_version,
                "width": self.width, "height": self.height, "monsters": self.monsters}

    def close(self) -> None:
        if self._game is not None:
            self._game.close()
            self._game = None

    def __enter__(self) -> "DoomEngine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    # ----- state --------------------------------------------------------------------------------------
    def variables(self) -> np.ndarray:
        """The game variables (13,) float64 in :data:`VARIABLES` order: the player's position (map units) and
        velocity (units/tic), ANGLE and PITCH (degrees), VIEW_HEIGHT, the camera's position, CAMERA_FOV."""
        return self._vars().copy()

    def _vars(self) -> np.ndarray:
        """The game variables, read once a tic (they change only when the game advances); not a copy."""
        if self._v is None:
            g = self._game
            self._v = np.array([g.get_game_variable(v) for v in self._var], dtype=np.float64)
        return self._v

    def tic(self, forward: int = 0, side: int = 0, turn: float = 0.0, look: float = 0.0, up: int = 0) -> None:
        """Advance one game tic with raw inputs: ``forward``/``side`` thrust (integers; 1 = 1/32 unit/tic of
        acceleration, + forward/right), ``turn`` degrees (+ right), ``look`` degrees (+ up), ``up`` fly thrust
        (integer, + up; needs :meth:`set_flying`)."""
        self._game.make_action([float(forward), float(side), float(turn), float(look), float(up)], 1)
        self._v = None
        self.tics += 1
        self.drawn_tics += 1

    def run_undrawn(self, rows) -> None:
        """Advance one tic per row of inputs (forward, side, turn°, look°, up; as :meth:`tic`) without drawing: about
        ten times faster than a drawn tic. The game's variables and images stay those of the last drawn tic until
        the next one (:meth:`tic`), so a caller ends with a drawn tic before it reads the player again."""
        g = self._game
        n = 0
        for f, s, turn, look, up in rows:
            g.set_action([float(f), float(s), float(turn), float(look), float(up)])
            g.advance_action(1, False)
            n += 1
        if n:
            self.tics += n
            self._v = None

    def position_units(self) -> np.ndarray:
        """The camera's position (3,) in map units (x, y, z of the view point)."""
        v = self.variables()
        return v[9:12].copy()

    def yaw_deg(self) -> float:
        """The view's yaw, degrees counter-clockwise from east (map +x), in [0, 360)."""
        return float(self.variables()[6])

    def tilt_deg(self) -> float:
        """The look angle, degrees, + up (``-PITCH``)."""
        return -float(self.variables()[7])

    def velocity_units(self) -> np.ndarray:
        """The player's velocity (3,) in map units per tic."""
        return self.variables()[3:6].copy()

    def pose(self) -> np.ndarray:
        """C2W (4, 4) float64 in metres of the camera, tilt as a rotation about its +X (world +Z up, OpenCV)."""
        v = self._vars()
        if self._pose_of is not v:  # computed once a tic
            self._pose = camera_pose(v)
            self._pose_of = v
        return self._pose.copy()

    def view_pose(self) -> np.ndarray:
        """The level C2W (4, 4) of the rendered image: :meth:`pose` without the tilt (see :meth:`intrinsics`)."""
        v = self.variables()
        return geometry.make_pose(level_rotation(math.radians(v[6])), v[9:12] * UNIT_M)

    def intrinsics(self) -> np.ndarray:
        """Pinhole K (3, 3) in pixels of the rendered image with :meth:`view_pose`: ``fx`` from ``CAMERA_FOV``
        (horizontal), ``fy = 1.2·fx``, principal point at the centre moved down by ``fy·tan(tilt)``."""
        return camera_intrinsics(self._vars(), self.width, self.height)

    def render(self) -> tuple[np.ndarray, np.ndarray]:
        """The current view: RGB (H, W, 3) uint8 and depth (H, W) float32 metres (see :func:`depth_to_metres`)."""
        rgb, levels = self.render_raw()
        return rgb, depth_to_metres(levels, self.height)

    @property
    def finished(self) -> bool:
        """Whether the episode has ended (the player crossed an exit line): start again."""
        return bool(self._game.is_episode_finished())

    def render_raw(self) -> tuple[np.ndarray, np.ndarray]:
        """The current view: RGB (H, W, 3) uint8 and the raw 8-bit depth levels (H, W) uint8."""
        s = self._game.get_state()
        if s is None:
            raise RuntimeError(f"{self.map}: the level has ended (an exit was crossed); start() it again")
        depth = s.depth_buffer
        return np.array(s.screen_buffer, copy=True), (np.zeros((self.height, self.width), np.uint8) if depth is None
                                                       else np.array(depth, copy=True))

    def copy_frame(self, rgb: np.ndarray, levels: np.ndarray) -> bool:
        """Copy the current view into ``rgb`` (H, W, 3) uint8 and ``levels`` (H, W) uint8 (raw depth levels, zeros
        without a depth buffer), as :meth:`render_raw` returns them; False (nothing copied) when the level has
        ended."""
        s = self._game.get_state()
        if s is None:
            return False
        np.copyto(rgb, s.screen_buffer)
        if s.depth_buffer is None:
            levels.fill(0)
        else:
            np.copyto(levels, s.depth_buffer)
        return True

    # ----- start ---------------------------------------------------------------------------------------
    def start(self, pose=None) -> None:
        """A new episode (the level as at the map's start, the player in god mode), settled; then, with ``pose`` (C2W, metres), the
        player teleported there (``warp`` to the nearest whole unit), walked to the exact position, turned and
        looked exactly. Same call, same state: deterministic. Raises ValueError when the pose cannot be reached
        within 1 map unit and 0.5° (outside the level, in a wall)."""
        self._game.set_seed(0)  # the game's random numbers (flickering lights) as at the first episode, every episode
        self._game.new_episode()
        self._v = None
        self.tics = 0
        self.flying = False
        # God mode (reset by every new episode): damaging floors neither hurt, push nor kill the player.
        self._game.send_game_command("god")
        for _ in range(SETTLE_TICS):
            self.tic()
        if pose is None:
            return
        T = geometry.as_pose(pose)
        target = T[:3, 3] / UNIT_M
        yaw, tilt, roll = yaw_tilt_roll(T[:3, :3])
        if abs(roll) > math.radians(0.5):
            raise ValueError(f"start pose rolled by {math.degrees(roll):.3g}°: the game camera cannot roll")
        self._game.send_game_command(f"warp {int(round(target[0]))} {int(round(target[1]))}")
        self.tic()  # the command acts on the next tic: until then the variables still show the player before it
        self._settle()
        self._walk_to(target[:2])
        if abs(self.position_units()[2] - target[2]) > HEIGHT_TOL_UNITS:
            self._fly_to(target[2])
        self._turn_to(math.degrees(yaw))
        self._look_to(math.degrees(tilt))
        self._settle()
        got = self.position_units()
        err = float(np.linalg.norm(got - target))
        yaw_err = abs(_wrap_deg(self.yaw_deg() - math.degrees(yaw)))
        if err > 1.0 or yaw_err > 0.5:
            why = ("the floor there is at another height at the map's start: did the recorded walk move a lift "
                   "or raise stairs? replay() its inputs instead" if abs(got[2] - target[2]) > 1.0 else
                   "outside the level, inside a wall, or a door or lift in the way")
            raise ValueError(f"start pose not reached: {err:.3g} map units and {yaw_err:.3g}° away ({why})")

    def replay(self, actions) -> None:
        """A new episode (as :meth:`start`) and then one tic per row of ``actions`` (forward, side, turn°, look°,
        up: a recording's ``actions`` after its first frame). The game is deterministic, so this reaches the
        recorded pose and level state (lifts, stairs and items as the recording left them) exactly."""
        self.start()
        for a in np.asarray(actions, dtype=np.float64).reshape(-1, 5):
            self.tic(int(a[0]), int(a[1]), float(a[2]), float(a[3]), int(a[4]))

    def _settle(self, max_tics: int = TICRATE) -> None:
        """Tics without input until the player is at rest at its standing (or flying) view height."""
        for _ in range(max_tics):
            v = self.variables()
            still = not np.any(v[3:5]) and (abs(v[5]) < 0.05 if self.flying else v[5] == 0.0)
            if still and (self.flying or abs(v[8] - EYE_HEIGHT_UNITS) < 1e-6):
                return
            self.tic()

    # ----- motion ---------------------------------------------------------------------------------------
    def execute(self, delta) -> Execution:
        """Move by ``delta`` (4, 4), a rigid motion in the camera's frame (the target is ``T @ Δ``, T =
        :meth:`pose`) through the game's physics: walk to the target position (speed capped at the walking speed,
        braking with reverse thrust), fly its height when the step commands one the floor did not give, then turn
        and look exactly (roll dropped, tilt clamped to the look limits). Ends at rest, the view back at its height
        after a step up or down."""
        D = geometry.as_pose(delta)
        if D.shape != (4, 4) or not np.isfinite(D).all():
            raise ValueError(f"execute needs one finite (4, 4) rigid motion, got shape {D.shape}")
        T = self.pose()
        target = T @ D
        goal = target[:3, 3] / UNIT_M
        start_tics = self.tics
        yaw, tilt, roll = yaw_tilt_roll(target[:3, :3])
        tilt_deg = math.degrees(tilt)
        clamped = not (-TILT_DOWN_LIMIT_DEG <= tilt_deg <= TILT_UP_LIMIT_DEG)
        tilt_deg = min(max(tilt_deg, -TILT_DOWN_LIMIT_DEG), TILT_UP_LIMIT_DEG)
        # the turn and the look ride on the walk's last tic when it is planned (one drawn tic for the whole step)
        rotate = (self._turn_input(math.degrees(yaw)), self._look_input(tilt_deg))
        reached, blocked = self._walk_to(goal[:2], rotate=rotate)
        flew = False
        if abs(float(target[2, 3] - T[2, 3])) > HEIGHT_TOL_UNITS * UNIT_M:
            if abs(self.position_units()[2] - goal[2]) > HEIGHT_TOL_UNITS:
                flew = True
                ok, stopped = self._fly_to(goal[2])
                reached, blocked = reached and ok, blocked or stopped
        # At rest includes the view height: after a step up or down Doom moves the eye back to 41 units over a few
        # tics, and a pose measured before that would not be the pose the player keeps.
        self._settle()
        self._turn_to(math.degrees(yaw))
        self._look_to(tilt_deg)
        pos = self.position_units()
        err = float(np.linalg.norm(pos - goal)) * UNIT_M
        return Execution(pose=self.pose(), target=target, reached=bool(reached), blocked=bool(blocked),
                         tics=self.tics - start_tics, position_error_m=err,
                         yaw_error_rad=math.radians(abs(_wrap_deg(self.yaw_deg() - math.degrees(yaw)))),
                         roll_dropped=roll, tilt_clamped=clamped, flew=flew)

    def _walk_input(self, e: np.ndarray, dist: float, vel: np.ndarray, yaw_deg: float) -> tuple[int, int]:
        """The (forward, side) thrust of one tic toward the remaining error ``e`` (map units, ``dist`` its length):
        a displacement of the error capped at the walking speed, less the current velocity ``vel``."""
        s = e if dist <= self.speed_units else e * (self.speed_units / dist)
        a = s - vel
        yaw = math.radians(yaw_deg)
        fwd = round(32.0 * (a[0] * math.cos(yaw) + a[1] * math.sin(yaw)))
        side = round(32.0 * (a[0] * math.sin(yaw) - a[1] * math.cos(yaw)))
        return max(-MAX_THRUST, min(MAX_THRUST, fwd)), max(-MAX_THRUST, min(MAX_THRUST, side))

    def _planned_walk(self, xy: np.ndarray, tol: float, rotate: tuple[float, float] = (0.0, 0.0)) -> bool:
        """Walk to ``xy`` by a plan made on a model of Doom's ground movement (the same control law as
        :meth:`_walk_to`, run on the model), advancing the game without drawing but for the last tic. True when the
        game ended where the plan did — at rest within ``tol`` — so nothing more is needed; False when it did not (a
        wall, a ledge, a slope, another friction) or no plan was made (falling): the caller goes on tic by tic from
        where the player is. Drawing a frame costs ~10× a tic; a unit step is 4 tics. ``rotate`` (turn, look
        inputs of :meth:`_turn_input`, :meth:`_look_input`): given, the plan runs undrawn and one more tic turns and
        looks at rest (a turn in a tic of thrust would turn the thrust too), drawn."""
        v = self.variables()
        fixed = v[[0, 1, 3, 4]] * 65536.0
        if (not self.flying and v[5] != 0.0) or np.any(np.abs(fixed - np.round(fixed)) > 1e-6):
            return False
        friction = _FRICTION_FLY_FIXED if self.flying else _FRICTION_FIXED
        x, y, vx, vy = (int(round(c)) for c in fixed)
        fine = (int(round(v[6] / 360.0 * 2 ** 32)) & 0xFFFFFFFF) >> 19
        right = (fine - 2048) & 8191
        cf, sf = _FINE_SINE[(fine + 2048) & 8191], _FINE_SINE[fine]
        cs, ss = _FINE_SINE[(right + 2048) & 8191], _FINE_SINE[right]
        dist0 = float(np.hypot(*(xy - v[:2])))
        plan = []
        for _ in range(int(2 * dist0 / self.speed_units) + 3 * TICRATE):
            e = xy - np.array([x, y]) / 65536.0
            dist = float(np.hypot(*e))
            if dist <= tol and vx == 0 and vy == 0:
                break
            f, s = self._walk_input(e, dist, np.array([vx, vy]) / 65536.0, v[6])
            if f:
                vx, vy = vx + ((f * 2048 * cf) >> 16), vy + ((f * 2048 * sf) >> 16)
            if s:
                vx, vy = vx + ((s * 2048 * cs) >> 16), vy + ((s * 2048 * ss) >> 16)
            x, y = x + vx, y + vy
            if abs(vx) < _STOPSPEED and abs(vy) < _STOPSPEED and not (f or s):
                vx = vy = 0
            else:
                vx, vy = (vx * friction) >> 16, (vy * friction) >> 16
            plan.append((f, s))
        else:
            return False
        turn, look = rotate
        if turn or look:
            plan.append((0, 0))
        if not plan:
            return True
        self.run_undrawn([(f, s, 0.0, 0.0, 0) for f, s in plan[:-1]])
        self.tic(forward=plan[-1][0], side=plan[-1][1], turn=turn, look=look)
        v = self.variables()
        return bool(np.hypot(*(xy - v[:2])) <= tol and not np.any(v[3:5]))

    def _walk_to(self, xy, tol: float = POSITION_TOL_UNITS, rotate=(0.0, 0.0)) -> tuple[bool, bool]:
        """Drive the player's (x, y) to ``xy`` (map units) with forward/side thrust; returns (reached, blocked).

        Each tic the thrust asks for a displacement of the remaining error capped at the walking speed, less the
        current velocity (Doom moves by the velocity, then applies friction), so the player brakes onto the target.
        On the ground the walk is first planned on a model of the game's movement and run without drawing
        (:meth:`_planned_walk`); where the game did not end as planned, it goes on tic by tic from where the player
        is. No progress for :data:`STALL_TICS` tics is a block; the player then coasts to rest. ``rotate``: see
        :meth:`_planned_walk` (the caller finishes any turn or look left)."""
        xy = np.asarray(xy, dtype=np.float64)
        if self._planned_walk(xy, tol, rotate):
            return True, False
        v = self.variables()
        dist0 = float(np.hypot(*(xy - v[:2])))
        max_tics = int(2 * dist0 / self.speed_units) + 3 * TICRATE
        best, stall = math.inf, 0
        for _ in range(max_tics):
            v = self.variables()
            e = xy - v[:2]
            dist = float(np.hypot(*e))
            vel = v[3:5]
            if dist <= tol and not np.any(vel):
                return True, False
            if dist < best - STALL_UNITS:
                best, stall = dist, 0
            else:
                stall += 1
                if stall >= STALL_TICS and dist > tol:
                    break
            fwd, side = self._walk_input(e, dist, vel, v[6])
            self.tic(forward=fwd, side=side)
        self._settle()
        v = self.variables()
        return bool(np.hypot(*(xy - v[:2])) <= tol), True

    def set_flying(self, on: bool = True) -> None:
        """Switch the ``fly`` cheat (no gravity, ``up`` thrust moves the player vertically)."""
        if bool(on) != self.flying:
            self._game.send_game_command("fly")
            self.tic()
            self.flying = bool(on)

    def _planned_fly(self, z_player: float, z_camera: float, tol: float) -> bool:
        """Fly to ``z_player`` by a plan made on a model of the fly cheat's vertical movement (the thrust sets the
        vertical velocity to ``up``·512 in 16.16 fixed point, the player moves by it, then it is multiplied by
        0xEB00; the same control law as :meth:`_fly_to`), advancing the game without drawing but for the last tic.
        True when the game ended within ``tol`` of ``z_camera`` with the vertical velocity under 0.05 units a tic;
        False otherwise (a floor or ceiling, the fly bob's drift): the caller goes on tic by tic."""
        v = self.variables()
        z, vz = int(round(v[2] * 65536.0)), int(round(v[5] * 65536.0))
        plan = []
        for _ in range(int(2 * abs(z_player - v[2]) / self.speed_units) + TICRATE):
            e = z_player - z / 65536.0
            if abs(e) <= tol / 2 and abs(vz) < 0.05 * 65536:
                break
            u = round(128.0 * max(-self.speed_units, min(self.speed_units, e)))
            if u == 0 and abs(vz) > 512:
                u = -1 if vz > 0 else 1
            if u:
                vz = u * 512
            z += vz
            vz = (vz * _FRICTION_FLY_FIXED) >> 16
            plan.append(u)
        else:
            return False
        if not plan:
            return True
        self.run_undrawn([(0, 0, 0.0, 0.0, u) for u in plan[:-1]])
        self.tic(up=plan[-1])
        v = self.variables()
        return abs(z_camera - v[11]) <= tol and abs(v[5]) < 0.05

    def _fly_to(self, z_camera: float, tol: float = HEIGHT_TOL_UNITS) -> tuple[bool, bool]:
        """Fly the camera's height to ``z_camera`` (map units); returns (reached, blocked). The fly thrust sets the
        vertical velocity (then friction 0.918 a tic): each tic asks for the remaining error of the player's z
        (the camera's lags a tic; the target is ``z_camera`` less the standing view height) capped at the walking
        speed; a residual velocity is cancelled with the smallest thrust. Ends at rest."""
        self.set_flying(True)
        z_player = z_camera - EYE_HEIGHT_UNITS
        if self._planned_fly(z_player, z_camera, tol):
            self._settle()
            return True, False
        best, stall = math.inf, 0
        dist0 = abs(z_player - self.variables()[2])
        for _ in range(int(2 * dist0 / self.speed_units) + 3 * TICRATE):
            v = self.variables()
            e = z_player - v[2]
            if abs(e) <= tol / 2 and abs(v[5]) < 0.05:
                break
            if abs(e) < best - STALL_UNITS:
                best, stall = abs(e), 0
            else:
                stall += 1
                if stall >= STALL_TICS and abs(e) > tol:
                    self._settle()
                    return False, True
            w = max(-self.speed_units, min(self.speed_units, e))
            u = round(128.0 * w)
            if u == 0 and abs(v[5]) > 1.0 / 128.0:
                u = -1 if v[5] > 0 else 1
            self.tic(up=u)
        self._settle()
        return abs(z_camera - self.position_units()[2]) <= tol, False

    def _turn_input(self, yaw_deg: float) -> float:
        """The turn input (degrees, + right) of one tic toward ``yaw_deg``: at most 90°, 0.0 when there."""
        units = round(_wrap_deg(yaw_deg - self.yaw_deg()) / 360.0 * ANGLE_UNITS)
        if units == 0:
            return 0.0
        step = max(-ANGLE_UNITS // 4, min(ANGLE_UNITS // 4, units))
        # + turn input turns right (clockwise, the yaw decreases); the game floors value/180*32768.
        return (-step + 1e-3) * 360.0 / ANGLE_UNITS

    def _look_input(self, tilt_deg: float) -> float:
        """The look input (degrees, + up) of one tic toward ``tilt_deg``: at most 45°, 0.0 when there."""
        tilt_deg = min(max(tilt_deg, -TILT_DOWN_LIMIT_DEG), TILT_UP_LIMIT_DEG)
        units = round((tilt_deg - self.tilt_deg()) / 360.0 * ANGLE_UNITS)
        if units == 0:
            return 0.0
        step = max(-ANGLE_UNITS // 8, min(ANGLE_UNITS // 8, units))
        return (step + 1e-3) * 360.0 / ANGLE_UNITS

    def _turn_to(self, yaw_deg: float) -> None:
        """Turn to ``yaw_deg`` exactly (to the game's 360/65536° resolution), at most 90° a tic."""
        for _ in range(4):
            turn = self._turn_input(yaw_deg)
            if not turn:
                return
            self.tic(turn=turn)

    def _look_to(self, tilt_deg: float) -> None:
        """Look to ``tilt_deg`` (+ up) exactly (360/65536° resolution), within the engine's limits."""
        for _ in range(4):
            look = self._look_input(tilt_deg)
            if not look:
                return
            self.tic(look=look)
