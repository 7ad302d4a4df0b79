"""A habitat-sim backend for CameraNav: the same environment, rendered by habitat-sim from a mesh scene.

:class:`HabitatWorld` is :class:`~spatialact.envs.free_camera.FreeCameraWorld` (the same free camera, moves and
random tasks) whose backend is habitat-sim instead of PyBullet; :class:`HabitatCameraNavEnv` is CameraNav over it.
Used by ``make_env("nav", backend="habitat", scene={"generator": "mesh", "mesh": "path/to/scene.glb"})`` when
``habitat_sim`` imports; otherwise construction fails with :class:`HabitatUnavailable`, naming the install route
(``conda install habitat-sim -c conda-forge -c aihabitat``).

Frames. spatialact poses are C2W in a +Z-up world with OpenCV camera axes. habitat-sim's world is +Y up and its
cameras use OpenGL axes (+X right, +Y up, −Z forward). So a spatialact pose ``T`` becomes the habitat camera pose
``zup_to_yup(opencv_to_opengl(T))`` (and back with the inverses). The agent carries one colour and one depth
``CameraSensorSpec`` at its origin, so the agent state *is* the camera pose (``AgentState.position``,
``AgentState.rotation`` as a quaternion). habitat-sim's sensors take a horizontal field of view; ours is vertical.
Only the pose helpers (pure numpy) are tested where habitat-sim is not installed.
"""

from __future__ import annotations

import math

import numpy as np

from .. import geometry
from .camera_nav import CameraNavEnv
from .free_camera import FreeCameraWorld
from .camera import CameraSpec
from .scenes import SceneInfo, normalise_scene_spec

__all__ = ["HabitatCameraNavEnv", "HabitatWorld", "HabitatSim", "HabitatUnavailable", "INSTALL_HINT", "pose_to_habitat", "pose_from_habitat",
           "habitat_hfov", "habitat_available"]

INSTALL_HINT = ("habitat-sim is not installed; install it with conda: "
                "`conda install habitat-sim -c conda-forge -c aihabitat` (add `headless` for machines without a "
                "display); it has no pip wheel")


class HabitatUnavailable(ImportError):
    """``habitat_sim`` cannot be imported."""


def habitat_available() -> bool:
    try:
        import habitat_sim  # noqa: F401
    except Exception:
        return False
    return True


def pose_to_habitat(T) -> tuple[np.ndarray, np.ndarray]:
    """spatialact C2W (Z-up world, OpenCV camera) → habitat (position (3,), quaternion xyzw (4,)) of a Y-up world,
    OpenGL-axes camera."""
    H = geometry.zup_to_yup(geometry.opencv_to_opengl(geometry.as_pose(T)))
    q, t = geometry.pose_to_quat_trans(H)
    return t, q


def pose_from_habitat(position, quat_xyzw) -> np.ndarray:
    """Inverse of :func:`pose_to_habitat`."""
    H = geometry.pose_from_quat_trans(np.asarray(quat_xyzw, dtype=np.float64), np.asarray(position, dtype=np.float64))
    return geometry.opengl_to_opencv(geometry.yup_to_zup(H))


def habitat_hfov(fov_deg: float, width: int, height: int) -> float:
    """habitat-sim's horizontal field of view (degrees) for our vertical one and the image aspect."""
    return math.degrees(2.0 * math.atan(math.tan(math.radians(fov_deg) / 2.0) * width / height))


