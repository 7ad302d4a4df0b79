"""Writers for small trajectory files in each real layout (exact key names, dtypes, shapes), for the tests.

Nothing here is downloaded: every file is written from poses the test chooses, then read back.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from spatialact import geometry


# ----- poses ---------------------------------------------------------------------------------------------------
def smooth_poses(n: int, fps: float = 30.0, seed: int = 0, scale: float = 0.5, rot_scale: float = 0.6):
    """A smooth random C2W trajectory (N, 4, 4): sums of slow sinusoids in position and pan/tilt/roll."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / fps
    freq = rng.uniform(0.03, 0.3, (6, 3))
    amp = rng.uniform(0.3, 1.0, (6, 3))
    phase = rng.uniform(0, 2 * np.pi, (6, 3))
    w = (amp[:, :, None] * np.sin(2 * np.pi * freq[:, :, None] * t[None, None] + phase[:, :, None])).sum(1)
    pos = scale * w[:3].T
    ang = rot_scale * w[3:].T * np.array([1.0, 0.5, 0.7])
    return geometry.make_pose(geometry.ptr_to_matrix(ang[:, 0], ang[:, 1], ang[:, 2]), pos), t


def hysteresis_reference(d, lo=0.02, hi=0.04):
    """Per-frame Python reference for the EgoDex grip: closed below lo, open above hi, else keep."""
    state = 1 if d[0] < (lo + hi) / 2 else 0
    out = []
    for x in d:
        if x < lo:
            state = 1
        elif x > hi:
            state = 0
        out.append(state)
    return np.array(out)


# ----- text formats --------------------------------------------------------------------------------------------
def write_tum(path, t, poses, comment=True):
    q, tr = geometry.pose_to_quat_trans(poses)
    lines = ["# ground truth trajectory", "# timestamp tx ty tz qx qy qz qw"] if comment else []
    for ti, p, qi in zip(t, tr, q):
        lines.append(" ".join(f"{x:.9f}" for x in [ti, *p, *qi]))
    Path(path).write_text("\n".join(lines) + "\n")


def write_kitti(path, poses):
    Path(path).write_text("\n".join(" ".join(f"{x:.12e}" for x in p[:3].reshape(-1)) for p in poses) + "\n")


def write_re10k(path, t, poses, K=(0.5, 0.9, 0.5, 0.5), url="https://www.youtube.com/watch?v=abc"):
    w2c = geometry.c2w_to_w2c(poses)
    lines = [url]
    for ti, w in zip(t, w2c):
        lines.append(" ".join([str(int(round(ti * 1e6))), *(f"{k:.6f}" for k in K), "0", "0",
                               *(f"{x:.12f}" for x in w[:3].reshape(-1))]))
    Path(path).write_text("\n".join(lines) + "\n")


# ----- video ---------------------------------------------------------------------------------------------------
def color_frames(n, h=32, w=48, seed=0):
    """Frames whose colour encodes the index (easy to check after lossy coding): channel 0 = 8·i mod 256."""
    out = np.zeros((n, h, w, 3), dtype=np.uint8)
    for i in range(n):
        out[i, :, :, 0] = (8 * i) % 256
        out[i, :, :, 1] = 128
        out[i, :, :, 2] = 255 - (8 * i) % 256
    return out


def write_mp4(path, frames, fps):
    """A tiny H.264 (or MPEG-4) mp4 with PyAV, one frame per array, constant rate ``fps``."""
    import av
    from fractions import Fraction

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rate = Fraction(fps).limit_denominator(1000)
    with av.open(str(path), "w") as c:
        try:
            s = c.add_stream("libx264", rate=rate)
            s.options = {"crf": "0", "preset": "ultrafast"}
        except Exception:  # pragma: no cover - PyAV builds without x264
            s = c.add_stream("mpeg4", rate=rate)
        s.width, s.height, s.pix_fmt = frames.shape[2], frames.shape[1], "yuv420p"
        for f in frames:
            for pkt in s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                c.mux(pkt)
        for pkt in s.encode():
            c.mux(pkt)
    return path


