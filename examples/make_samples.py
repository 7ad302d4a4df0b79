"""Make the sample recordings under examples/ that the README's trajectory commands read.

    .venv/bin/python examples/make_samples.py             # rewrites examples/droid/, egodex/ and camera_walk.txt
    .venv/bin/python examples/make_samples.py --out DIR   # writes the same files under DIR instead

No dataset can be downloaded into the project, so all three recordings are **synthetic**: made here from chosen
motions, written in the exact layouts of the real datasets (what ``spatialact.trajectories`` reads), and the same
bytes on every run with the same library versions (no randomness without a fixed seed, no clock):

* ``droid/`` — one DROID episode in LeRobot's v3.0 layout (the reader also reads v2.1): a Franka Panda
  picks a block up and puts it down 0.35 m to the left, turning it 45°, in 9.6 s at 15 Hz. ``meta/info.json``,
  ``meta/episodes/chunk-000/file-000.parquet``, ``meta/tasks.parquet``, ``meta/stats.json``,
  ``data/chunk-000/file-000.parquet`` (DROID's column names and dtypes) and one H.264 mp4 per camera under
  ``videos/observation.images.<camera>/chunk-000/file-000.mp4`` (``exterior_1_left``, ``exterior_2_left``,
  ``wrist_left``, 320×180 as in the port). ``observation.state.joint_position`` is the posture the simulated Panda
  (pybullet_data's ``panda.urdf``) really has: inverse kinematics from the home posture for the first frame, then
  frame to frame as the arm moves; ``observation.state.cartesian_position`` is the flange pose forward kinematics
  gives for those joints (as on the robot, where the pose is computed from the joints). ``camera_extrinsics.*``
  are the cameras' poses in the robot-base frame. The videos are drawn, not filmed: the table with a 10 cm grid,
  the block and the arm (links through the recorded joints, the hand and fingers), projected through each camera
  with the replay's default ZED 2 intrinsics — so a replay's simulated views line up with the "recorded" ones.
* ``egodex/basic_pick_place/0.hdf5`` + ``0.mp4`` — one EgoDex episode (4.2 s at 30 Hz): a seated person's right hand
  picks a box up from the table and sets it down 25 cm to the left, the left hand resting, the head turning a
  little. ``transforms/camera`` and ``transforms/<joint>`` (float32 (T, 4, 4), ARKit world +Y up, ARKit camera
  axes), ``confidences/<joint>``, ``camera/intrinsic`` (pixels of the 1920×1080 video) and the file attributes
  (``llm_description``, ...). The video is drawn: table, box and both hands' skeletons seen from the head camera.
* ``camera_walk.txt`` — a camera path in TUM RGB-D's ground-truth format (``timestamp tx ty tz qx qy qz qw``, 30 Hz,
  four decimals, Unix-time stamps): a hand-held camera carried around a 5 m × 4 m room at about 0.3 m/s for 20 s,
  at chest height, panning with the walk, with a step bob and hand shake. It is made here — **not** a TUM
  recording — and has no images.

Needs the ``sim`` and ``data`` extras (PyBullet for the Panda's kinematics, OpenCV to draw, pyarrow/pandas, h5py and
PyAV to write); ``make`` installs both. Poses are C2W (4, 4) float64, metres, radians, world +Z up, cameras with
OpenCV axes, unless a format says otherwise (DROID: xyz + extrinsic "xyz" Euler; EgoDex: ARKit's +Y-up world).
"""

from __future__ import annotations

import argparse
import json
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DROID_FPS, EGODEX_FPS, WALK_FPS = 15.0, 30.0, 30.0
DROID_SIZE = (320, 180)      # width, height of the DROID port's videos
EGODEX_SIZE = (1920, 1080)   # EgoDex's video; camera/intrinsic is in its pixels
EGODEX_K = np.array([[1100.0, 0.0, 959.5], [0.0, 1100.0, 539.5], [0.0, 0.0, 1.0]])
DROID_CAMERAS = ("exterior_1_left", "exterior_2_left", "wrist_left")
INSTRUCTION = "pick up the blue block and put it down to the left"


# ----- motion helpers ---------------------------------------------------------------------------------------------
def min_jerk(waypoints, fps: float) -> np.ndarray:
    """Values (N, D) through ``waypoints`` [(value (D,), seconds to get there from the one before), ...] joined by
    minimum-jerk segments, sampled at ``fps``; the first waypoint's time is ignored, the last value is included."""
    out = []
    for (a, _), (b, dt) in zip(waypoints, waypoints[1:]):
        a, b = np.atleast_1d(np.asarray(a, float)), np.atleast_1d(np.asarray(b, float))
        s = np.linspace(0.0, 1.0, int(round(dt * fps)), endpoint=False)
        s = 10 * s**3 - 15 * s**4 + 6 * s**5
        out.append(a + (b - a) * s[:, None])
    out.append(np.atleast_1d(np.asarray(waypoints[-1][0], float))[None])
    return np.concatenate(out)


# ----- drawing (the "recorded" videos) ----------------------------------------------------------------------------
def project(K: np.ndarray, c2w: np.ndarray, points) -> tuple[np.ndarray, np.ndarray]:
    """Pixel coordinates (N, 2) and depths (N,) of world points seen by an OpenCV camera (C2W ``c2w``, pinhole K)."""
    P = np.atleast_2d(np.asarray(points, dtype=np.float64))
    R, t = c2w[:3, :3], c2w[:3, 3]
    pc = (P - t) @ R
    z = pc[:, 2]
    uv = (pc[:, :2] / np.where(z > 1e-6, z, np.nan)[:, None]) * [K[0, 0], K[1, 1]] + [K[0, 2], K[1, 2]]
    return uv, z


