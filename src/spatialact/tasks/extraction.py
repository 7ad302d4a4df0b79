"""The paper's Action-Extraction Pipeline (docs/trajectories.md): a trajectory in, an :class:`ActionSequence` out.

1. **Keyframes** (:func:`keyframe_indices`): every ``round(fps)`` frames (one step per second), every frame where
   the gripper state changes, and the last frame. One step per keyframe interval (more where the cap splits it);
   the step that starts at a gripper change carries the new state. A change on the very last frame adds a final
   Stay step carrying it, so the sequence ends in the trajectory's final gripper state.
2. **metric** mode: closed-loop quantisation. Each interval takes the motion from the *replayed* pose reached so
   far to the next keyframe's true pose, decomposes it into truck, pedestal, dolly, tilt, pan, roll
   (docs/conventions.md) and rounds each to whole units (half away from zero). When a count exceeds the cap the interval
   is split into ``n = ⌈max count / cap⌉`` steps toward interpolated sub-targets (linear position, slerp rotation), each
   quantised the same way. Because every interval aims at the true keyframe from where replay really is, rounding never
   accumulates: at every keyframe the replayed pose is within ``(√3/2)·u_t`` in position (the body-frame
   translation error is at most ``u_t/2`` per axis) and ``1.5·u_r`` in rotation (at most ``u_r/2`` per angle, and
   the geodesic angle of a product is at most the sum of its factors' angles), whatever the length.
3. **frames** mode (the paper's key-press reading): per interval, per axis and sign, the number of frames whose
   per-frame speed passes the thresholds (default 0.01 m/s and 0.5°/s). Both signs may appear in one step; counts
   over the cap are spread evenly over ``⌈max count / cap⌉`` steps. Unless ``sizes`` is given, the unit sizes are
   the mean per-frame motion of the counted frames (translation and rotation separately), so replay is approximate.
4. ``frame="body"`` expresses each motion in the moving body's own frame (the paper's; ``T_next = T @ Δ``).
   ``frame="camera"`` expresses it in the observing camera's axes (``trajectory.camera_poses`` at the start of the
   interval): the body's origin moves by ``R_C t`` in the world and turns by ``R_C R R_Cᵀ`` about its own origin —
   "move the gripper right *in the image*". :func:`replay` with the same camera poses executes it.

Everything that runs per frame (keyframes, per-frame motions, speed thresholds, counting) is numpy over frames; only
the closed loop over keyframe intervals (about one per second of trajectory) is a Python loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .. import geometry
from ..action_space import ActionSequence, Step, StepSizes
from ..action_space.sequence import DEFAULT_CAP
from ..trajectories.trajectory import Trajectory
from ..vocab import KINDS

__all__ = ["Extraction", "extract_actions", "keyframe_indices", "replay", "quantisation_bound",
           "DEFAULT_THRESHOLDS", "frame_motions"]

# frames mode: per-frame speed thresholds (m/s, rad/s).
DEFAULT_THRESHOLDS = (0.01, math.radians(0.5))
MAX_STEPS = 100_000  # steps of one extraction: beyond this the trajectory's units are wrong, not the task long
_MAX_EXTRA_STEPS = 64


def quantisation_bound(sizes: StepSizes) -> tuple[float, float]:
    """The metric-mode bound at every keyframe: ``((√3/2)·u_t metres, 1.5·u_r radians)``."""
    return math.sqrt(3.0) / 2.0 * sizes.translation, 1.5 * sizes.rotation


@dataclass(frozen=True, eq=False)
class Extraction(ActionSequence):
    """An :class:`ActionSequence` (it is one: ``to_poses``, ``to_json`` ... work) plus how it was extracted.

    * ``keyframes``: frame indices of the keyframes (the first is the start frame, the last the end frame);
    * ``keyframe_steps``: for each keyframe, how many steps have run when it is reached, so
      ``replay(seq, T0)[keyframe_steps]`` are the replayed poses at ``keyframes``;
    * ``step_interval``: for each step, the keyframe interval ``j`` (``keyframes[j] → keyframes[j+1]``) it belongs
      to (the final gripper-only Stay step, if any, has the last keyframe's index);
    * ``step_cameras``: (K, 4, 4) observing-camera C2W poses per step when ``frame == "camera"``, else None;
    * ``position_errors`` / ``rotation_errors``: replayed-vs-true error (m, rad) at each keyframe.
    """

    keyframes: tuple = ()
    keyframe_steps: tuple = ()
    step_interval: tuple = ()
    mode: str = "metric"
    frame: str = "body"
    step_cameras: np.ndarray | None = None
    position_errors: np.ndarray | None = None
    rotation_errors: np.ndarray | None = None

    @property
    def sequence(self) -> ActionSequence:
        """The plain :class:`ActionSequence` (steps, sizes, cap)."""
        return ActionSequence(self.steps, self.sizes, self.cap)

    def summary(self) -> dict:
        """JSON-able facts about the extraction (for the CLI and task metadata)."""
        d = {"mode": self.mode, "frame": self.frame, "n_steps": len(self.steps), "keyframes": list(self.keyframes),
             "sizes": self.sizes.to_dict(), "cap": self.cap}
        if self.position_errors is not None and len(self.position_errors):
            d["max_position_error"] = float(np.max(self.position_errors))
            d["max_rotation_error"] = float(np.max(self.rotation_errors))
        return d


# ----- keyframes ----------------------------------------------------------------------------------------------
def keyframe_indices(n: int, fps: float, gripper: np.ndarray | None = None, stride: int | None = None) -> np.ndarray:
    """Keyframes for ``n`` frames: every ``stride`` (default ``round(fps)``) frames, every gripper change, the last.

    A gripper change at frame ``i`` means ``gripper[i] != gripper[i-1]``: the step starting at ``i`` carries it.
    """
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    stride = max(1, int(round(fps))) if stride is None else int(stride)
    if stride < 1:
        raise ValueError(f"keyframe stride must be ≥ 1, got {stride}")
    parts = [np.arange(0, n, stride), np.array([n - 1])]
    if gripper is not None and n > 1:
        g = np.asarray(gripper)
        parts.append(np.flatnonzero(g[1:] != g[:-1]) + 1)
    return np.unique(np.concatenate(parts)).astype(np.int64)


def _resolve_keyframes(traj: Trajectory, keyframes) -> np.ndarray:
    n = len(traj)
    if keyframes is None or isinstance(keyframes, (int, np.integer)):
        return keyframe_indices(n, traj.fps, traj.gripper, None if keyframes is None else int(keyframes))
    kf = np.unique(np.asarray(keyframes, dtype=np.int64))
    if kf.size and (kf[0] < 0 or kf[-1] >= n):
        raise ValueError(f"keyframes must lie in [0, {n - 1}], got {kf[0]}..{kf[-1]}")
    if not kf.size or kf[0] != 0:
        kf = np.concatenate([[0], kf])
    return kf


# ----- motions in the body or camera frame -------------------------------------------------------------------
def frame_motions(poses: np.ndarray, cams: np.ndarray | None = None) -> np.ndarray:
    """Motions (N−1, 6) ``(tx, ty, tz, tilt, pan, roll)`` between consecutive poses, vectorised.

    Body frame (``cams`` None): ``delta_to_motion(T_iᵀ T_{i+1})``. Camera frame: the world displacement and the
    world rotation ``R_{i+1} R_iᵀ``, both expressed in the axes of ``cams[i]``.
    """
    A, B = poses[:-1], poses[1:]
    if cams is None:
        return geometry.delta_to_motion(geometry.relative_pose(A, B))
    Rc = cams[:-1, :3, :3]
    RcT = np.swapaxes(Rc, -1, -2)
    t = np.einsum("nij,nj->ni", RcT, B[:, :3, 3] - A[:, :3, 3])
    Rm = RcT @ B[:, :3, :3] @ np.swapaxes(A[:, :3, :3], -1, -2) @ Rc
    ptr = geometry.matrix_to_ptr(Rm)
    return np.concatenate([t, ptr[:, 1:2], ptr[:, 0:1], ptr[:, 2:3]], axis=1)


def _ptr(R: np.ndarray) -> tuple[float, float, float]:
    """Scalar :func:`geometry.matrix_to_ptr` for one rotation (the closed loop calls it once per step)."""
    sin_t = min(1.0, max(-1.0, -float(R[1, 2])))
    cos_t = math.hypot(float(R[1, 0]), float(R[1, 1]))
    tilt = math.atan2(sin_t, cos_t)
    if cos_t < 1e-12:
        pan, roll = math.atan2(-float(R[2, 0]), float(R[0, 0])), 0.0
    else:
        pan, roll = math.atan2(float(R[0, 2]), float(R[2, 2])), math.atan2(float(R[1, 0]), float(R[1, 1]))
    return (math.pi if pan <= -math.pi else pan), tilt, (math.pi if roll <= -math.pi else roll)


def _ptr_matrix(pan: float, tilt: float, roll: float) -> np.ndarray:
    """Scalar ``R_y(pan) R_x(tilt) R_z(roll)`` (same product as :func:`geometry.ptr_to_matrix`)."""
    cp, sp, ct, st, cr, sr = (math.cos(pan), math.sin(pan), math.cos(tilt), math.sin(tilt), math.cos(roll),
                              math.sin(roll))
    return np.array([[cp * cr + sp * st * sr, -cp * sr + sp * st * cr, sp * ct],
                     [ct * sr, ct * cr, -st],
                     [-sp * cr + cp * st * sr, sp * sr + cp * st * cr, cp * ct]])


def _motion_between(cur: np.ndarray, tgt: np.ndarray, Rc: np.ndarray | None) -> np.ndarray:
    if Rc is None:
        RT = cur[:3, :3].T
        t = RT @ (tgt[:3, 3] - cur[:3, 3])
        pan, tilt, roll = _ptr(RT @ tgt[:3, :3])
    else:
        t = Rc.T @ (tgt[:3, 3] - cur[:3, 3])
        pan, tilt, roll = _ptr(Rc.T @ tgt[:3, :3] @ cur[:3, :3].T @ Rc)
    return np.array([t[0], t[1], t[2], tilt, pan, roll])


def _apply(cur: np.ndarray, motion: np.ndarray, Rc: np.ndarray | None) -> np.ndarray:
    R = _ptr_matrix(float(motion[4]), float(motion[3]), float(motion[5]))
    out = np.empty((4, 4))
    out[3] = (0.0, 0.0, 0.0, 1.0)
    if Rc is None:
        # cur @ [R | t]: translate along the body axes, then rotate.
        out[:3, :3] = cur[:3, :3] @ R
        out[:3, 3] = cur[:3, :3] @ motion[:3] + cur[:3, 3]
        return out
    out[:3, 3] = cur[:3, 3] + Rc @ motion[:3]
    out[:3, :3] = Rc @ R @ Rc.T @ cur[:3, :3]
    return out


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int64)


def _rotvec(R: np.ndarray) -> np.ndarray:
    """Log map of one rotation (3, 3) → rotation vector (3,), radians (numpy only: no scipy import per call)."""
    theta = float(geometry.geodesic_angle(R))
    if theta < 1e-12:
        return np.zeros(3)
    v = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if theta < np.pi - 1e-6:
        return v * (theta / (2.0 * np.sin(theta)))
    # Near π the antisymmetric part vanishes: the axis is the dominant column of R + I (either sign is a geodesic).
    B = R + np.eye(3)
    axis = B[:, int(np.argmax(np.linalg.norm(B, axis=0)))]
    return axis / np.linalg.norm(axis) * theta


def _rotmat(rv: np.ndarray) -> np.ndarray:
    """Exp map (Rodrigues): rotation vector (3,) → (3, 3)."""
    theta = float(np.linalg.norm(rv))
    if theta < 1e-12:
        return np.eye(3)
    k = rv / theta
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(theta) * K + (1.0 - np.cos(theta)) * (K @ K)


def _interp(A: np.ndarray, B: np.ndarray, f: float) -> np.ndarray:
    """Linear position, slerp rotation (geodesic) between poses A and B at fraction f."""
    if f >= 1.0:
        return B
    out = np.eye(4)
    out[:3, 3] = (1 - f) * A[:3, 3] + f * B[:3, 3]
    out[:3, :3] = A[:3, :3] @ _rotmat(f * _rotvec(A[:3, :3].T @ B[:3, :3]))
    return out


def replay(sequence: ActionSequence, T0, *, camera_poses=None) -> np.ndarray:
    """Execute a sequence from ``T0`` (C2W) and return the poses reached, (K+1, 4, 4).

    Body-frame sequences run through ``ActionSequence.to_poses`` (the same code). A camera-frame extraction (or
    ``camera_poses`` (K, 4, 4) given) moves each step in that step's camera axes, as :func:`extract_actions` did.
    """
    if camera_poses is None and isinstance(sequence, Extraction) and sequence.frame == "camera":
        camera_poses = sequence.step_cameras
    if camera_poses is None:
        return sequence.to_poses(T0)
    cams = geometry.as_pose(camera_poses)
    motions = sequence.as_motions()
    if len(cams) != len(motions):
        raise ValueError(f"camera_poses has {len(cams)} poses for {len(motions)} steps")
    poses = np.empty((len(motions) + 1, 4, 4))
    poses[0] = geometry.as_pose(T0)
    for k, m in enumerate(motions):
        poses[k + 1] = _apply(poses[k], m, cams[k][:3, :3])
    return poses


# ----- extraction ---------------------------------------------------------------------------------------------
def _default_sizes(traj: Trajectory) -> StepSizes:
    kind = traj.meta.get("kind")
    return StepSizes.for_kind(kind) if kind in KINDS else StepSizes.navigation()


def _thresholds(thresholds) -> tuple[float, float]:
    if thresholds is None:
        return DEFAULT_THRESHOLDS
    if isinstance(thresholds, dict):
        return float(thresholds.get("translation", DEFAULT_THRESHOLDS[0])), \
            float(thresholds.get("rotation", DEFAULT_THRESHOLDS[1]))
    a, b = thresholds
    return float(a), float(b)


def extract_actions(traj: Trajectory, sizes: StepSizes | None = None, mode: str = "metric", cap: int = DEFAULT_CAP,
                    keyframes=None, frame: str = "body", thresholds=None) -> Extraction:
    """Turn a trajectory into the paper's action sequence (docs/trajectories.md); see the module docstring.

    ``sizes``: unit step sizes (default: the trajectory kind's, navigation otherwise; in frames mode the mean
    per-frame motion). ``keyframes``: None (every ``round(fps)`` frames + gripper changes + last frame), an int
    stride (plus gripper changes and the last frame), or explicit frame indices (0 is added when missing).
    ``thresholds``: frames-mode speeds ``(m/s, rad/s)`` or ``{"translation": .., "rotation": ..}``.
    """
    if mode not in ("metric", "frames"):
        raise ValueError(f"mode must be 'metric' or 'frames', got {mode!r}")
    if frame not in ("body", "camera"):
        raise ValueError(f"frame must be 'body' or 'camera', got {frame!r}")
    if not isinstance(cap, (int, np.integer)) or cap < 1:
        raise ValueError(f"cap must be a positive integer, got {cap!r}")
    if frame == "camera" and traj.camera_poses is None:
        raise ValueError(f"frame='camera' needs the observing camera's poses, and {traj.meta.get('path', 'this')} "
                         "trajectory has none")
    kf = _resolve_keyframes(traj, keyframes)
    if mode == "metric":
        return _extract_metric(traj, sizes or _default_sizes(traj), int(cap), kf, frame)
    return _extract_frames(traj, sizes, int(cap), kf, frame, _thresholds(thresholds))


def _step_grippers(traj: Trajectory, kf: np.ndarray) -> list:
    if traj.gripper is None:
        return [None] * max(0, len(kf) - 1)
    return [int(traj.gripper[k]) for k in kf[:-1]]


def _final_gripper_stay(traj: Trajectory, kf: np.ndarray) -> int | None:
    """The final state when the gripper changes on the last keyframe (else None: nothing to add)."""
    if traj.gripper is None or len(kf) < 2:
        return None
    last, prev = int(traj.gripper[kf[-1]]), int(traj.gripper[kf[-1] - 1])
    return last if last != prev else None


def _extract_metric(traj: Trajectory, sizes: StepSizes, cap: int, kf: np.ndarray, frame: str) -> Extraction:
    units = sizes.units()
    T = traj.poses
    cams = traj.camera_poses if frame == "camera" else None
    grips = _step_grippers(traj, kf)
    signed, step_grip, step_int, step_cam = [], [], [], []
    kf_steps = [0]
    cur = T[kf[0]].copy()
    replayed = [cur]
    for j in range(len(kf) - 1):
        start, target = cur, T[kf[j + 1]]
        Rc = None if cams is None else cams[kf[j]][:3, :3]
        counts = _round_half_away(_motion_between(start, target, Rc) / units)
        n = max(1, math.ceil(int(np.abs(counts).max()) / cap))
        if len(signed) + n > MAX_STEPS:
            raise ValueError(f"{traj.meta.get('path', 'trajectory')}: frames {int(kf[j])}→{int(kf[j + 1])}: the "
                             f"motion ({float(np.linalg.norm(target[:3, 3] - start[:3, 3])):.4g} m) needs {n} steps "
                             f"of at most {cap} units of {sizes.translation:g} m / {sizes.rotation:g} rad, more "
                             f"than {MAX_STEPS} steps in all: check the trajectory's units, or give larger unit sizes")
        sub = 1
        while True:
            tgt = _interp(start, target, min(sub, n) / n) if n > 1 else target  # past n: not beyond the target
            c = counts if (n == 1 and sub == 1) else _round_half_away(_motion_between(cur, tgt, Rc) / units)
            big = int(np.abs(c).max())
            done = sub >= n and big <= cap
            if big > cap:
                c = np.clip(c, -cap, cap)
            cur = _apply(cur, c * units, Rc)
            signed.append(c)
            step_grip.append(grips[j])
            step_int.append(j)
            if Rc is not None:
                step_cam.append(cams[kf[j]])
            if done:
                break
            sub += 1
            # n is sized from the counts in the start frame; as the camera turns, a translation's largest
            # component in the current frame can exceed them, the capped steps fall behind the interpolated path,
            # and the steps after n (aimed at the keyframe from where the last one ended) catch up: at most about
            # as many again. A guard, not a code path for a finite motion:
            if sub > n + max(_MAX_EXTRA_STEPS, n) or len(signed) >= MAX_STEPS:
                raise ValueError(f"{traj.meta.get('path', 'trajectory')}: frames {int(kf[j])}→{int(kf[j + 1])}: "
                                 f"the steps do not reach the keyframe within {sub} steps (or {MAX_STEPS} in all); "
                                 f"check the trajectory's units, or give larger unit sizes")
        kf_steps.append(len(signed))
        replayed.append(cur)
    final = _final_gripper_stay(traj, kf)
    if final is not None:
        signed.append(np.zeros(6, dtype=np.int64))
        step_grip.append(final)
        step_int.append(len(kf) - 1)
        if cams is not None:
            step_cam.append(cams[kf[-1]])
    steps = tuple(Step.from_signed(s, g) for s, g in zip(np.reshape(signed, (-1, 6)).tolist(), step_grip))
    rep = np.stack(replayed)
    pos_err = np.linalg.norm(rep[:, :3, 3] - T[kf, :3, 3], axis=1)
    rot_err = geometry.rotation_error(rep, T[kf])
    return Extraction(steps, sizes, cap, keyframes=tuple(int(k) for k in kf), keyframe_steps=tuple(kf_steps),
                      step_interval=tuple(step_int), mode="metric", frame=frame,
                      step_cameras=np.stack(step_cam) if cams is not None and step_cam else None,
                      position_errors=pos_err, rotation_errors=rot_err)


def _split_counts(counts: np.ndarray, cap: int) -> np.ndarray:
    """Spread one interval's 12 counts over ⌈max/cap⌉ steps as evenly as possible (earlier steps get the extra)."""
    n = max(1, math.ceil(int(counts.max(initial=0)) / cap))
    base, rem = np.divmod(counts, n)
    return base[None, :] + (np.arange(n)[:, None] < rem[None, :]).astype(np.int64)


def _extract_frames(traj: Trajectory, sizes: StepSizes | None, cap: int, kf: np.ndarray, frame: str,
                    thr: tuple[float, float]) -> Extraction:
    T = traj.poses
    n = len(T)
    cams = traj.camera_poses if frame == "camera" else None
    grips = _step_grippers(traj, kf)
    n_int = len(kf) - 1
    counts = np.zeros((max(n_int, 0), 12), dtype=np.int64)
    if n > 1 and n_int > 0:
        m = frame_motions(T, cams)                                   # (N−1, 6) per-frame motion
        dt = np.diff(traj.timestamps)
        speed = m / dt[:, None]
        th = np.array([thr[0]] * 3 + [thr[1]] * 3)
        pos, neg = speed > th, speed < -th                          # (N−1, 6)
        interval = np.searchsorted(kf, np.arange(n - 1), side="right") - 1
        valid = interval < n_int                                     # transitions after the last keyframe: none
        signs = np.stack([pos, neg], axis=2).reshape(n - 1, 12)      # column 2a = +axis a, 2a+1 = −axis a
        np.add.at(counts, interval[valid], signs[valid].astype(np.int64))
        if sizes is None:
            counted = pos | neg
            a = np.abs(m)
            ut = a[:, :3][counted[:, :3]]
            ur = a[:, 3:][counted[:, 3:]]
            base = _default_sizes(traj)
            sizes = StepSizes(float(ut.mean()) if ut.size else base.translation,
                              float(ur.mean()) if ur.size else base.rotation)
    sizes = sizes or _default_sizes(traj)
    steps, step_int, step_cam, kf_steps = [], [], [], [0]
    for j in range(n_int):
        for row in _split_counts(counts[j], cap):
            steps.append(Step(counts=tuple(int(x) for x in row), gripper=grips[j]))
            step_int.append(j)
            if cams is not None:
                step_cam.append(cams[kf[j]])
        kf_steps.append(len(steps))
    final = _final_gripper_stay(traj, kf)
    if final is not None:
        steps.append(Step.stay(final))
        step_int.append(len(kf) - 1)
        if cams is not None:
            step_cam.append(cams[kf[-1]])
    ext = Extraction(tuple(steps), sizes, cap, keyframes=tuple(int(k) for k in kf), keyframe_steps=tuple(kf_steps),
                     step_interval=tuple(step_int), mode="frames", frame=frame,
                     step_cameras=np.stack(step_cam) if cams is not None and step_cam else None)
    rep = replay(ext, T[kf[0]])[list(kf_steps)]
    return _with_errors(ext, rep, T[kf])


def _with_errors(ext: Extraction, rep: np.ndarray, true: np.ndarray) -> Extraction:
    from dataclasses import replace

    return replace(ext, position_errors=np.linalg.norm(rep[:, :3, 3] - true[:, :3, 3], axis=1),
                   rotation_errors=geometry.rotation_error(rep, true))


def extract_many(trajs: Sequence[Trajectory], **kw) -> list[Extraction]:
    """:func:`extract_actions` over several trajectories with the same options."""
    return [extract_actions(t, **kw) for t in trajs]
