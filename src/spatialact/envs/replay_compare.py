"""``replay_trajectory``: a recorded trajectory stepped in its replay scene, recorded beside simulated.

The trajectory's metric-mode ground truth over its keyframes (docs/trajectories.md, the body frame) is executed in the
environment of its replay scene (:mod:`spatialact.envs.replay_world`); at every keyframe the simulated view from the
recorded observing camera (DROID's exterior camera, EgoDex's head camera at that keyframe, the simulated camera
itself for camera paths) is rendered beside the recorded frame, and the pose reached is compared with the recorded
one. Poses: (4, 4) C2W in the trajectory's frame (metres, radians).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import geometry
from .replay_world import prime_trajectory_cache, replay_kind, replay_scene_for

__all__ = ["ReplayResult", "replay_trajectory", "contact_sheet", "write_contact_sheet", "write_side_by_side_video"]


@dataclass(frozen=True)
class ReplayResult:
    """``keyframes`` (K+1,) frame indices; ``recorded`` (K+1, H, W, 3) uint8 frames (None without video);
    ``simulated`` (K+1, H, W, 3) uint8 renders from the same camera; ``poses`` (K+1, 4, 4) simulated and
    ``recorded_poses`` (K+1, 4, 4) recorded poses of the moving body; ``position_errors`` (m) and
    ``rotation_errors`` (rad) between them; ``bound`` the quantisation bound (docs/trajectories.md) (m, rad) of the
    ground truth's unit sizes; ``scene`` the replay scene used; ``task`` the replayed task; ``renderer``."""

    keyframes: np.ndarray
    recorded: np.ndarray | None
    simulated: np.ndarray
    poses: np.ndarray
    recorded_poses: np.ndarray
    position_errors: np.ndarray
    rotation_errors: np.ndarray
    bound: tuple
    scene: dict
    task: object
    renderer: str

    def summary(self) -> dict:
        return {"keyframes": [int(k) for k in self.keyframes], "bound_m": self.bound[0],
                "bound_deg": float(np.degrees(self.bound[1])),
                "max_position_error_m": float(self.position_errors.max()),
                "max_rotation_error_deg": float(np.degrees(self.rotation_errors.max())),
                "source": self.scene.get("source"), "renderer": self.renderer}


def replay_trajectory(traj, *, scene: dict | None = None, observation: str = "sim", keyframes=None, sizes=None,
                      width: int | None = None, height: int = 128, renderer: str = "tiny",
                      max_keyframes: int | None = None) -> ReplayResult:
    """Step ``traj`` (a :class:`~spatialact.trajectories.Trajectory`) in its replay scene.

    ``scene``: a replay scene (docs/tasks.md); None builds the default one (:func:`replay_scene_for`: DROID's
    recorded extrinsics and table rule, EgoDex with a table, a room around the segment for camera paths).
    ``keyframes``: frame indices (default: the scene's, else one a second plus gripper changes and the last frame);
    ``max_keyframes`` keeps the first ones only. ``observation``: ``"sim"`` (default) or ``"both"``/``"recorded"``
    (the environment's recorded observation is exercised too; the result holds the recorded keyframes whenever
    the trajectory has frames). ``sizes``: unit steps (default: the kind's).
    """
    from ..action_space import StepSizes
    from ..tasks import Task
    from ..tasks.extraction import extract_actions, keyframe_indices, quantisation_bound
    from .registry import make_env

    if keyframes is None and scene is not None and scene.get("keyframes"):
        keyframes = scene["keyframes"]
    if keyframes is None:
        keyframes = keyframe_indices(len(traj), traj.fps, traj.gripper)
    kf = np.asarray(keyframes, dtype=np.int64)
    if max_keyframes is not None:
        kf = kf[:max(2, int(max_keyframes))]
    if len(kf) < 2 or np.any(np.diff(kf) <= 0) or kf[0] < 0 or kf[-1] >= len(traj):
        raise ValueError(f"keyframes: need ≥ 2 strictly increasing frame indices within 0..{len(traj) - 1}")
    if scene is None:
        scene = replay_scene_for(traj, kf)
    scene = {**scene, "keyframes": [int(k) for k in kf]}
    prime_trajectory_cache(scene, traj)
    kind = replay_kind(scene)
    sizes = sizes or StepSizes.for_kind(kind)
    sub = traj.select(np.arange(kf[0], kf[-1] + 1))
    if kind == "nav" and sub.gripper is not None:
        from dataclasses import replace

        sub = replace(sub, gripper=None)
    ex = extract_actions(sub, sizes=sizes, mode="metric", keyframes=(kf - kf[0]).tolist())
    seq = ex.sequence
    task = Task(id=f"replay-{scene.get('source')}-{int(kf[0])}-{int(kf[-1])}", kind=kind,
                source=str(traj.meta.get("source", "trajectory")), start_pose=traj.poses[kf[0]],
                goal_pose=traj.poses[kf[-1]], gt=seq, sizes=sizes, scene=scene, instruction=traj.instruction)
    env = make_env(kind, task=task, observation=observation, width=width, height=height, renderer=renderer,
                   max_steps=max(1, len(seq)), terminate_on_success=False, wrap=False)
    try:
        env.reset(options={"task": task})
        W, H = env.camera.width, env.camera.height
        # ex.keyframes are the keyframes actually used (the extractor adds gripper changes): map them back
        used = np.asarray(ex.keyframes, dtype=np.int64) + kf[0]
        at = {int(s): m for m, s in enumerate(ex.keyframe_steps)}
        sim_frames, poses = [], []

        def snap(m: int) -> None:
            if kind == "nav":  # the camera is the moving body
                cam = env.pose
            elif env.world.replay.camera_poses is not None:  # EgoDex: the recorded head camera at this keyframe
                cam = env.world.replay.camera_poses[int(used[m])]
            else:  # DROID: the exterior camera
                cam = env.world.replay.fixed_camera
            sim_frames.append(env.render_view(cam))
            poses.append(env.pose)

        snap(0)
        for i, step in enumerate(seq.steps, start=1):
            env.apply_step(step, seq.sizes, observe=False)
            if i in at and at[i] > 0:
                snap(at[i])
        rec_poses = traj.poses[used]
        poses = np.stack(poses)
        pe = np.linalg.norm(poses[:, :3, 3] - rec_poses[:, :3, 3], axis=1)
        re = geometry.rotation_error(poses, rec_poses)
        recorded = None
        if traj.images is not None:
            frames = traj.frames(used.tolist())
            recorded = np.stack([_resize(f, W, H) for f in frames])
        return ReplayResult(keyframes=used, recorded=recorded, simulated=np.stack(sim_frames), poses=poses,
                            recorded_poses=rec_poses, position_errors=pe, rotation_errors=np.asarray(re),
                            bound=quantisation_bound(seq.sizes), scene=scene, task=task,
                            renderer=env.world.gl_renderer)
    finally:
        env.close()