class Canvas:
    """Draws world geometry into one image through one camera, farthest first (a painter's algorithm)."""

    def __init__(self, image: np.ndarray, K: np.ndarray, c2w: np.ndarray, scale: int = 4):
        self.image, self.K, self.c2w, self.scale = image, K, c2w, scale
        self.items = []  # (depth, kind, pixel points (fixed point), colour, thickness)

    def _px(self, points):
        uv, z = project(self.K, self.c2w, points)
        if np.any(z <= 0.02) or not np.all(np.isfinite(uv)):
            return None, None
        return np.round(uv * self.scale).astype(np.int32), float(z.mean())

    def polygon(self, points, color):
        px, depth = self._px(points)
        if px is not None:
            self.items.append((depth, "poly", px, color, 0))

    def line(self, a, b, color, thickness: int):
        px, depth = self._px([a, b])
        if px is not None:
            self.items.append((depth, "line", px, color, thickness))

    def box(self, pose: np.ndarray, half, color):
        """A box (C2W ``pose``, half sizes in its axes): its faces that look at the camera, shaded by facing."""
        h = np.asarray(half, float)
        signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
        corners = (signs * h) @ pose[:3, :3].T + pose[:3, 3]
        faces = ((0, 1, 3, 2), (4, 5, 7, 6), (0, 1, 5, 4), (2, 3, 7, 6), (0, 2, 6, 4), (1, 3, 7, 5))
        normals = (-pose[:3, 0], pose[:3, 0], -pose[:3, 1], pose[:3, 1], -pose[:3, 2], pose[:3, 2])
        for face, nrm in zip(faces, normals):
            centre = corners[list(face)].mean(axis=0)
            if np.dot(nrm, self.c2w[:3, 3] - centre) <= 0:
                continue  # faces away
            shade = 0.55 + 0.45 * abs(float(np.dot(nrm, [0.3, -0.2, 0.93])))
            self.polygon(corners[list(face)], tuple(int(c * shade) for c in color))

    def draw(self) -> np.ndarray:
        import cv2

        shift = int(np.log2(self.scale))
        for _, kind, px, color, thickness in sorted(self.items, key=lambda it: -it[0]):
            if kind == "poly":
                cv2.fillConvexPoly(self.image, cv2.convexHull(px), color, cv2.LINE_AA, shift)
            else:
                cv2.line(self.image, tuple(px[0]), tuple(px[1]), color, thickness, cv2.LINE_AA, shift)
        return self.image


def table_background(K, c2w, size, z: float, x_range, y_range) -> np.ndarray:
    """A tiled floor 0.75 m below a wooden table top at height ``z`` (a 10 cm grid on it) over ``x_range`` ×
    ``y_range`` (m), seen by one camera (C2W, OpenCV axes): the replay scene's floor and table, drawn."""
    image = np.full((size[1], size[0], 3), (176, 178, 180), np.uint8)
    cv = Canvas(image, K, c2w)
    (x0, x1), (y0, y1) = x_range, y_range
    cx, cy, floor = (x0 + x1) / 2, (y0 + y1) / 2, z - 0.75
    cv.polygon([[cx - 4, cy - 4, floor], [cx + 4, cy - 4, floor], [cx + 4, cy + 4, floor], [cx - 4, cy + 4, floor]],
               (132, 130, 126))
    cv.draw()
    cv.items = []
    for v in np.arange(-4.0, 4.0 + 1e-9, 0.5):
        cv.line([cx + v, cy - 4, floor], [cx + v, cy + 4, floor], (198, 198, 194), 1)
        cv.line([cx - 4, cy + v, floor], [cx + 4, cy + v, floor], (198, 198, 194), 1)
    cv.draw()
    cv.items = []
    cv.box(np.array([[1, 0, 0, cx], [0, 1, 0, cy], [0, 0, 1, z - 0.02], [0, 0, 0, 1.0]]),
           [(x1 - x0) / 2, (y1 - y0) / 2, 0.02], (156, 112, 72))
    cv.draw()
    cv.items = []
    for x in np.arange(x0, x1 + 1e-9, 0.1):
        cv.line([x, y0, z + 1e-4], [x, y1, z + 1e-4], (122, 86, 54), 1)
    for y in np.arange(y0, y1 + 1e-9, 0.1):
        cv.line([x0, y, z + 1e-4], [x1, y, z + 1e-4], (122, 86, 54), 1)
    return cv.draw()


def write_mp4(path: Path, frames: np.ndarray, fps: float, crf: int = 23) -> None:
    """H.264 in an mp4 (yuv420p, constant rate ``fps``, no B-frames), one frame per array (RGB uint8)."""
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=Fraction(fps).limit_denominator(1000))
        stream.width, stream.height, stream.pix_fmt = frames.shape[2], frames.shape[1], "yuv420p"
        stream.options = {"crf": str(crf), "preset": "medium", "bf": "0", "threads": "1"}
        for f in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="rgb24")))
        container.mux(stream.encode())