# ----- DROID in its LeRobot form --------------------------------------------------------------------------------
CAMERA_SETS = {
    # lerobot's port_droid.py renames the RLDS image keys ...
    "short": ("exterior_1_left", "exterior_2_left", "wrist_left"),
    # ... other community ports keep the RLDS names.
    "image": ("exterior_image_1_left", "exterior_image_2_left", "wrist_image_left"),
}


def _droid_features(cams, fixed: bool, video: bool):
    f = {
        "is_first": {"dtype": "bool", "shape": [1], "names": None},
        "is_last": {"dtype": "bool", "shape": [1], "names": None},
        "language_instruction": {"dtype": "string", "shape": [1], "names": None},
        "observation.state.gripper_position": {"dtype": "float32", "shape": [1], "names": {"axes": ["gripper"]}},
        "observation.state.cartesian_position": {"dtype": "float32", "shape": [6],
                                                 "names": {"axes": ["x", "y", "z", "roll", "pitch", "yaw"]}},
        "observation.state.joint_position": {"dtype": "float32", "shape": [7], "names": None},
        "camera_extrinsics.exterior_1_left": {"dtype": "float32", "shape": [6], "names": None},
        "timestamp": {"dtype": "float32", "shape": [1], "names": None},
        "frame_index": {"dtype": "int64", "shape": [1], "names": None},
        "episode_index": {"dtype": "int64", "shape": [1], "names": None},
        "index": {"dtype": "int64", "shape": [1], "names": None},
        "task_index": {"dtype": "int64", "shape": [1], "names": None},
    }
    if video:
        for c in cams:
            f[f"observation.images.{c}"] = {"dtype": "video", "shape": [32, 48, 3],
                                            "names": ["height", "width", "channels"],
                                            "info": {"video.fps": 15, "video.codec": "h264"}}
    return f


_JOINT_CACHE: dict = {}


def make_samples_module():
    """examples/make_samples.py as a module: the samples' writer, whose Panda kinematics the fixtures share."""
    import importlib.util
    import sys

    name = "spatialact_make_samples"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "examples" /
                                                      "make_samples.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[name] = mod
    return sys.modules[name]


def panda_joint_positions(cart) -> np.ndarray:
    """(N, 7) joint positions (radians) the simulated Panda has at DROID end-effector poses ``cart`` (N, 6: xyz in
    metres + extrinsic "xyz" Euler in radians, the flange): what a real arm records as
    ``observation.state.joint_position`` — IK from the home posture for frame 0, then frame to frame as the arm
    moves; where a pose is out of reach (fixtures that test refusals), the closest posture IK finds. The samples'
    solver (``examples/make_samples.py``), cached per ``cart`` (about 10 ms a frame)."""
    c32 = np.asarray(cart, dtype=np.float32)
    key = (c32.shape, c32.tobytes())
    if key not in _JOINT_CACHE:
        _JOINT_CACHE[key] = make_samples_module().panda_joint_positions(c32)
    return _JOINT_CACHE[key].copy()


def droid_table(cart, grip, ext, instruction, ep, start_index, fps=15.0, fixed=False, joints=None):
    """One episode's rows as a pyarrow table with the DROID LeRobot column names and dtypes. ``joints`` (N, 7):
    the recorded joint positions (radians); default :func:`panda_joint_positions` of ``cart``."""
    import pyarrow as pa

    n = len(cart)
    joints = panda_joint_positions(cart) if joints is None else np.asarray(joints, dtype=np.float64)

    def vec(a, k):
        a = np.asarray(a, dtype=np.float32).reshape(n, k)
        typ = pa.list_(pa.float32(), k) if fixed else pa.list_(pa.float32())
        return pa.array(list(a), type=typ)

    return pa.table({
        "is_first": pa.array(np.arange(n) == 0),
        "is_last": pa.array(np.arange(n) == n - 1),
        "language_instruction": pa.array([instruction] * n, type=pa.string()),
        "observation.state.gripper_position": vec(grip, 1),
        "observation.state.cartesian_position": vec(cart, 6),
        "observation.state.joint_position": vec(joints, 7),
        "camera_extrinsics.exterior_1_left": vec(np.repeat(np.asarray(ext)[None], n, 0), 6),
        "timestamp": pa.array((np.arange(n) / fps).astype(np.float32)),
        "frame_index": pa.array(np.arange(n, dtype=np.int64)),
        "episode_index": pa.array(np.full(n, ep, dtype=np.int64)),
        "index": pa.array(np.arange(start_index, start_index + n, dtype=np.int64)),
        "task_index": pa.array(np.zeros(n, dtype=np.int64)),
    })


