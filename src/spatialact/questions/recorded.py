"""Questions from recordings: the recorded frames, camera poses, intrinsics and depth of a game trajectory, a DROID
episode or an EgoDex episode, nothing re-rendered.

* ``game`` (``spatialact game record``): the player's camera, C2W poses as recorded, intrinsics with pixels that are
  not square (fy = 1.2·fx: :func:`~spatialact.envs.camera.project_points` and ``unproject_pixels`` use fx and fy
  apart, a field of view is asked along one axis with its own focal length), frames from ``rgb.mp4`` and the 8-bit depth
  buffer in metres, quantised in steps of ``meta.depth.quantisation_m`` (about 0.22 m): a depth question is asked
  only where its answer margin exceeds that step (:data:`DEPTH_TOLERANCE`);
* ``droid``: every recorded camera with a video and extrinsics (the wrist camera, both exterior cameras; or the one
  ``camera`` names), poses ``camera_extrinsics.<camera>`` as recorded. DROID stores no intrinsics, so views carry
  the replay's assumed ZED 2 intrinsics (``spatialact.envs.replay_world.droid_default_intrinsics``, said in ``meta``)
  and no question is computed from them;
* ``egodex``: the head camera (``transforms/camera``), its recorded intrinsics (``camera/intrinsic``, pixels of the
  1920×1080 video) and frames from the episode's ``.mp4``.

Views are frames at :data:`VIEWS_PER_SECOND` (of every camera), at most :data:`MAX_VIEWS`. A :class:`Recording` is the
:class:`~spatialact.questions.shared.Views` of the five types it can give, whose generators (one per type, shared with
rendered scenes) live in :mod:`spatialact.questions.shared`. A type the recording cannot give
(:func:`recording_types`) is refused in one line naming what it lacks. Poses everywhere: C2W (4, 4)
float64, metres, world +Z up, camera axes OpenCV's (+X right, +Y down, +Z forward); pixels (x, y) with centres at
integers; depth is z-depth in metres.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..envs.camera import MIN_DEPTH_M, project_points, unproject_pixels
from .drafts import MIN_OVERLAP, Draft
from .io import QUESTION_TYPES, TYPE_FORMATS
from .shared import SHARED_GENERATORS, FovShot, Views

__all__ = ["RECORDED_SOURCES", "VIEWS_PER_SECOND", "MAX_VIEWS", "SHARED_VIEW_DISTANCE_M",
           "RecordedView", "Recording", "is_recording", "recording_from", "recording_types",
           "generate_in_recording"]

RECORDED_SOURCES = ("game", "droid", "egodex")
VIEWS_PER_SECOND = 2.0        # candidate views: two frames a second of every camera ...
MAX_VIEWS = 240               # ... at most this many (evenly spaced over the recording)
SHARED_VIEW_DISTANCE_M = 1.0  # without depth: the point this far along each optical axis must lie in the other image
PAIR_TRIES = 80               # draws of a pair of views (a relative-pose question; tracking draws 40)
DROID_CAMERAS = ("wrist_left", "exterior_1_left", "exterior_2_left")
CACHED_FRAMES = 32            # decoded frames (and depth maps) kept while questions are generated

# What a question type needs, and how a recording that lacks it is told (one line).
_NEVER = {
    "primitive": "needs the view after a motion of whole units, which a recording does not have (its frames are "
                 "not re-rendered)",
    "distance": "needs object labels, which a recording does not store",
    "task_flow": "needs views that a ground truth of whole units reaches exactly; a recording's frames lie between "
                 "them",
}


@dataclass
class RecordedView:
    """One recorded frame: the camera that took it (``camera_name``), its frame index in that camera's trajectory,
    its C2W pose (4, 4) float64 metres as recorded and its pinhole camera (``spatialact.envs.camera.CameraSpec``,
    pixels of the recorded frame)."""

    camera_name: str
    frame: int
    time_s: float
    pose: np.ndarray
    camera: object


@dataclass
class Recording(Views):
    """The views of one recording and what it has: ``depth_step`` (m, the quantisation of its depth maps; None: no
    depth recorded), ``far_m`` (depth at or beyond which a recorded depth says only "at least this far"),
    ``intrinsics_recorded`` (False: the views carry assumed intrinsics). ``source`` and ``spec`` go into every
    question record (``source``, ``scene``). As :class:`~spatialact.questions.shared.Views`: view ``k`` is
    ``views[k]`` (a :class:`RecordedView`), its image the recorded frame, its depth the recorded depth."""

    source: str
    spec: dict
    views: list
    trajectories: dict
    depth_step: float | None = None
    far_m: float | None = None
    intrinsics_recorded: bool = True
    _rgb: dict = field(default_factory=dict, repr=False)
    _depth: dict = field(default_factory=dict, repr=False)

    def rgb(self, k: int) -> np.ndarray:
        """The recorded RGB frame (H, W, 3) uint8 of view ``k`` (the last :data:`CACHED_FRAMES` kept)."""
        if k not in self._rgb:
            v = self.views[k]
            self._rgb[k] = self.trajectories[v.camera_name].frame(v.frame)
        return _recent(self._rgb, k)

    def depth(self, k: int) -> np.ndarray | None:
        """The recorded z-depth (H, W) float32 metres of view ``k`` (None without depth)."""
        if self.depth_step is None:
            return None
        if k not in self._depth:
            from ..trajectories.game import read_depth

            v = self.views[k]
            self._depth[k] = read_depth(self.trajectories[v.camera_name], [v.frame])[0]
        return _recent(self._depth, k)

    # ----- the Views of the shared generators (spatialact.questions.shared) -----
    @property
    def n_views(self) -> int:
        return len(self.views)

    def pose(self, k: int) -> np.ndarray:
        return self.views[k].pose

    def camera_of(self, k: int):
        return self.views[k].camera

    def pairs(self, rng, tries: int | None = None):
        return recorded_pairs(self, rng, PAIR_TRIES if tries is None else tries)

    def relative_poses(self, rng, a: int, b: int):
        """The relative poses of the other ordered view pairs, in the order of one permutation of all n² pairs."""
        from .. import geometry

        n = len(self.views)
        others = (divmod(int(k), n) for k in rng.permutation(n * n))
        return (geometry.relative_pose(self.views[i].pose, self.views[j].pose)
                for i, j in others if i != j and (i, j) != (a, b))

    def pair_text(self, a: int, b: int) -> str:
        A, B = self.views[a], self.views[b]
        who = ("by the same camera" if A.camera_name == B.camera_name
               else f"by two cameras ({A.camera_name} and {B.camera_name})")
        return f"Image 1 and Image 2 are frames recorded {who} in the same scene."

    def view_meta(self, ks) -> dict:
        return _view_meta(self, ks)

    def depth_meta(self) -> dict:
        return {"depth_quantisation_m": self.depth_step, "depth_far_m": self.far_m}

    def fov_shot(self, rng) -> FovShot:
        """A random view with its recorded intrinsics: the horizontal field of view (fx), or, where its pixels are
        not square, horizontal or vertical (fy) with equal probability."""
        k = int(rng.integers(len(self.views)))
        V = self.views[k]
        cam = V.camera
        square = abs(cam.fy / cam.fx - 1.0) <= 0.005
        axis = "horizontal" if square or rng.random() < 0.5 else "vertical"
        return FovShot(V.pose, cam, self.rgb(k), axis, f"is a frame recorded by {_camera_text(cam)}",
                       {**_view_meta(self, (k,)), "axis": axis})


def _recent(cache: dict, k: int):
    """``cache[k]``, marked as the most recently used; the oldest entries beyond :data:`CACHED_FRAMES` dropped (an
    EgoDex frame is 6 MB)."""
    value = cache.pop(k)
    cache[k] = value
    while len(cache) > CACHED_FRAMES:
        cache.pop(next(iter(cache)))
    return value


def is_recording(traj) -> bool:
    """Whether questions come from ``traj``'s own frames: a game trajectory, a DROID episode, an EgoDex episode with
    its video (an EgoDex head camera without one is replayed as a camera path, as before)."""
    src = traj.meta.get("source")
    return src in ("game", "droid") or (src == "egodex" and traj.images is not None)


def _view_frames(traj, max_keyframes: int | None) -> np.ndarray:
    t = np.asarray(traj.timestamps, dtype=np.float64) - float(traj.timestamps[0])
    if max_keyframes is not None:
        t = t[t <= (int(max_keyframes) - 1) + 1e-9]
    want = np.arange(0.0, t[-1] + 1e-9, 1.0 / VIEWS_PER_SECOND)
    idx = np.unique(np.clip(np.searchsorted(t, want - 0.5 / traj.fps), 0, len(t) - 1))
    return idx


def _droid_trajectories(traj, camera: str | None) -> dict:
    """{camera name: its trajectory} of the DROID cameras with a video and extrinsics (or of ``camera``)."""
    from ..trajectories import load_trajectory

    path, ep = traj.meta["path"], traj.meta.get("episode")
    names = (camera,) if camera else DROID_CAMERAS
    out = {}
    for name in names:
        t = traj if name == traj.meta.get("camera") else None
        if t is None:
            try:
                t = load_trajectory(path, "droid", episode=ep, camera=name)
            except ValueError:
                if camera:
                    raise
                continue  # a dataset without this camera
        if t.images is not None and t.camera_poses is not None and t.has_frames:
            out[t.meta.get("camera", name)] = t
        elif camera:
            what = "video" if t.images is None or not t.has_frames else "extrinsics (camera_extrinsics)"
            raise ValueError(f"{path}: episode {ep}: camera {camera!r} has no {what}: questions are asked on the "
                             "recorded frames at the recorded camera poses")
    if not out:
        raise ValueError(f"{path}: episode {ep}: no camera has both a video and extrinsics: questions are asked on "
                         "the recorded frames at the recorded camera poses")
    return out


def recording_from(traj, *, camera: str | None = None, max_keyframes: int | None = None) -> Recording:
    """The :class:`Recording` of a game trajectory, a DROID episode (``camera``: one camera instead of all) or an
    EgoDex episode with its video; ``max_keyframes``: only the first N seconds' worth (N keyframes, one a second).
    Refusals (ValueError) are one line naming the file and what it lacks."""
    from ..envs.camera import CameraSpec
    from ..envs.replay_world import EGODEX_IMAGE_SIZE, droid_default_intrinsics

    src = traj.meta.get("source")
    path = traj.meta.get("path")
    if src not in RECORDED_SOURCES:
        raise ValueError(f"{path}: a {src} trajectory is not a recording with frames (game, droid, egodex)")
    if camera is not None and src != "droid":
        raise ValueError(f"{path}: camera {camera!r}: only a DROID episode has several cameras")
    if src == "droid":
        trajs = _droid_trajectories(traj, camera)
    else:
        if traj.images is None or not traj.has_frames:
            raise ValueError(f"{path}: no recorded frames (the video is missing): questions are asked on the "
                             "recorded frames")
        trajs = {"head" if src == "egodex" else "player": traj}
    views = []
    for name, t in trajs.items():
        first = t.frame(0)
        H, W = first.shape[:2]
        if src == "droid":
            cam = CameraSpec.from_intrinsics(W, H, **droid_default_intrinsics(W, H))
            poses = t.camera_poses
        elif src == "egodex":
            if t.intrinsics is None:
                raise ValueError(f"{path}: camera/intrinsic: missing: EgoDex questions use the recorded intrinsics")
            cam = CameraSpec.from_K(t.intrinsics, *EGODEX_IMAGE_SIZE)
            if (W, H) != tuple(EGODEX_IMAGE_SIZE):
                cam = cam.resized(W, H)
            poses = t.poses if t.meta.get("entity") == "camera" else t.camera_poses
        else:
            size = tuple(t.meta.get("image_size") or (W, H))
            if size != (W, H):
                raise ValueError(f"{path}: rgb.mp4: frames are {W}x{H}, meta.json says {size[0]}x{size[1]}")
            cam = CameraSpec.from_K(t.intrinsics, W, H)
            poses = t.poses
        for i in _view_frames(t, max_keyframes):
            views.append(RecordedView(name, int(i), float(t.timestamps[i] - t.timestamps[0]),
                                      np.asarray(poses[i], dtype=np.float64), cam))
    if len(views) > MAX_VIEWS:
        keep = np.unique(np.round(np.linspace(0, len(views) - 1, MAX_VIEWS)).astype(int))
        views = [views[int(k)] for k in keep]
    spec = {"type": "recording", "source": src, "path": str(path), "cameras": sorted(trajs)}
    if src == "droid":
        spec["episode"] = traj.meta.get("episode")
    if src == "game":
        spec.update({k: traj.meta[k] for k in ("wad", "wad_sha256", "map") if k in traj.meta})
        d = traj.meta["depth"]
        return Recording(src, spec, views, trajs, depth_step=float(d["quantisation_m"]),
                         far_m=float(d["offset_m"] + d["far_level"] * d["scale_m"]))
    return Recording(src, spec, views, trajs, intrinsics_recorded=src != "droid")


def _lacks(rec: Recording, typ: str) -> str | None:
    """Why ``rec`` cannot give questions of ``typ`` (None: it can)."""
    if typ in _NEVER:
        return _NEVER[typ]
    if typ in ("fov", "tracking") and not rec.intrinsics_recorded:
        return "needs the recorded intrinsics; DROID stores none"
    if typ in ("depth", "relative_depth", "tracking") and rec.depth_step is None:
        return "needs recorded depth; only game recordings have it"
    return None


def recording_types(rec: Recording, types=None) -> tuple[str, ...]:
    """The question types asked of ``rec``: ``types`` (None: every type it can give); a type it cannot give is
    refused (ValueError, one line naming the recording, the type and what it lacks)."""
    if types is None:
        return tuple(t for t in QUESTION_TYPES if _lacks(rec, t) is None)
    for t in types:
        why = _lacks(rec, t)
        if why is not None:
            raise ValueError(f"{rec.spec['path']}: no {t} questions from a {rec.source} recording: {t} {why} "
                             f"(this recording gives: {', '.join(recording_types(rec))})")
    return tuple(types)


# ----- views and pairs --------------------------------------------------------------------------------------------
def _shared_by_depth(rec: Recording, a: int, b: int) -> float:
    """The fraction of view ``a``'s pixels (a grid, depth below the far level) that view ``b`` sees: unprojected with
    their recorded depth, inside ``b``'s image and not behind what ``b`` recorded (within a quantisation step + 3 %)."""
    A, B = rec.views[a], rec.views[b]
    da, db = rec.depth(a), rec.depth(b)
    cam_a, cam_b = A.camera, B.camera
    s = max(1, cam_a.width // 40)
    ys, xs = np.mgrid[0:cam_a.height:s, 0:cam_a.width:s]
    z = da[ys, xs].astype(np.float64)
    ok = z < rec.far_m * 0.999
    if not ok.any():
        return 0.0
    xs, ys, z = xs[ok], ys[ok], z[ok]
    u, v, zb = project_points(B.pose, cam_b, unproject_pixels(A.pose, cam_a, xs, ys, z))
    front = zb > MIN_DEPTH_M  # in front of b's camera plane; u, v are NaN elsewhere
    u, v = np.where(front, u, -1), np.where(front, v, -1)
    ui, vi = np.round(u).astype(int), np.round(v).astype(int)
    inside = front & (ui >= 0) & (ui < cam_b.width) & (vi >= 0) & (vi < cam_b.height)
    seen = np.zeros_like(inside)
    idx = np.flatnonzero(inside)
    seen[idx] = db[vi[idx], ui[idx]] >= zb[idx] - (rec.depth_step + 0.03 * zb[idx])
    return float(seen.mean())


def _shared_by_axis(A: RecordedView, B: RecordedView) -> bool:
    """Without depth: the point :data:`SHARED_VIEW_DISTANCE_M` along each camera's optical axis lies inside the
    other image."""
    for P, Q in ((A, B), (B, A)):
        X = P.pose[:3, :3] @ np.array([0.0, 0.0, SHARED_VIEW_DISTANCE_M]) + P.pose[:3, 3]
        u, v, z = project_points(Q.pose, Q.camera, X)
        if not (z > 0 and 0 <= u < Q.camera.width and 0 <= v < Q.camera.height):
            return False
    return True


def _moved(A: RecordedView, B: RecordedView) -> bool:
    from .. import geometry

    t = float(np.linalg.norm(A.pose[:3, 3] - B.pose[:3, 3]))
    r = float(geometry.rotation_error(A.pose, B.pose))
    return not ((t < 0.1 and r < math.radians(5.0)) or t > 3.0 or r > math.radians(75.0))


def recorded_pairs(rec: Recording, rng, tries: int = 80):
    """Random pairs (a, b) of views that moved (≥ 0.1 m or 5°, at most 3 m and 75°) and share their view: with depth
    at least :data:`MIN_OVERLAP` both ways (:func:`_shared_by_depth`), else :func:`_shared_by_axis`."""
    n = len(rec.views)
    if n < 2:
        return
    for _ in range(tries):
        a, b = (int(v) for v in rng.choice(n, size=2, replace=False))
        A, B = rec.views[a], rec.views[b]
        if not _moved(A, B):
            continue
        if rec.depth_step is not None:
            if min(_shared_by_depth(rec, a, b), _shared_by_depth(rec, b, a)) < MIN_OVERLAP:
                continue
        elif not _shared_by_axis(A, B):
            continue
        yield a, b


def _view_meta(rec: Recording, ks) -> dict:
    vs = [rec.views[k] for k in ks]
    meta = {"views": [int(k) for k in ks], "cameras": [v.camera_name for v in vs], "frames": [v.frame for v in vs],
            "times_s": [round(v.time_s, 6) for v in vs]}
    if not rec.intrinsics_recorded:
        meta["intrinsics"] = "assumed (not recorded): the replay's ZED 2, 70° vertical field of view"
    return meta


def _camera_text(cam) -> str:
    r = cam.fy / cam.fx
    pixels = ("square pixels" if abs(r - 1.0) <= 0.005 else
              f"pixels that are not square (its focal length in pixels is {r:.2f} times as large vertically as "
              f"horizontally: fy = {r:.2f}·fx)")
    centred = abs(cam.cx - (cam.width - 1) / 2) <= 1.0 and abs(cam.cy - (cam.height - 1) / 2) <= 1.0
    point = ("the principal point at the image centre" if centred else
             f"the principal point at pixel ({cam.cx:.1f}, {cam.cy:.1f})")
    return f"a pinhole camera with {pixels} and {point}"


def generate_in_recording(rec: Recording, typ: str, fmt: str, rng) -> Draft | None:
    """One question of ``typ`` in ``fmt`` from the recording (a draft), or None when none could be found (e.g. no
    two views that moved and share their view)."""
    if fmt not in TYPE_FORMATS[typ]:
        raise ValueError(f"{typ!r} questions come as {', '.join(TYPE_FORMATS[typ])}, not {fmt!r}")
    why = _lacks(rec, typ)
    if why is not None:
        raise ValueError(f"{rec.spec['path']}: no {typ} questions from a {rec.source} recording: {typ} {why}")
    if not rec.views:
        return None
    return SHARED_GENERATORS[typ](rec, rng, fmt)