# ----- DROID: the Panda's kinematics ------------------------------------------------------------------------------
def panda_joint_positions(cart) -> np.ndarray:
    """(N, 7) joint positions (radians) the simulated Panda (pybullet_data's ``panda.urdf``, base at the origin of
    DROID's robot-base frame) has at DROID end-effector poses ``cart`` (N, 6: xyz metres + extrinsic "xyz" Euler
    radians, the flange, as in ``observation.state.cartesian_position``): what a real arm records as
    ``observation.state.joint_position``. The grasp frame ``T @ DROID_TOOL_OFFSET`` (what the replay drives) is
    solved by IK from the home posture for frame 0 and from the frame before for every later frame, as the arm
    moves; poses are read back from float32 first, as the reader reads them. Where the Panda cannot reach a pose,
    the posture is the closest IK finds within the joint limits."""
    from spatialact import geometry
    from spatialact.envs.panda import ARM_JOINTS, FINGER_OPEN, PANDA_HOME, PandaArm, solve_panda_ik
    from spatialact.envs.rendering import BulletBackend
    from spatialact.envs.replay_world import DROID_TOOL_OFFSET

    poses = geometry.pose_from_droid(np.asarray(cart, dtype=np.float32).astype(np.float64))
    world = BulletBackend("tiny")
    try:
        arm = PandaArm(world, np.eye(4))
        p, cid, robot = arm.p, arm.cid, arm.robot
        q = list(PANDA_HOME)
        out = np.empty((len(poses), 7))
        for i, T in enumerate(poses):
            for j, qj in zip(ARM_JOINTS, q):
                p.resetJointState(robot, j, float(qj), physicsClientId=cid)
            solve_panda_ik(p, cid, robot, T @ DROID_TOOL_OFFSET, arm.lower, arm.upper, arm.ranges,
                           q + [FINGER_OPEN, FINGER_OPEN], refine=True)
            q = [p.getJointState(robot, j, physicsClientId=cid)[0] for j in ARM_JOINTS]
            out[i] = q
    finally:
        world.close()
    return out