def write_droid(root, episodes, version="v2.1", cams="short", video=True, fps=15.0, drop=None, fixed=None):
    """Write a DROID LeRobot dataset under ``root``.

    ``episodes``: list of dicts with ``cart`` (N, 6) xyz + extrinsic xyz Euler, ``grip`` (N,) in [0, 1],
    ``ext`` (6,) exterior camera extrinsics, ``instruction`` and optionally ``joints`` (N, 7) radians (default: the
    posture the simulated Panda has at ``cart``, :func:`panda_joint_positions`). ``drop``: a column name to leave
    out.
    v2.1: data/chunk-000/episode_{i:06d}.parquet, meta/episodes.jsonl, meta/tasks.jsonl,
    videos/chunk-000/observation.images.<cam>/episode_{i:06d}.mp4.
    v3.0: data/chunk-000/file-000.parquet (all episodes, ``episode_index`` column),
    meta/episodes/chunk-000/file-000.parquet (dataset_from_index / dataset_to_index, videos/<key>/...),
    meta/tasks.parquet, videos/observation.images.<cam>/chunk-000/file-000.mp4 (episodes back to back).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = Path(root)
    camset = CAMERA_SETS[cams]
    fixed = (version == "v3.0") if fixed is None else fixed
    (root / "meta").mkdir(parents=True, exist_ok=True)
    info = {"codebase_version": version, "robot_type": "Franka", "fps": fps, "chunks_size": 1000,
            "total_episodes": len(episodes), "total_frames": int(sum(len(e["cart"]) for e in episodes)),
            "features": _droid_features(camset, fixed, video)}
    tasks = sorted({e["instruction"] for e in episodes})
    tables, start = [], 0
    for i, e in enumerate(episodes):
        tb = droid_table(e["cart"], e["grip"], e["ext"], e["instruction"], i, start, fps, fixed, e.get("joints"))
        if drop:
            tb = tb.drop_columns([drop])
        tables.append(tb)
        start += len(e["cart"])
    if version == "v2.1":
        info["data_path"] = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
        info["video_path"] = ("videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
                              if video else None)
        for i, tb in enumerate(tables):
            p = root / info["data_path"].format(episode_chunk=0, episode_index=i)
            p.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(tb, p)
            if video:
                for c in camset:
                    write_mp4(root / info["video_path"].format(episode_chunk=0, video_key=f"observation.images.{c}",
                                                               episode_index=i),
                              color_frames(len(episodes[i]["cart"])), fps)
        with open(root / "meta" / "episodes.jsonl", "w") as f:
            for i, e in enumerate(episodes):
                f.write(json.dumps({"episode_index": i, "tasks": [e["instruction"]], "length": len(e["cart"])}) + "\n")
        with open(root / "meta" / "tasks.jsonl", "w") as f:
            for k, t in enumerate(tasks):
                f.write(json.dumps({"task_index": k, "task": t}) + "\n")
    else:
        info["data_path"] = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
        info["video_path"] = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4" if video else None
        info["data_files_size_in_mb"] = 100
        info["video_files_size_in_mb"] = 200
        p = root / info["data_path"].format(chunk_index=0, file_index=0)
        p.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.concat_tables(tables), p)
        rows = {"episode_index": [], "tasks": [], "length": [], "data/chunk_index": [], "data/file_index": [],
                "dataset_from_index": [], "dataset_to_index": []}
        vid_cols = {}
        start, t0 = 0, 0.0
        for i, e in enumerate(episodes):
            n = len(e["cart"])
            rows["episode_index"].append(i)
            rows["tasks"].append([e["instruction"]])
            rows["length"].append(n)
            rows["data/chunk_index"].append(0)
            rows["data/file_index"].append(0)
            rows["dataset_from_index"].append(start)
            rows["dataset_to_index"].append(start + n)
            if video:
                for c in camset:
                    k = f"videos/observation.images.{c}"
                    vid_cols.setdefault(f"{k}/chunk_index", []).append(0)
                    vid_cols.setdefault(f"{k}/file_index", []).append(0)
                    vid_cols.setdefault(f"{k}/from_timestamp", []).append(t0)
                    vid_cols.setdefault(f"{k}/to_timestamp", []).append(t0 + n / fps)
            start += n
            t0 += n / fps
        rows.update(vid_cols)
        ep_path = root / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
        ep_path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(rows), ep_path)
        import pandas as pd

        # LeRobot v3.0 keeps tasks as a DataFrame indexed by the task string, written with pandas.
        pd.DataFrame({"task_index": np.arange(len(tasks), dtype=np.int64)}, index=pd.Index(tasks)).to_parquet(
            root / "meta" / "tasks.parquet")
        if video:
            total = sum(len(e["cart"]) for e in episodes)
            for c in camset:
                write_mp4(root / info["video_path"].format(video_key=f"observation.images.{c}", chunk_index=0,
                                                           file_index=0), color_frames(total), fps)
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=2))
    return root


def droid_episode(n=60, seed=0, fps=15.0, close_at=None, open_at=None, instruction="put the cup in the sink"):
    """A DROID-like episode: smooth end-effector motion over a table, gripper closing then opening."""
    P, _ = smooth_poses(n, fps, seed, scale=0.08, rot_scale=0.4)
    P[:, :3, 3] += [0.5, 0.0, 0.3]
    cart = geometry.pose_to_droid(P)
    grip = np.zeros(n)
    close_at = n // 3 if close_at is None else close_at
    open_at = 2 * n // 3 if open_at is None else open_at
    grip[close_at:open_at] = 0.9
    grip += np.random.default_rng(seed).uniform(0, 0.05, n)
    ext = np.array([0.1, -0.6, 0.5, -2.0, 0.1, 0.3])
    return {"cart": cart, "grip": grip, "ext": ext, "instruction": instruction, "poses": P}


# ----- EgoDex ----------------------------------------------------------------------------------------------------
def hand_joint_positions(wrist_pose_zup, side="right"):
    """Joint positions (N, 3) of a hand whose hand frame (docs/conventions.md: Z to the middle knuckle, Y out of the
    palm) is ``wrist_pose_zup``, in the +Z-up world: returns a dict of name → (N, 3)."""
    R, p = wrist_pose_zup[:, :3, :3], wrist_pose_zup[:, :3, 3]
    X, Y, Z = R[:, :, 0], R[:, :, 1], R[:, :, 2]
    # Right hand: the thumb side (index) is −X (X = Y × Z points to the little finger); mirrored for the left.
    s = 1.0 if side == "right" else -1.0
    return {
        "Hand": p,
        "MiddleFingerKnuckle": p + 0.09 * Z,
        "IndexFingerKnuckle": p + 0.08 * Z - s * 0.025 * X,
        "LittleFingerKnuckle": p + 0.08 * Z + s * 0.025 * X,
    }


def write_egodex(path, camera_c2w_zup, right_wrist_zup, grip_distance, fps=30.0, description="pick up the cup",
                 video=True, drop=None, corrupt=None, left_wrist_zup=None):
    """Write an EgoDex episode: ``<name>.hdf5`` + ``<name>.mp4``.

    Inputs are in spatialact's frames (world +Z up, OpenCV camera, the hand frame of docs/conventions.md); the file
    stores what EgoDex stores: ARKit world (+Y up), ARKit camera axes (+Y up, −Z forward), float32 (T, 4, 4)
    ``transforms/<joint>``, (T,) ``confidences/<joint>``, (3, 3) ``camera/intrinsic`` and file attributes
    (``llm_description``).
    ``corrupt``: (dataset name, callable on the array) applied before writing.
    """
    import h5py

    path = Path(path)
    n = len(camera_c2w_zup)
    to_y = geometry.YUP_TO_ZUP.T  # +Z-up world → ARKit's +Y-up world

    def yup(T):
        return to_y @ T

    data = {"transforms/camera": yup(geometry.opencv_to_opengl(camera_c2w_zup))}
    for side, W in (("right", right_wrist_zup), ("left", left_wrist_zup if left_wrist_zup is not None
                                                 else right_wrist_zup @ geometry.make_pose(np.eye(3), [-0.3, 0, 0]))):
        joints = hand_joint_positions(W, side)
        # ARKit's own wrist axes are not the project's hand frame; store an arbitrary (but valid) rotation for it.
        wrist_rot = W[:, :3, :3] @ geometry.rot_x(np.pi / 2)
        for name, pos in joints.items():
            R = wrist_rot if name == "Hand" else np.repeat(np.eye(3)[None], n, 0)
            data[f"transforms/{side}{name}"] = yup(geometry.make_pose(R, pos))
        # Thumb tip and index tip `grip_distance` apart (right hand; the left keeps 10 cm), around the index knuckle.
        d = np.asarray(grip_distance) if side == "right" else np.full(n, 0.10)
        tip = joints["IndexFingerKnuckle"] + 0.05 * W[:, :3, 2]
        data[f"transforms/{side}IndexFingerTip"] = yup(geometry.make_pose(np.repeat(np.eye(3)[None], n, 0), tip))
        data[f"transforms/{side}ThumbTip"] = yup(geometry.make_pose(np.repeat(np.eye(3)[None], n, 0),
                                                                    tip + d[:, None] * W[:, :3, 1]))
    data["camera/intrinsic"] = np.array([[736.6339, 0, 960], [0, 736.6339, 540], [0, 0, 1]])
    with h5py.File(path, "w") as f:
        for name, arr in data.items():
            arr = np.asarray(arr, dtype=np.float32)
            if corrupt and corrupt[0] == name:
                arr = corrupt[1](arr)
            if drop == name:
                continue
            f.create_dataset(name, data=arr)
            if name.startswith("transforms/") and name != "transforms/camera":
                f.create_dataset("confidences/" + name.split("/", 1)[1], data=np.full(n, 0.9, dtype=np.float32))
        f.attrs["llm_description"] = description
        f.attrs["llm_type"] = "reversible"
        f.attrs["task"] = "basic_pick_place"
    if video:
        write_mp4(path.with_suffix(".mp4"), color_frames(n), fps)
    return path


def droid_down_episode(n=45, seed=0):
    """A DROID episode with the gripper pointing down over a table (flange poses in the robot-base frame)."""
    from spatialact.envs.camera import look_at

    ep = droid_episode(n=n, seed=seed)
    P = ep["poses"].copy()
    P[:, :3, :3] = geometry.rot_x(np.pi) @ P[:, :3, :3]
    P[:, :3, 3] -= [0.0, 0.0, 0.05]
    ep["cart"] = geometry.pose_to_droid(P)
    ep["poses"] = P
    ep["ext"] = geometry.pose_to_droid(look_at([1.1, -0.6, 0.7], [0.5, 0.0, 0.15]))  # looking at the workspace
    return ep


def copy_recording(folder, parent, name: str = "copy") -> Path:
    """A copy of a recording's folder (a game recording) at ``parent / name``, for a test to spoil."""
    d = Path(parent) / name
    shutil.copytree(folder, d)
    return d