class HabitatSim:
    """habitat-sim as a world's backend: renders like :class:`~spatialact.envs.rendering.BulletBackend` (the same
    ``render`` and ``render_batch``) from the mesh scene it loaded."""

    def __init__(self, fov_deg: float):
        try:
            import habitat_sim
        except Exception as e:  # ImportError, or a broken install raising something else
            raise HabitatUnavailable(f"{INSTALL_HINT} ({type(e).__name__}: {e})") from e
        self.hs = habitat_sim
        self.sim = None
        self.fov_deg = fov_deg
        self._res = None
        self._scene = None
        self.gl_renderer = "habitat-sim"
        self.renderer = "habitat"
        self.light = {}

    def load(self, scene_path: str, cam: CameraSpec) -> None:
        hs = self.hs
        if self.sim is not None and self._scene == scene_path and self._res == (cam.width, cam.height):
            return
        self.close()
        sim_cfg = hs.SimulatorConfiguration()
        sim_cfg.scene_id = scene_path
        sim_cfg.enable_physics = False
        specs = []
        for uuid, kind in (("color", hs.SensorType.COLOR), ("depth", hs.SensorType.DEPTH)):
            spec = hs.CameraSensorSpec()
            spec.uuid = uuid
            spec.sensor_type = kind
            spec.sensor_subtype = hs.SensorSubType.PINHOLE
            spec.resolution = [cam.height, cam.width]
            spec.position = [0.0, 0.0, 0.0]  # at the agent's origin: the agent state is the camera pose
            spec.hfov = habitat_hfov(cam.fov_deg, cam.width, cam.height)
            spec.near = cam.near
            spec.far = cam.far
            specs.append(spec)
        agent_cfg = hs.agent.AgentConfiguration()
        agent_cfg.sensor_specifications = specs
        self.sim = hs.Simulator(hs.Configuration(sim_cfg, [agent_cfg]))
        self._agent = self.sim.initialize_agent(0)
        self._scene, self._res = scene_path, (cam.width, cam.height)

    def render(self, T_c2w, cam: CameraSpec, depth: bool = True, segmentation: bool = False):
        if self.sim is None:
            raise RuntimeError("no habitat scene loaded")
        hs = self.hs
        if (cam.width, cam.height) != self._res:
            self.load(self._scene, cam)
        pos, q = pose_to_habitat(T_c2w)
        state = hs.agent.AgentState()
        state.position = pos.astype(np.float32)
        state.rotation = hs.utils.common.quat_from_coeffs(q)  # habitat takes [x, y, z, w] coefficients here
        self._agent.set_state(state, infer_sensor_states=True)
        obs = self.sim.get_sensor_observations()
        rgb = np.asarray(obs["color"])[..., :3].astype(np.uint8)
        d = np.asarray(obs["depth"], dtype=np.float32) if depth else None
        if d is not None:
            d = np.where(d <= 0, np.float32(cam.far), d)  # habitat writes 0 where nothing was hit
        return rgb, d, None

    def render_batch(self, poses, cam: CameraSpec, depth: bool = True, segmentation: bool = False):
        """K views, rendered in turn: (rgb (K, H, W, 3), depth (K, H, W) or None, None)."""
        out = [self.render(T, cam, depth=depth) for T in poses]
        return np.stack([o[0] for o in out]), np.stack([o[1] for o in out]) if depth else None, None

    def reset_world(self) -> None:
        pass

    def close(self) -> None:
        if self.sim is not None:
            self.sim.close()
            self.sim = None


class HabitatWorld(FreeCameraWorld):
    """The free camera rendered by habitat-sim; scenes are mesh files (``{"generator": "mesh", "mesh": path}``)."""

    def make_backend(self, renderer: str):
        return HabitatSim(self.base_camera.fov_deg)

    def load_scene(self, spec: dict, where: str = "scene") -> None:
        spec = normalise_scene_spec(spec)
        if spec["generator"] != "mesh":
            raise ValueError("the habitat backend renders mesh scenes only: pass scene={'generator': 'mesh', "
                             f"'mesh': 'path/to/scene.glb'}} (got generator {spec['generator']!r})")
        key = repr(sorted(spec.items()))
        if key == self.scene_key:
            return
        import trimesh

        self.backend.load(spec["mesh"], self.camera)
        bounds = geometry.yup_to_zup(np.eye(4))[:3, :3] @ np.asarray(trimesh.load(spec["mesh"], force="mesh").bounds).T
        lo, hi = bounds.min(axis=1), bounds.max(axis=1)
        nav = np.stack([lo + 0.3, np.maximum(hi - 0.3, lo + 0.3)], axis=1)
        self.scene, self.replay, self._recording = SceneInfo(spec=spec, nav_box=nav), None, None
        self.scene_key = key


class HabitatCameraNavEnv(CameraNavEnv):
    """CameraNav rendered by habitat-sim; scenes are mesh files (``{"generator": "mesh", "mesh": path}``)."""

    world_class = HabitatWorld