def panda_links(joints: np.ndarray, finger: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Forward kinematics of the simulated Panda at joints (N, 7) radians with finger openings (N,) metres: the
    world positions (N, 12, 3) of the base and of links 0–10 (arm, flange, hand, fingers), and the DROID flange
    poses (N, 4, 4) (the grasp frame ``@ inv(DROID_TOOL_OFFSET)``)."""
    from spatialact import geometry
    from spatialact.envs.panda import ARM_JOINTS, EE_LINK, FINGER_JOINTS, PandaArm
    from spatialact.envs.rendering import BulletBackend
    from spatialact.envs.replay_world import DROID_TOOL_OFFSET

    world = BulletBackend("tiny")
    try:
        arm = PandaArm(world, np.eye(4))
        p, cid, robot = arm.p, arm.cid, arm.robot
        pts = np.zeros((len(joints), 12, 3))
        flange = np.zeros((len(joints), 4, 4))
        for i, (q, w) in enumerate(zip(joints, finger)):
            for j, qj in zip(ARM_JOINTS, q):
                p.resetJointState(robot, j, float(qj), physicsClientId=cid)
            for j in FINGER_JOINTS:
                p.resetJointState(robot, j, float(w), physicsClientId=cid)
            for k in range(11):
                pts[i, k + 1] = p.getLinkState(robot, k, computeForwardKinematics=True, physicsClientId=cid)[4]
            st = p.getLinkState(robot, EE_LINK, computeForwardKinematics=True, physicsClientId=cid)
            flange[i] = geometry.pose_from_quat_trans(st[5], st[4]) @ geometry.invert_pose(DROID_TOOL_OFFSET)
    finally:
        world.close()
    return pts, flange


# ----- DROID: the episode -----------------------------------------------------------------------------------------
def droid_motion() -> dict:
    """The pick and place as flange poses (N, 4, 4) in the robot-base frame (gripper pointing down), the gripper
    position (N,) 0 open … ~0.8 closed on the block, and the cameras' poses (C2W, OpenCV axes)."""
    from spatialact import geometry
    from spatialact.envs.camera import look_at

    # (x, y, z of the flange m, yaw °, gripper), seconds to get there
    way = [((0.42, 0.02, 0.46, 0, 0.0), 0.0),
           ((0.56, -0.16, 0.33, 0, 0.0), 2.0),    # above the block
           ((0.56, -0.16, 0.245, 0, 0.0), 1.2),   # down to it
           ((0.56, -0.16, 0.245, 0, 0.8), 0.8),   # close on it
           ((0.55, -0.12, 0.40, 10, 0.8), 1.2),   # lift
           ((0.50, 0.19, 0.38, 45, 0.8), 2.0),    # carry and turn
           ((0.50, 0.19, 0.25, 45, 0.8), 1.0),    # set it down
           ((0.50, 0.19, 0.25, 45, 0.0), 0.6),    # open
           ((0.44, 0.14, 0.42, 45, 0.0), 0.8)]    # rise
    v = min_jerk([(np.array(w), dt) for w, dt in way], DROID_FPS)
    down = geometry.rot_x(np.pi)  # DROID's end-effector +Z (the approach axis) pointing down
    R = np.stack([geometry.rot_z(np.radians(yaw)) @ down for yaw in v[:, 3]])  # turned about the base's vertical
    flange = geometry.make_pose(R, v[:, :3])
    exterior_1 = look_at([0.95, -0.62, 0.62], [0.5, 0.0, 0.12])
    exterior_2 = look_at([0.92, 0.66, 0.58], [0.5, 0.0, 0.12])
    return {"flange": flange, "gripper": v[:, 4], "exterior_1_left": exterior_1, "exterior_2_left": exterior_2}


def wrist_camera(flange: np.ndarray) -> np.ndarray:
    """The wrist camera (C2W, OpenCV axes) on the hand: 8 cm beside the flange, looking along the gripper's approach
    axis, tilted 20° toward the fingertips."""
    from spatialact import geometry

    mount = geometry.make_pose(geometry.rot_x(np.radians(-20.0)), [0.0, -0.08, 0.03])
    return flange @ mount


def droid_frames(name: str, cams: np.ndarray, links: np.ndarray, flange: np.ndarray, block: np.ndarray,
                 table_z: float) -> np.ndarray:
    """The drawn video (N, H, W, 3) of one camera (C2W per frame (N, 4, 4)): floor, table (where the replay puts
    them: 0.25 m around the grasp points), block, arm."""
    from spatialact.envs.replay_world import DROID_TOOL_OFFSET, droid_default_intrinsics

    w, h = DROID_SIZE
    d = droid_default_intrinsics(w, h)
    K = np.array([[d["fx"], 0, d["cx"]], [0, d["fy"], d["cy"]], [0, 0, 1.0]])
    grasp_xy = (flange @ DROID_TOOL_OFFSET)[:, :2, 3]
    lo, hi = grasp_xy.min(axis=0) - 0.25, grasp_xy.max(axis=0) + 0.25
    table = ((lo[0], hi[0]), (lo[1], hi[1]))
    static = name != "wrist_left"
    background = table_background(K, cams[0], DROID_SIZE, table_z, *table) if static else None
    frames = np.empty((len(cams), h, w, 3), np.uint8)
    for i, C in enumerate(cams):
        img = background.copy() if static else table_background(K, C, DROID_SIZE, table_z, *table)
        cv = Canvas(img, K, C)
        cv.box(block[i], [0.025, 0.025, 0.025], (40, 80, 210))
        arm = links[i]
        for a, b in zip(arm[:8], arm[1:9]):  # base → links 0..7 (the flange)
            cv.line(a, b, (236, 236, 232), 9 if static else 14)
        grasp = flange[i] @ DROID_TOOL_OFFSET
        hand = grasp.copy()
        hand[:3, 3] = grasp[:3, 3] - 0.065 * grasp[:3, 2]
        cv.box(hand, [0.025, 0.1, 0.03], (60, 60, 64))
        for f in (arm[10], arm[11]):  # the two fingers, from the hand to their tips
            cv.line(f - 0.045 * grasp[:3, 2], f + 0.005 * grasp[:3, 2], (90, 90, 96), 4 if static else 8)
        frames[i] = cv.draw()
    return frames


def droid_episode() -> dict:
    """Everything one DROID episode records, per frame (see the module docstring)."""
    from spatialact import geometry
    from spatialact.envs.replay_world import DROID_TOOL_OFFSET, droid_table_height

    m = droid_motion()
    n = len(m["flange"])
    cart_wanted = geometry.pose_to_droid(m["flange"])
    joints = panda_joint_positions(cart_wanted).astype(np.float32).astype(np.float64)
    finger = 0.04 * (1.0 - np.clip(m["gripper"] / 0.8, 0.0, 1.0)) + 0.025 * (m["gripper"] >= 0.4)
    links, flange = panda_links(joints, finger)  # the robot computes its pose from its joints: so do we
    cart = geometry.pose_to_droid(flange)
    grasp = flange @ DROID_TOOL_OFFSET
    table_z = droid_table_height(flange)
    closed = m["gripper"] > 0.5
    first, last = np.flatnonzero(closed)[[0, -1]]
    block = np.repeat(np.eye(4)[None], n, 0)
    for i in range(n):  # the block rides between the fingers while the gripper is closed, else rests on the table
        k = i if closed[i] else (first if i < first else last)
        block[i, :3] = grasp[k, :3]
        if not closed[i]:
            block[i, 2, 3] = table_z + 0.025
    cams = {"exterior_1_left": np.repeat(m["exterior_1_left"][None], n, 0),
            "exterior_2_left": np.repeat(m["exterior_2_left"][None], n, 0),
            "wrist_left": wrist_camera(flange)}
    videos = {c: droid_frames(c, cams[c], links, flange, block, table_z) for c in DROID_CAMERAS}
    return {"n": n, "cart": cart, "gripper": m["gripper"], "joints": joints, "cams": cams, "videos": videos}


# ----- DROID: the LeRobot v3.0 layout -----------------------------------------------------------------------------
def _droid_features() -> dict:
    def vec(k, names=None):
        return {"dtype": "float32", "shape": [k], "names": names}

    f = {
        "is_first": {"dtype": "bool", "shape": [1], "names": None},
        "is_last": {"dtype": "bool", "shape": [1], "names": None},
        "is_terminal": {"dtype": "bool", "shape": [1], "names": None},
        "language_instruction": {"dtype": "string", "shape": [1], "names": None},
        "observation.state.gripper_position": vec(1, {"axes": ["gripper"]}),
        "observation.state.cartesian_position": vec(6, {"axes": ["x", "y", "z", "roll", "pitch", "yaw"]}),
        "observation.state.joint_position": vec(7, {"axes": [f"joint_{i}" for i in range(7)]}),
    }
    for c in DROID_CAMERAS:
        f[f"camera_extrinsics.{c}"] = vec(6, {"axes": ["x", "y", "z", "roll", "pitch", "yaw"]})
    for c in DROID_CAMERAS:
        f[f"observation.images.{c}"] = {
            "dtype": "video", "shape": [DROID_SIZE[1], DROID_SIZE[0], 3], "names": ["height", "width", "channels"],
            "info": {"video.height": DROID_SIZE[1], "video.width": DROID_SIZE[0], "video.codec": "h264",
                     "video.pix_fmt": "yuv420p", "video.is_depth_map": False, "video.fps": int(DROID_FPS),
                     "video.channels": 3, "has_audio": False}}
    for k in ("timestamp",):
        f[k] = {"dtype": "float32", "shape": [1], "names": None}
    for k in ("frame_index", "episode_index", "index", "task_index"):
        f[k] = {"dtype": "int64", "shape": [1], "names": None}
    return f


def droid_data(ep: dict):
    """The episode's frames as a pyarrow table with DROID's column names and dtypes (fixed-size float32 lists)."""
    import pyarrow as pa

    from spatialact import geometry

    n = ep["n"]

    def vec(a, k):
        return pa.array(list(np.asarray(a, dtype=np.float32).reshape(n, k)), type=pa.list_(pa.float32(), k))

    cols = {
        "is_first": pa.array(np.arange(n) == 0), "is_last": pa.array(np.arange(n) == n - 1),
        "is_terminal": pa.array(np.arange(n) == n - 1),
        "language_instruction": pa.array([INSTRUCTION] * n, type=pa.string()),
        "observation.state.gripper_position": vec(ep["gripper"], 1),
        "observation.state.cartesian_position": vec(ep["cart"], 6),
        "observation.state.joint_position": vec(ep["joints"], 7),
    }
    for c in DROID_CAMERAS:
        cols[f"camera_extrinsics.{c}"] = vec(geometry.pose_to_droid(ep["cams"][c]), 6)
    cols.update({
        "timestamp": pa.array((np.arange(n) / DROID_FPS).astype(np.float32)),
        "frame_index": pa.array(np.arange(n, dtype=np.int64)),
        "episode_index": pa.array(np.zeros(n, dtype=np.int64)),
        "index": pa.array(np.arange(n, dtype=np.int64)),
        "task_index": pa.array(np.zeros(n, dtype=np.int64)),
    })
    return pa.table(cols)


def droid_meta(n: int, data) -> dict:
    """The metadata files of a one-episode LeRobot v3.0 dataset of ``n`` frames: ``{relative path: content}`` with
    JSON as dicts and parquet tables as pyarrow tables (``meta/tasks.parquet`` as the pandas DataFrame LeRobot
    writes: indexed by the task text)."""
    import pandas as pd
    import pyarrow as pa

    info = {"codebase_version": "v3.0", "robot_type": "Franka", "total_episodes": 1, "total_frames": n,
            "total_tasks": 1, "chunks_size": 1000, "data_files_size_in_mb": 100, "video_files_size_in_mb": 500,
            "fps": int(DROID_FPS), "splits": {"train": "0:1"},
            "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
            "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
            "features": _droid_features()}
    episode = {"episode_index": [0], "tasks": [[INSTRUCTION]], "length": [n], "data/chunk_index": [0],
               "data/file_index": [0], "dataset_from_index": [0], "dataset_to_index": [n]}
    for c in DROID_CAMERAS:
        key = f"videos/observation.images.{c}"
        episode.update({f"{key}/chunk_index": [0], f"{key}/file_index": [0], f"{key}/from_timestamp": [0.0],
                        f"{key}/to_timestamp": [n / DROID_FPS]})
    episode.update({"meta/episodes/chunk_index": [0], "meta/episodes/file_index": [0]})
    stats = {}
    for name in ("observation.state.cartesian_position", "observation.state.gripper_position",
                 "observation.state.joint_position"):
        a = np.asarray(data.column(name).to_pylist(), dtype=np.float64)
        stats[name] = {"min": a.min(0).round(6).tolist(), "max": a.max(0).round(6).tolist(),
                       "mean": a.mean(0).round(6).tolist(), "std": a.std(0).round(6).tolist(), "count": [n]}
    return {"meta/info.json": info, "meta/stats.json": stats,
            "meta/episodes/chunk-000/file-000.parquet": pa.table(episode),
            "meta/tasks.parquet": pd.DataFrame({"task_index": np.array([0], dtype=np.int64)},
                                               index=pd.Index([INSTRUCTION]))}


def write_droid(root: Path, ep: dict) -> None:
    """One episode (index 0) as a LeRobot v3.0 dataset under ``root`` (see the module docstring)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = droid_data(ep)
    files = {"data/chunk-000/file-000.parquet": data, **droid_meta(ep["n"], data)}
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, dict):
            path.write_text(json.dumps(content, indent=2) + "\n")
        elif isinstance(content, pa.Table):
            pq.write_table(content, path)
        else:
            content.to_parquet(path)
    video_path = files["meta/info.json"]["video_path"]
    for c in DROID_CAMERAS:
        write_mp4(root / video_path.format(video_key=f"observation.images.{c}", chunk_index=0, file_index=0),
                  ep["videos"][c], DROID_FPS)


# ----- EgoDex ------------------------------------------------------------------------------------------------------
FINGERS = ("Index", "Middle", "Ring", "Little")
# hand-frame knuckle positions (x toward the little finger for the right hand, z toward the middle knuckle), metres
KNUCKLES = {"Index": (-0.024, 0.085), "Middle": (0.0, 0.09), "Ring": (0.02, 0.084), "Little": (0.037, 0.074)}
SEGMENTS = (0.045, 0.026, 0.022)  # knuckle → intermediate base → intermediate tip → tip


def hand_joints(W: np.ndarray, curl: np.ndarray, pinch: np.ndarray, side: str) -> dict:
    """World positions (N, 3) of one hand's joints, EgoDex names without the side prefix, for hand frames W (N, 4, 4)
    (origin the wrist, +Z toward the middle knuckle, +Y out of the palm, X = Y × Z; world +Z up), finger curl (N,)
    radians per segment and thumb-tip to index-tip distance ``pinch`` (N,) metres."""
    s = 1.0 if side == "right" else -1.0
    X, Y, Z, o = W[:, :3, 0], W[:, :3, 1], W[:, :3, 2], W[:, :3, 3]
    out = {"Hand": o}
    for f in FINGERS:
        x, z = KNUCKLES[f]
        p = o + s * x * X + z * Z
        out[f"{f}FingerKnuckle"] = p
        for k, (name, length) in enumerate(zip(("IntermediateBase", "IntermediateTip", "Tip"), SEGMENTS)):
            a = (k + 1) * curl[:, None]
            p = p + length * (np.cos(a) * Z + np.sin(a) * Y)  # each segment bends further toward the palm
            out[f"{f}Finger{name}"] = p
    base = o - s * 0.022 * X + 0.012 * Y + 0.028 * Z
    tip = out["IndexFingerTip"] + pinch[:, None] * (0.85 * Y - s * 0.53 * X)  # opposite the index tip
    out["ThumbKnuckle"] = base
    out["ThumbIntermediateBase"] = base + 0.4 * (tip - base) + 0.012 * Y
    out["ThumbIntermediateTip"] = base + 0.72 * (tip - base) + 0.008 * Y
    out["ThumbTip"] = tip
    return out


def arm_joints(wrist: np.ndarray, shoulder, side: str) -> dict:
    """Shoulder ("Arm") and elbow ("Forearm") positions (N, 3) for wrists (N, 3): upper arm and forearm 0.28 m, the
    elbow bent down and outward."""
    s = 1.0 if side == "right" else -1.0
    sh = np.broadcast_to(np.asarray(shoulder, float), wrist.shape)
    mid = (sh + wrist) / 2
    half = np.linalg.norm(wrist - sh, axis=1, keepdims=True) / 2
    along = (wrist - sh) / (2 * half)
    out_dir = np.array([0.0, -0.45 * s, -1.0])
    out_dir = out_dir - (along @ out_dir)[:, None] * along
    out_dir /= np.linalg.norm(out_dir, axis=1, keepdims=True)
    return {"Arm": sh.copy(), "Forearm": mid + np.sqrt(np.maximum(0.28**2 - half**2, 0.0)) * out_dir}


def egodex_motion() -> dict:
    """The episode in +Z-up world coordinates (metres; a seated person at the origin facing +X, the table top at
    0.74 m): both hands' frames, curls and pinches, the head camera (C2W, OpenCV axes) and the box's poses."""
    from spatialact import geometry
    from spatialact.envs.camera import look_at

    table_z, half = 0.74, np.array([0.03, 0.02, 0.0075])  # a 6 × 4 × 1.5 cm box, pinched by its thin side
    R0 = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])  # palm down, fingers forward (+X)

    def rot(yaw, pitch):
        return geometry.rot_z(np.radians(yaw)) @ geometry.rot_y(np.radians(pitch)) @ R0

    # where the pinch point sits in the hand frame when closed: the wrist is placed so it lands on the box
    W1 = np.eye(4)
    closed = hand_joints(W1[None], np.array([0.42]), np.array([0.015]), "right")
    pinch_local = (closed["IndexFingerTip"][0] + closed["ThumbTip"][0]) / 2
    box_a, box_b = np.array([0.52, -0.14, table_z + half[2]]), np.array([0.50, 0.11, table_z + half[2]])

    def wrist_at(point, yaw, pitch):
        return point - rot(yaw, pitch) @ pinch_local

    g = 35.0  # the fingers point 35° down while pinching
    a, b = wrist_at(box_a, -15, g), wrist_at(box_b, 20, g)
    # (wrist x, y, z, yaw °, pitch °, curl rad, pinch m), seconds to get there
    way = [((0.30, -0.24, 0.84, -5, 10, 0.15, 0.08), 0.0),
           ((*(a + [0, 0, 0.07]), -15, g, 0.25, 0.07), 1.0),
           ((*a, -15, g, 0.3, 0.06), 0.5),
           ((*a, -15, g, 0.42, 0.015), 0.4),
           ((*(a + [0, 0, 0.10]), -5, 25, 0.42, 0.015), 0.5),
           ((*(b + [0, 0, 0.08]), 20, 30, 0.42, 0.015), 0.8),
           ((*b, 20, g, 0.42, 0.015), 0.3),
           ((*b, 20, g, 0.3, 0.07), 0.3),
           ((*(b + [-0.10, -0.04, 0.09]), 10, 15, 0.15, 0.08), 0.4)]
    v = min_jerk([(np.array(w, float), dt) for w, dt in way], EGODEX_FPS)
    n = len(v)
    t = np.arange(n) / EGODEX_FPS
    right = geometry.make_pose(np.stack([rot(y, p) for y, p in v[:, 3:5]]), v[:, :3])
    left_pos = np.array([0.36, 0.30, table_z + 0.035]) + 0.004 * np.stack(
        [np.sin(1.3 * t), np.sin(0.9 * t + 1), np.zeros(n)], 1)
    left = geometry.make_pose(np.repeat(rot(-20, 5)[None], n, 0), left_pos)
    gripping = v[:, 6] < 0.02
    first, last = np.flatnonzero(gripping)[[0, -1]]
    rj = hand_joints(right, v[:, 5], v[:, 6], "right")
    pinch_pt = (rj["IndexFingerTip"] + rj["ThumbTip"]) / 2
    box = np.repeat(np.eye(4)[None], n, 0)
    for i in range(n):  # carried between thumb and index while pinched, else on the table
        k = i if gripping[i] else (first if i < first else last)
        box[i, :3, :3] = geometry.rot_z(np.radians(v[k, 3]))
        box[i, :3, 3] = pinch_pt[k] if gripping[i] else [pinch_pt[k, 0], pinch_pt[k, 1], table_z + half[2]]
    head = np.array([0.02, -0.04, 1.22]) + np.stack([0.01 * np.sin(0.8 * t), 0.015 * np.sin(0.5 * t + 0.5),
                                                     0.006 * np.sin(1.1 * t)], 1)
    target = 0.55 * np.array([0.48, 0.0, table_z]) + 0.45 * right[:, :3, 3]
    camera = np.stack([look_at(h, g_) for h, g_ in zip(head, target)])
    return {"n": n, "right": right, "left": left, "curl": v[:, 5], "pinch": v[:, 6], "camera": camera,
            "box": box, "box_half": half, "table_z": table_z}


def egodex_frames(m: dict, joints: dict, indices=None) -> np.ndarray:
    """The drawn head-camera video (N, 1080, 1920, 3): table, box, both arms and hands (frames ``indices`` only,
    when given)."""
    indices = range(m["n"]) if indices is None else list(indices)
    frames = np.empty((len(indices), EGODEX_SIZE[1], EGODEX_SIZE[0], 3), np.uint8)
    bones = [("Arm", "Forearm", 34), ("Forearm", "Hand", 26)]
    for f in FINGERS:
        bones += [("Hand", f"{f}FingerKnuckle", 12), (f"{f}FingerKnuckle", f"{f}FingerIntermediateBase", 11),
                  (f"{f}FingerIntermediateBase", f"{f}FingerIntermediateTip", 10),
                  (f"{f}FingerIntermediateTip", f"{f}FingerTip", 9)]
    bones += [("Hand", "ThumbKnuckle", 12), ("ThumbKnuckle", "ThumbIntermediateBase", 11),
              ("ThumbIntermediateBase", "ThumbIntermediateTip", 10), ("ThumbIntermediateTip", "ThumbTip", 9)]
    for out, i in enumerate(indices):
        C = m["camera"][i]
        img = table_background(EGODEX_K, C, EGODEX_SIZE, m["table_z"], (0.22, 0.95), (-0.6, 0.6))
        cv = Canvas(img, EGODEX_K, C)
        cv.box(m["box"][i], m["box_half"], (200, 60, 40))
        for side in ("left", "right"):
            for a, b, w in bones:
                cv.line(joints[f"{side}{a}"][i], joints[f"{side}{b}"][i], (226, 184, 160), w)
        frames[out] = cv.draw()
    return frames


def egodex_episode() -> dict:
    """The EgoDex episode as stored: ``datasets`` {name: array} (float32, the ARKit world: +Y up, the +Z-up world
    turned by R_x(−90°); the camera with ARKit axes, +Y up, −Z forward), ``attrs`` (the file attributes), and the
    ``motion`` and world-frame ``joints`` the video is drawn from."""
    from spatialact import geometry

    m = egodex_motion()
    n = m["n"]
    joints = {}
    for side in ("right", "left"):
        hj = hand_joints(m[side], m["curl"] if side == "right" else np.full(n, 0.12),
                         m["pinch"] if side == "right" else np.full(n, 0.07), side)
        s = 1.0 if side == "right" else -1.0
        hj.update(arm_joints(hj["Hand"], [0.0, -0.19 * s, 1.05], side))
        joints.update({f"{side}{k}": v for k, v in hj.items()})
    to_arkit = geometry.YUP_TO_ZUP.T
    data = {"camera/intrinsic": EGODEX_K, "transforms/camera": to_arkit @ geometry.opencv_to_opengl(m["camera"])}
    rng = np.random.default_rng(7)
    for name, pos in sorted(joints.items()):
        side = "right" if name.startswith("right") else "left"
        # every joint carries its hand's orientation (ARKit gives each joint its own axes; the reader uses positions)
        data[f"transforms/{name}"] = to_arkit @ geometry.make_pose(m[side][:, :3, :3], pos)
        data[f"confidences/{name}"] = np.clip(0.93 + 0.04 * rng.standard_normal(n), 0.5, 1.0)
    attrs = {"task": "basic_pick_place", "llm_type": "reversible",
             "llm_description": "Pick up the red box and set it down to the left.",
             "llm_description2": "Pick up the red box and set it down to the right.", "session_name": "synthetic"}
    return {"datasets": {k: np.asarray(v, dtype=np.float32) for k, v in data.items()}, "attrs": attrs,
            "motion": m, "joints": joints}


def write_egodex(path: Path, ep: dict) -> None:
    """The EgoDex episode: ``path`` (.hdf5; transforms gzip-compressed, which h5py reads transparently) and the
    video beside it (.mp4)."""
    import h5py

    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w", track_order=True) as f:
        for name, arr in ep["datasets"].items():
            opts = {"compression": "gzip", "compression_opts": 4, "shuffle": True} if arr.ndim == 3 else {}
            f.create_dataset(name, data=arr, **opts)
        for k, v in ep["attrs"].items():
            f.attrs[k] = v
    write_mp4(path.with_suffix(".mp4"), egodex_frames(ep["motion"], ep["joints"]), EGODEX_FPS, crf=28)


# ----- a camera path (TUM RGB-D format) ---------------------------------------------------------------------------
def camera_walk() -> tuple[np.ndarray, np.ndarray]:
    """(timestamps (N,) s, C2W poses (N, 4, 4)): a hand-held camera carried around a 5 m × 4 m room (world +Z up,
    the floor at z = 0) at about 0.3 m/s for 20 s at 30 Hz — along a rounded loop, at chest height (1.35 m), looking
    ahead and 25° into the room, pitched 12° down, with a 1.2 cm step bob at 1.8 Hz, a slow pan sweep of ±8° and a
    little hand shake (smoothed noise, seeded)."""
    from scipy.ndimage import gaussian_filter1d

    from spatialact import geometry

    n = int(20 * WALK_FPS)
    t = np.arange(n) / WALK_FPS
    rng = np.random.default_rng(30)
    # a rounded rectangle 3.2 m × 2.2 m around the room's centre, walked counter-clockwise at 0.3 m/s
    u = np.linspace(0.0, 2 * np.pi, 4000)
    a, b, k = 1.6, 1.1, 4
    loop = np.stack([a * np.sign(np.cos(u)) * np.abs(np.cos(u)) ** (2 / k),
                     b * np.sign(np.sin(u)) * np.abs(np.sin(u)) ** (2 / k)], 1)
    arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(loop, axis=0), axis=1))])
    speed = 0.3 + 0.03 * np.sin(0.4 * t)
    s = np.concatenate([[0.0], np.cumsum(speed[1:] / WALK_FPS)]) + 0.4
    xy = np.stack([np.interp(s, arc, loop[:, 0]), np.interp(s, arc, loop[:, 1])], 1)
    heading = np.unwrap(np.arctan2(*np.gradient(xy, axis=0)[:, ::-1].T))
    shake = gaussian_filter1d(rng.standard_normal((n, 6)), 4.0, axis=0) * [0.002, 0.002, 0.002, 0.01, 0.008, 0.006]
    pos = np.column_stack([xy[:, 0] + 2.5, xy[:, 1] + 2.0, 1.35 + 0.012 * np.sin(2 * np.pi * 1.8 * t)])
    pos[:, :2] += 0.008 * np.sin(2 * np.pi * 0.9 * t)[:, None] * np.stack([-np.sin(heading), np.cos(heading)], 1)
    pos += shake[:, :3]
    pan = heading + np.radians(25.0) + np.radians(8.0) * np.sin(2 * np.pi * 0.07 * t) + shake[:, 3]
    tilt = np.radians(-12.0) + np.radians(1.5) * np.sin(2 * np.pi * 1.8 * t + 0.6) + shake[:, 4]
    roll = np.radians(1.0) * np.sin(2 * np.pi * 0.9 * t) + shake[:, 5]
    # OpenCV camera: +Z forward = (cos pan cos tilt, sin pan cos tilt, sin tilt); +Y down; then the roll about +Z
    fwd = np.stack([np.cos(pan) * np.cos(tilt), np.sin(pan) * np.cos(tilt), np.sin(tilt)], 1)
    right = np.stack([np.sin(pan), -np.cos(pan), np.zeros(n)], 1)
    down = np.cross(fwd, right)
    R = np.stack([right, down, fwd], axis=-1) @ geometry.rot_z(roll)
    return 1341846313.5928 + t, geometry.make_pose(R, pos)


def camera_walk_text() -> str:
    """The walk as TUM RGB-D ground truth: comment lines, then ``timestamp tx ty tz qx qy qz qw`` (four decimals)."""
    from spatialact import geometry

    t, poses = camera_walk()
    q, tr = geometry.pose_to_quat_trans(poses)
    q = q * np.where(q[:, 3:] < 0, -1.0, 1.0)  # one hemisphere (qw ≥ 0), as quaternion files usually keep it
    lines = ["# ground truth trajectory (synthetic: a hand-held camera walking a room; examples/make_samples.py)",
             "# file: 'camera_walk'", "# timestamp tx ty tz qx qy qz qw"]
    lines += [f"{ti:.4f} " + " ".join(f"{x:.4f}" for x in (*p, *qi)) for ti, p, qi in zip(t, tr, q)]
    return "\n".join(lines) + "\n"


# ----- all of it --------------------------------------------------------------------------------------------------
SAMPLES = ("droid", "egodex", "camera_walk.txt")
EGODEX_FILE = "egodex/basic_pick_place/0.hdf5"


def make_samples(out: Path) -> list[Path]:
    """Write the three samples under ``out`` (replacing earlier ones); returns their paths."""
    out = Path(out)
    for name in SAMPLES:
        p = out / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    write_droid(out / "droid", droid_episode())
    write_egodex(out / EGODEX_FILE, egodex_episode())
    (out / "camera_walk.txt").write_text(camera_walk_text())
    return [out / name for name in SAMPLES]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(HERE), help="folder to write the samples into (default: examples/)")
    args = ap.parse_args()
    for p in make_samples(Path(args.out)):
        files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file())
        size = sum(f.stat().st_size for f in files)
        print(f"{p}: {len(files)} file{'s' * (len(files) != 1)}, {size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