def _resize(rgb: np.ndarray, width: int, height: int) -> np.ndarray:
    if rgb.shape[:2] == (height, width):
        return rgb
    from PIL import Image

    return np.asarray(Image.fromarray(rgb).resize((int(width), int(height)), Image.BILINEAR))


def contact_sheet(result: ReplayResult, max_rows: int = 8, title: str | None = None) -> np.ndarray:
    """An RGB image (uint8): one row per keyframe (at most ``max_rows``, spread evenly), recorded | simulated, each
    row labelled with the frame index and the pose error (mm, degrees)."""
    from PIL import Image, ImageDraw

    n = len(result.keyframes)
    rows = np.unique(np.linspace(0, n - 1, min(n, max_rows)).round().astype(int))
    H, W = result.simulated.shape[1:3]
    label_h, gap, head = 16, 4, 22
    sheet = Image.new("RGB", (2 * W + 3 * gap, head + len(rows) * (H + label_h + gap) + gap), (255, 255, 255))
    d = ImageDraw.Draw(sheet)
    d.text((gap, 4), title or "recorded | simulated", fill=(0, 0, 0))
    y = head
    for r in rows:
        rec = result.recorded[r] if result.recorded is not None else np.full((H, W, 3), 200, np.uint8)
        sheet.paste(Image.fromarray(rec), (gap, y))
        sheet.paste(Image.fromarray(result.simulated[r]), (2 * gap + W, y))
        d.text((gap, y + H + 2), f"frame {int(result.keyframes[r])}: pose error "
                                 f"{result.position_errors[r] * 1000:.1f} mm, "
                                 f"{np.degrees(result.rotation_errors[r]):.2f} deg", fill=(0, 0, 0))
        y += H + label_h + gap
    return np.asarray(sheet)


def write_contact_sheet(result: ReplayResult, path, max_rows: int = 8, title: str | None = None) -> str:
    from ..trajectories.video import write_png

    return write_png(str(path), contact_sheet(result, max_rows, title))


def write_side_by_side_video(result: ReplayResult, path, fps: float = 2.0) -> str:
    """An mp4 (PyAV; H.264, MPEG-4 where x264 is missing): one frame per keyframe, recorded | simulated."""
    from fractions import Fraction

    import av

    sim = result.simulated
    rec = result.recorded if result.recorded is not None else np.full_like(sim, 200)
    frames = np.concatenate([rec, sim], axis=2)
    H, W = frames.shape[1:3]
    frames = np.pad(frames, ((0, 0), (0, H % 2), (0, W % 2), (0, 0)))  # yuv420p needs even sizes
    with av.open(str(path), "w") as c:
        try:
            s = c.add_stream("libx264", rate=Fraction(fps).limit_denominator(1000))
        except Exception:  # noqa: BLE001 - PyAV builds without x264
            s = c.add_stream("mpeg4", rate=Fraction(fps).limit_denominator(1000))
        s.width, s.height, s.pix_fmt = frames.shape[2], frames.shape[1], "yuv420p"
        for f in frames:
            for pkt in s.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="rgb24")):
                c.mux(pkt)
        for pkt in s.encode():
            c.mux(pkt)
    return str(path)
