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
import math
import string
from pathlib import Path

import numpy as np

from .. import geometry
from ..jsonline import check_depth
from .errors import check_regular, describe_value, fail
from .trajectory import FrameRef, Trajectory, check_fps, check_timestamps, read_json_file, read_text_file

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


# Placeholders each layout fills in its path templates (LeRobot's own names); a template naming anything else, or
# with a format spec other than a zero-padded width, is refused before it is filled.
_TEMPLATE_FIELDS = {
    "v2": {"data_path": {"episode_chunk", "episode_index"},
           "video_path": {"episode_chunk", "episode_index", "video_key"}},
    "v3": {"data_path": {"chunk_index", "file_index"}, "video_path": {"chunk_index", "file_index", "video_key"}},
}


def _check_template(info_path: Path, key: str, template, allowed: set[str]) -> str:
    if not isinstance(template, str) or not template:
        raise fail(info_path, key, f"expected a path template, got {describe_value(template)}")
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as e:
        raise fail(info_path, key, f"not a valid path template {template!r} ({e})") from None
    for _, name, spec, conv in parts:
        if name is None:
            continue
        width = spec[:-1] if spec.endswith("d") else None
        if name not in allowed or conv or not (spec == "" or (width is not None and width.isdigit()
                                                                 and len(width) <= 2)):
            raise fail(info_path, key, f"template {template!r}: placeholder {{{name}{':' + spec if spec else ''}}} "
                                       f"is not one of {', '.join('{' + a + '}' for a in sorted(allowed))} "
                                       "(optionally with a width such as :03d)")
    return template


# Largest index, chunk or count accepted from metadata: far above any dataset (DROID has ~92 000 episodes), and
# small enough that the paths built from it stay short.
MAX_INDEX = 10**9