def edit_meta(folder, **changes) -> dict:
    """Update a recording folder's ``meta.json`` with ``changes`` (written back); returns the new meta."""
    path = Path(folder) / "meta.json"
    meta = json.loads(path.read_text())
    meta.update(changes)
    path.write_text(json.dumps(meta))
    return meta


def moved_recording_task(folder) -> tuple[Path, Path, bytes]:
    """A camera-path task file (``tasks from-trajectory``: one task, no images) built from a smooth TUM walk, then
    the walk moved 1 m along x: the recording still loads (eval's pre-run check passes) but the task's poses are
    off it, so its episode ends in an error. Returns (task file, recording, the recording's bytes before the move).
    The command prints: a test with ``capsys`` reads it out after."""
    from spatialact.cli.main import main

    folder = Path(folder)
    P, t = smooth_poses(120, 30.0, 2, scale=0.8)
    cam = folder / "cam.txt"
    write_tum(cam, t, P)
    tf = folder / "tasks.jsonl"
    assert main(["tasks", "from-trajectory", str(cam), "--out", str(tf), "--n", "1", "--no-images"]) == 0
    good = cam.read_bytes()
    moved = P.copy()
    moved[:, 0, 3] += 1.0
    write_tum(cam, t, moved)
    return tf, cam, good
