"""DROID in its LeRobot form: parquet frames + mp4 videos, LeRobot dataset layouts v2.1 and v3.0.

Layout (``meta/info.json`` says which: ``"codebase_version"``):

* **v2.1** (and v2.0): one parquet per episode at ``data_path`` =
  ``data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet``, episodes listed in ``meta/episodes.jsonl``
  (``episode_index``, ``tasks``, ``length``), one mp4 per episode and camera at ``video_path`` =
  ``videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4``; frame i is at the row's
  ``timestamp`` in it. ``episode_chunk = episode_index // chunks_size``.
* **v3.0**: many episodes per file. ``meta/episodes/chunk-XXX/file-YYY.parquet`` has one row per episode with
  ``data/chunk_index``, ``data/file_index``, ``dataset_from_index``, ``dataset_to_index`` and, per video key,
  ``videos/<key>/chunk_index``, ``videos/<key>/file_index``, ``videos/<key>/from_timestamp``. Frames live in
  ``data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet`` (selected by the ``episode_index`` column) and
  videos in ``videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4``, where frame i is at
  ``from_timestamp + timestamp``.

DROID columns (the lerobot port's names): ``observation.state.cartesian_position`` (6 float32: xyz in metres,
then extrinsic "xyz" Euler angles in radians, robot base frame: +Z up), ``observation.state.gripper_position``
(1 float32, 0 open … 1 closed; closed above 0.5), ``timestamp``, ``language_instruction`` (also ``task``),
``camera_extrinsics.<camera>`` (6 float32, the camera's pose in the base frame, same convention, OpenCV axes),
videos ``observation.images.<camera>`` with either camera-name set: ``exterior_1_left`` / ``exterior_2_left`` /
``wrist_left`` (lerobot's port) or ``exterior_image_1_left`` / ``exterior_image_2_left`` / ``wrist_image_left``
(the RLDS names). The moving body is the end effector; its frame is DROID's end-effector frame, +Z along the
gripper's approach axis. 15 Hz unless the dataset says otherwise.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .. import geometry
from .trajectory import FrameRef, Trajectory, TrajectoryError, check_timestamps, fail

__all__ = ["read_droid", "CAMERA_ALIASES", "CARTESIAN", "GRIPPER"]

CARTESIAN = "observation.state.cartesian_position"
GRIPPER = "observation.state.gripper_position"
GRIPPER_CLOSED_ABOVE = 0.5
DROID_FPS = 15.0
# Both camera-name sets: lerobot's port renamed the RLDS keys.
CAMERA_ALIASES = {
    "exterior_1_left": ("exterior_1_left", "exterior_image_1_left"),
    "exterior_2_left": ("exterior_2_left", "exterior_image_2_left"),
    "wrist_left": ("wrist_left", "wrist_image_left"),
}
for _k, _v in list(CAMERA_ALIASES.items()):
    CAMERA_ALIASES[_v[1]] = _v


def _root_of(path) -> Path:
    p = Path(path)
    if p.is_file() and p.name == "info.json":
        return p.parent.parent
    return p


def _read_info(root: Path) -> dict:
    info_path = root / "meta" / "info.json"
    if not info_path.is_file():
        raise TrajectoryError(f"{root}: no meta/info.json (not a LeRobot dataset)")
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise TrajectoryError(f"{info_path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    for key in ("codebase_version", "data_path"):
        if key not in info:
            raise fail(info_path, key, "missing")
    return info


def _list_column(table, name: str, k: int, path, *, required: bool = True):
    """A list / fixed-size-list (or, for k = 1, scalar) float column as an (N, k) float64 array."""
    import pyarrow as pa

    if name not in table.column_names:
        if required:
            raise fail(path, name, f"missing (columns: {', '.join(sorted(table.column_names))})")
        return None
    col = table.column(name).combine_chunks()
    typ = col.type
    if pa.types.is_fixed_size_list(typ):
        if typ.list_size != k:
            raise fail(path, name, f"expected {k} values per frame, got {typ.list_size}")
        vals = col.flatten()
    elif pa.types.is_list(typ) or pa.types.is_large_list(typ):
        lengths = np.diff(np.asarray(col.offsets))
        bad = lengths != k
        if bad.any():
            i = int(np.argmax(bad))
            raise fail(path, name, f"expected {k} values per frame, got {int(lengths[i])}", i)
        vals = col.flatten()
    elif k == 1 and (pa.types.is_floating(typ) or pa.types.is_integer(typ)):
        vals = col
    else:
        raise fail(path, name, f"expected a list of {k} numbers per frame, got type {typ}")
    if col.null_count:
        i = int(np.argmax(np.asarray(col.is_null())))
        raise fail(path, name, "missing value (null)", i)
    arr = np.asarray(vals.to_numpy(zero_copy_only=False), dtype=np.float64).reshape(-1, k)
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        raise fail(path, name, "not finite (NaN or inf)", int(np.argmax(bad)))
    return arr


def _first_text(table, name: str) -> str | None:
    if name not in table.column_names or table.num_rows == 0:
        return None
    for v in table.column(name).to_pylist():
        if isinstance(v, list):
            v = v[0] if v else None
        if v:
            return str(v)
    return None


def _episode_table_v2(root: Path, info: dict, episode: int | None):
    meta = root / "meta" / "episodes.jsonl"
    episodes = []
    if meta.is_file():
        for lineno, line in enumerate(meta.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    episodes.append(json.loads(line))
                except json.JSONDecodeError:
                    raise fail(meta, "episode_index", f"line {lineno} is not valid JSON") from None
    indices = [int(e["episode_index"]) for e in episodes]
    if episode is None:
        if not indices:
            raise fail(meta, "episode_index", "no episodes listed; pass episode=")
        episode = indices[0]
    ep_meta = next((e for e in episodes if int(e["episode_index"]) == int(episode)), {})
    if episodes and not ep_meta:
        raise fail(meta, "episode_index", f"episode {episode} not in the dataset ({len(indices)} episodes)")
    chunk = int(episode) // int(info.get("chunks_size", 1000))
    data = root / info["data_path"].format(episode_chunk=chunk, episode_index=int(episode))
    if not data.is_file():
        raise fail(root / "meta" / "info.json", "data_path", f"episode {episode}: no file {data}")
    import pyarrow.parquet as pq

    table = pq.read_table(data)

    def video(key):
        if not info.get("video_path"):
            return None, 0.0
        return root / info["video_path"].format(episode_chunk=chunk, video_key=key, episode_index=int(episode)), 0.0

    tasks = ep_meta.get("tasks") or []
    return int(episode), data, table, video, (tasks[0] if tasks else None)


def _episode_table_v3(root: Path, info: dict, episode: int | None):
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    files = sorted((root / "meta" / "episodes").glob("chunk-*/file-*.parquet"))
    if not files:
        raise TrajectoryError(f"{root / 'meta' / 'episodes'}: no chunk-*/file-*.parquet episode files (LeRobot v3.0)")
    eps = pa.concat_tables([pq.read_table(f) for f in files], promote_options="default")
    for col in ("episode_index", "data/chunk_index", "data/file_index", "dataset_from_index", "dataset_to_index"):
        if col not in eps.column_names:
            raise fail(files[0], col, "missing")
    # Real datasets list tens of thousands of episodes (with per-episode stats columns): filter before converting.
    ep_col = eps.column("episode_index")
    if episode is None:
        episode = int(pc.min(ep_col).as_py())
    match = eps.filter(pc.equal(ep_col, int(episode)))
    if match.num_rows == 0:
        raise fail(files[0], "episode_index", f"episode {episode} not in the dataset ({eps.num_rows} episodes)")
    row = match.slice(0, 1).to_pylist()[0]
    data = root / info["data_path"].format(chunk_index=int(row["data/chunk_index"]),
                                           file_index=int(row["data/file_index"]))
    if not data.is_file():
        raise fail(root / "meta" / "info.json", "data_path", f"episode {episode}: no file {data}")
    table = pq.read_table(data)
    if "episode_index" not in table.column_names:
        raise fail(data, "episode_index", "missing (v3.0 data files hold several episodes)")
    table = table.filter(pc.equal(table.column("episode_index"), int(episode)))
    lo, hi = int(row["dataset_from_index"]), int(row["dataset_to_index"])
    if table.num_rows != hi - lo:
        raise fail(data, "episode_index", f"episode {episode} has {table.num_rows} frames, the episode metadata "
                                          f"says {hi - lo} (dataset_from_index {lo} to dataset_to_index {hi})")
    if "index" in table.column_names:
        idx = np.asarray(table.column("index").to_numpy())
        order = np.argsort(idx, kind="stable")
        table = table.take(pa.array(order))
        idx = idx[order]
        if idx[0] != lo or idx[-1] != hi - 1:
            raise fail(data, "index", f"episode {episode} spans {idx[0]}..{idx[-1]}, expected {lo}..{hi - 1}")

    def video(key):
        if not info.get("video_path") or f"videos/{key}/chunk_index" not in row:
            return None, 0.0
        p = root / info["video_path"].format(video_key=key, chunk_index=int(row[f"videos/{key}/chunk_index"]),
                                             file_index=int(row[f"videos/{key}/file_index"]))
        return p, float(row.get(f"videos/{key}/from_timestamp") or 0.0)

    tasks = row.get("tasks") or []
    return int(episode), data, table, video, (tasks[0] if len(tasks) else None)


def read_droid(path, *, episode: int | None = None, entity: str | None = None, fps: float | None = None,
               camera: str | None = None, **_) -> Trajectory:
    """One DROID episode (LeRobot v2.1 or v3.0) as a :class:`Trajectory` of the end effector.

    ``camera``: which camera's video and extrinsics to attach (``exterior_1_left`` by default; either name set).
    ``gripper`` is 1 where ``gripper_position`` > 0.5; ``camera_poses`` is that camera's pose (for
    ``extract_actions(frame="camera")``).
    """
    if entity not in (None, "end_effector", "gripper", "ee"):
        raise ValueError(f"DROID trajectories move the end effector; entity {entity!r} is not available")
    root = _root_of(path)
    info = _read_info(root)
    version = str(info["codebase_version"])
    if version.startswith("v2"):
        ep, data, table, video, task = _episode_table_v2(root, info, episode)
    elif version.startswith("v3"):
        ep, data, table, video, task = _episode_table_v3(root, info, episode)
    else:
        raise fail(root / "meta" / "info.json", "codebase_version", f"unsupported LeRobot layout {version!r} "
                                                                     "(expected v2.1 or v3.0)")
    if table.num_rows == 0:
        raise fail(data, CARTESIAN, f"episode {ep} has no frames")
    if CARTESIAN not in table.column_names:
        raise fail(data, CARTESIAN, "missing: DROID end-effector poses come from this column (xyz + extrinsic "
                                    "'xyz' Euler); is this a DROID dataset?")
    cart = _list_column(table, CARTESIAN, 6, data)
    poses = geometry.pose_from_droid(cart)
    n = len(poses)
    g = _list_column(table, GRIPPER, 1, data, required=False)
    gripper = None if g is None else (g[:, 0] > GRIPPER_CLOSED_ABOVE).astype(np.int8)
    rate = float(fps) if fps is not None else float(info.get("fps") or DROID_FPS)
    if "timestamp" in table.column_names:
        t = check_timestamps(_list_column(table, "timestamp", 1, data)[:, 0], n, data, "timestamp")
    else:
        t = np.arange(n) / rate
    instruction = _first_text(table, "language_instruction") or _first_text(table, "task") or task

    # Camera: video key and extrinsics, under either name set.
    cam = camera or "exterior_1_left"
    names = CAMERA_ALIASES.get(cam, (cam,))
    features = info.get("features", {})
    video_key = next((f"observation.images.{c}" for c in names if f"observation.images.{c}" in features), None)
    images, meta_extra = None, {}
    if video_key is not None:
        vpath, t0 = video(video_key)
        if vpath is not None and vpath.is_file():
            images = tuple(FrameRef(str(vpath), float(t0 + ti)) for ti in t)
        elif vpath is not None:
            meta_extra["video_missing"] = str(vpath)
    elif camera is not None:
        raise ValueError(f"{root}: no video 'observation.images.{cam}' (videos: "
                         f"{', '.join(k for k, v in features.items() if v.get('dtype') == 'video') or 'none'})")
    cam_poses = None
    ext_col = next((f"camera_extrinsics.{c}" for c in names if f"camera_extrinsics.{c}" in table.column_names), None)
    if ext_col is not None:
        cam_poses = geometry.pose_from_droid(_list_column(table, ext_col, 6, data))
    meta = {"source": "droid", "path": str(root), "data_file": str(data), "episode": ep,
            "codebase_version": version, "camera": names[0], "video_key": video_key, "entity": "end_effector",
            "kind": "manip", "metric": True, "world": "robot base (+Z up)", **meta_extra}
    return Trajectory(poses, t, rate, gripper, None, images, cam_poses, None, instruction, meta)