def _int_value(v, path, field_name: str, frame: int | None = None, *, minimum: int = 0) -> int:
    """An integer in [``minimum``, :data:`MAX_INDEX`] from JSON or parquet (integral floats accepted; booleans,
    text and null refused)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)) or \
            (isinstance(v, (float, np.floating)) and not (math.isfinite(v) and float(v).is_integer())):
        got = v if isinstance(v, (float, np.floating)) else describe_value(v)
        raise fail(path, field_name, f"expected an integer, got {got}", frame)
    if int(v) < minimum:
        raise fail(path, field_name, f"must be at least {minimum}, got {int(v)}", frame)
    if int(v) > MAX_INDEX:
        raise fail(path, field_name, f"{float(v):.3g} is beyond {MAX_INDEX:.0e}", frame)
    return int(v)


def _read_info(root: Path) -> dict:
    """``meta/info.json``, checked: an object with ``codebase_version`` (v2.x / v3.x), path templates that fit the
    layout, a positive ``chunks_size`` (v2), a valid ``fps`` and a ``features`` object. Adds ``"_layout"``."""
    info_path = root / "meta" / "info.json"
    if not info_path.is_file():
        raise fail(root, "meta/info.json", "missing (not a LeRobot dataset)")
    info = read_json_file(info_path)
    if not isinstance(info, dict):
        raise fail(info_path, "(file)", f"expected a JSON object, got {describe_value(info)}")
    for key in ("codebase_version", "data_path"):
        if key not in info:
            raise fail(info_path, key, "missing")
    version = info["codebase_version"]
    if not isinstance(version, str):
        raise fail(info_path, "codebase_version", f"expected text such as 'v2.1', got {describe_value(version)}")
    layout = version[:2]
    if layout not in _TEMPLATE_FIELDS:
        raise fail(info_path, "codebase_version", f"unsupported LeRobot layout {version!r} (expected v2.1 or v3.0)")
    info = dict(info, _layout=layout)
    _check_template(info_path, "data_path", info["data_path"], _TEMPLATE_FIELDS[layout]["data_path"])
    if info.get("video_path") is not None:
        _check_template(info_path, "video_path", info["video_path"], _TEMPLATE_FIELDS[layout]["video_path"])
    if layout == "v2":
        info["chunks_size"] = _int_value(info.get("chunks_size", 1000), info_path, "chunks_size", minimum=1)
    if info.get("fps") is not None:
        info["fps"] = check_fps(info["fps"], info_path, "fps")
    features = info.get("features", {})
    if not isinstance(features, dict):
        raise fail(info_path, "features", f"expected an object of feature name to description, got "
                                          f"{describe_value(features)}")
    info["features"] = features
    return info


def _fill(info: dict, key: str, **values) -> str:
    # The template was checked in _read_info: only the layout's placeholders, only widths.
    return info[key].format(**values)


def _read_parquet(path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    check_regular(path)  # a FIFO or a device: refused, never opened (missing: as the reader says)
    try:
        table = pq.read_table(path)
        table.column_names  # noqa: B018 - decodes the schema's names: a damaged footer fails here, not later
    except (pa.ArrowException, OSError, ValueError) as e:  # truncated, not parquet, unreadable, names not UTF-8
        raise fail(path, "(file)", f"not a readable parquet file ({e or type(e).__name__})") from None
    return table


def _int_column(table, name: str, path):
    """An integer column without nulls as int64 numbers (checked type: text or floats are refused)."""
    import pyarrow as pa

    if name not in table.column_names:
        raise fail(path, name, "missing")
    col = table.column(name)
    if not pa.types.is_integer(col.type):
        raise fail(path, name, f"expected integers, got type {col.type}")
    if col.null_count:
        raise fail(path, name, "missing value (null)", int(np.argmax(np.asarray(col.is_null()))))
    return col


def _list_column(table, name: str, k: int, path, *, required: bool = True):
    """A list / fixed-size-list (or, for k = 1, scalar) float column as an (N, k) float64 array."""
    import pyarrow as pa

    if name not in table.column_names:
        if required:
            raise fail(path, name, f"missing (columns: {', '.join(sorted(table.column_names))})")
        return None
    col = table.column(name).combine_chunks()
    typ = col.type
    if col.null_count:
        i = int(np.argmax(np.asarray(col.is_null())))
        raise fail(path, name, "missing value (null)", i)
    if pa.types.is_fixed_size_list(typ) or pa.types.is_list(typ) or pa.types.is_large_list(typ):
        vt = typ.value_type
        if not (pa.types.is_floating(vt) or pa.types.is_integer(vt)):
            raise fail(path, name, f"expected a list of {k} numbers per frame, got type {typ}")
        if pa.types.is_fixed_size_list(typ):
            if typ.list_size != k:
                raise fail(path, name, f"expected {k} values per frame, got {typ.list_size}")
        else:
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
    arr = np.asarray(vals.to_numpy(zero_copy_only=False), dtype=np.float64).reshape(-1, k)
    bad = ~np.isfinite(arr).all(axis=1)
    if bad.any():
        raise fail(path, name, "not finite (NaN, inf or null)", int(np.argmax(bad)))
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


def _episodes_jsonl(meta: Path) -> list[dict]:
    """v2.x ``meta/episodes.jsonl``: one object a line with an integer ``episode_index`` (and ``tasks``)."""
    episodes = []
    if not meta.is_file():
        return episodes
    for lineno, line in enumerate(read_text_file(meta).splitlines(), 1):
        if not line.strip():
            continue
        try:
            check_depth(line)
            e = json.loads(line)
        except (json.JSONDecodeError, RecursionError, ValueError):  # TooDeep (jsonline.MAX_JSON_DEPTH) too
            raise fail(meta, "(record)", f"line {lineno} is not valid JSON") from None
        if not isinstance(e, dict):
            raise fail(meta, "(record)", f"line {lineno}: expected a JSON object, got {describe_value(e)}")
        if "episode_index" not in e:
            raise fail(meta, "episode_index", f"line {lineno}: missing")
        e["episode_index"] = _int_value(e["episode_index"], meta, "episode_index", None)
        tasks = e.get("tasks")
        if tasks is not None and not (isinstance(tasks, list) and all(isinstance(x, str) for x in tasks)):
            raise fail(meta, "tasks", f"line {lineno}: expected a list of task texts, got {describe_value(tasks)}")
        episodes.append(e)
    return episodes


def _episode_table_v2(root: Path, info: dict, episode: int | None):
    meta = root / "meta" / "episodes.jsonl"
    info_path = root / "meta" / "info.json"
    episodes = _episodes_jsonl(meta)
    indices = [e["episode_index"] for e in episodes]
    if episode is None:
        if not indices:
            raise fail(meta, "episode_index", "no episodes listed; pass episode=")
        episode = indices[0]
    ep_meta = next((e for e in episodes if e["episode_index"] == int(episode)), {})
    if episodes and not ep_meta:
        raise fail(meta, "episode_index", f"episode {episode} not in the dataset ({len(indices)} episodes)")
    chunk = int(episode) // info["chunks_size"]
    data = root / _fill(info, "data_path", episode_chunk=chunk, episode_index=int(episode))
    if not data.is_file():
        raise fail(info_path, "data_path", f"episode {episode}: no file {data}")
    table = _read_parquet(data)

    def video(key):
        if not info.get("video_path"):
            return None, 0.0
        return root / _fill(info, "video_path", episode_chunk=chunk, video_key=key,
                            episode_index=int(episode)), 0.0

    tasks = ep_meta.get("tasks") or []
    return int(episode), data, table, video, (tasks[0] if tasks else None)


_V3_EPISODE_COLUMNS = ("episode_index", "data/chunk_index", "data/file_index", "dataset_from_index",
                       "dataset_to_index")


def _episode_table_v3(root: Path, info: dict, episode: int | None):
    import pyarrow as pa
    import pyarrow.compute as pc

    info_path = root / "meta" / "info.json"
    files = sorted((root / "meta" / "episodes").glob("chunk-*/file-*.parquet"))
    if not files:
        raise fail(root / "meta" / "episodes", "chunk-*/file-*.parquet", "missing: LeRobot v3.0 lists its episodes "
                                                                          "there")
    # Real datasets list tens of thousands of episodes (with per-episode stats columns): filter before converting.
    tables = []
    for f in files:
        tb = _read_parquet(f)
        for col in _V3_EPISODE_COLUMNS:
            _int_column(tb, col, f)
        tables.append(tb)
    if episode is None:
        episode = min(int(pc.min(tb.column("episode_index")).as_py()) for tb in tables if tb.num_rows)
    row = ep_file = None
    for f, tb in zip(files, tables):
        match = tb.filter(pc.equal(tb.column("episode_index"), int(episode)))
        if match.num_rows:
            row, ep_file = match.slice(0, 1).to_pylist()[0], f
            break
    if row is None:
        raise fail(files[0].parent.parent, "episode_index", f"episode {episode} not in the dataset "
                                                            f"({sum(t.num_rows for t in tables)} episodes)")
    for col in _V3_EPISODE_COLUMNS:  # integers by type; bounded here so that paths and ranges stay sane
        row[col] = _int_value(row[col], ep_file, col)
    data = root / _fill(info, "data_path", chunk_index=row["data/chunk_index"],
                        file_index=row["data/file_index"])
    if not data.is_file():
        raise fail(info_path, "data_path", f"episode {episode}: no file {data}")
    table = _read_parquet(data)
    if "episode_index" not in table.column_names:
        raise fail(data, "episode_index", "missing (v3.0 data files hold several episodes)")
    table = table.filter(pc.equal(_int_column(table, "episode_index", data), int(episode)))
    lo, hi = row["dataset_from_index"], row["dataset_to_index"]
    if table.num_rows != hi - lo:
        raise fail(data, "episode_index", f"episode {episode} has {table.num_rows} frames, the episode metadata "
                                          f"says {hi - lo} (dataset_from_index {lo} to dataset_to_index {hi})")
    if "index" in table.column_names and table.num_rows:
        idx = np.asarray(_int_column(table, "index", data).to_numpy())
        order = np.argsort(idx, kind="stable")
        table = table.take(pa.array(order))
        idx = idx[order]
        if idx[0] != lo or idx[-1] != hi - 1:
            raise fail(data, "index", f"episode {episode} spans {idx[0]}..{idx[-1]}, expected {lo}..{hi - 1}")

    def video(key):
        if not info.get("video_path") or f"videos/{key}/chunk_index" not in row:
            return None, 0.0
        vals = {}
        for part in ("chunk_index", "file_index"):
            vals[part] = _int_value(row.get(f"videos/{key}/{part}"), ep_file, f"videos/{key}/{part}")
        t0 = row.get(f"videos/{key}/from_timestamp")
        t0 = 0.0 if t0 is None else t0
        if isinstance(t0, bool) or not isinstance(t0, (int, float)) or not (math.isfinite(t0) and t0 >= 0):
            got = t0 if isinstance(t0, float) else describe_value(t0)
            raise fail(ep_file, f"videos/{key}/from_timestamp", f"episode {episode}: expected seconds ≥ 0, got {got}")
        return root / _fill(info, "video_path", video_key=key, **vals), float(t0)

    tasks = row.get("tasks")
    tasks = tasks if isinstance(tasks, list) else []
    return int(episode), data, table, video, (str(tasks[0]) if tasks and tasks[0] is not None else None)


def read_droid(path, *, episode: int | None = None, entity: str | None = None, fps: float | None = None,
               camera: str | None = None, **_) -> Trajectory:
    """One DROID episode (LeRobot v2.1 or v3.0) as a :class:`Trajectory` of the end effector.

    ``camera``: which camera's video and extrinsics to attach (``exterior_1_left`` by default; either name set).
    ``gripper`` is 1 where ``gripper_position`` > 0.5; ``camera_poses`` is that camera's pose (for
    ``extract_actions(frame="camera")``).
    """
    root = _root_of(path)
    if entity not in (None, "end_effector", "gripper", "ee"):
        raise fail(root, "entity", f"DROID trajectories move the end effector; entity {entity!r} is not available")
    if episode is not None:
        episode = _int_value(episode, root, "episode (option)")
    if camera is not None and (not isinstance(camera, str) or not camera):
        raise fail(root, "camera (option)", f"expected a camera name, got {describe_value(camera)}")
    info = _read_info(root)
    version = info["codebase_version"]
    if info["_layout"] == "v2":
        ep, data, table, video, task = _episode_table_v2(root, info, episode)
    else:
        ep, data, table, video, task = _episode_table_v3(root, info, episode)
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
    rate = float(fps) if fps is not None else (info.get("fps") or DROID_FPS)
    if "timestamp" in table.column_names:
        t = check_timestamps(_list_column(table, "timestamp", 1, data)[:, 0], n, data, "timestamp")
    else:
        t = np.arange(n) / rate
    instruction = _first_text(table, "language_instruction") or _first_text(table, "task") or task

    # Camera: video key and extrinsics, under either name set.
    cam = camera or "exterior_1_left"
    names = CAMERA_ALIASES.get(cam, (cam,))
    features = info["features"]
    video_key = next((f"observation.images.{c}" for c in names if f"observation.images.{c}" in features), None)
    images, meta_extra = None, {}
    if video_key is not None:
        vpath, t0 = video(video_key)
        if vpath is not None and vpath.is_file():
            images = tuple(FrameRef(str(vpath), float(t0 + ti)) for ti in t)
        elif vpath is not None:
            meta_extra["video_missing"] = str(vpath)
    elif camera is not None:
        videos = [k for k, v in features.items() if isinstance(v, dict) and v.get("dtype") == "video"]
        raise fail(root / "meta" / "info.json", "features", f"no video 'observation.images.{cam}' (videos: "
                                                             f"{', '.join(videos) or 'none'})")
    cam_poses = None
    ext_col = next((f"camera_extrinsics.{c}" for c in names if f"camera_extrinsics.{c}" in table.column_names), None)
    if ext_col is not None:
        cam_poses = geometry.pose_from_droid(_list_column(table, ext_col, 6, data))
    meta = {"source": "droid", "path": str(root), "data_file": str(data), "episode": ep,
            "codebase_version": version, "camera": names[0], "video_key": video_key, "entity": "end_effector",
            "kind": "manip", "metric": True, "world": "robot base (+Z up)", **meta_extra}
    return Trajectory(poses, t, rate, gripper, None, images, cam_poses, None, instruction, meta)
