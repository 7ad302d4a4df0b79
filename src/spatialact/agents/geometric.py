"""The ``geometric`` baseline: two-view geometry between the current and the goal image, turned into a Step.

1. ORB features in both images, matched by Hamming distance with Lowe's ratio test;
2. the essential matrix with the intrinsics K (MAGSAC++, else RANSAC; OpenCV's RNG seeded), and ``cv2.recoverPose``: ``X_goal = R X_cur + t`` for
   points in the camera frames (OpenCV axes: +X right, +Y down, +Z forward), ``‖t‖ = 1``;
3. the metric scale from the current depth image: the points triangulated with the unit baseline are compared
   with the measured depth at the same pixels (median ratio);
4. the body-frame motion from the current pose to the goal, ``Δ = [Rᵀ | −Rᵀ t·scale]``, decomposed into
   (truck, pedestal, dolly, tilt, pan, roll) and rounded to whole units of the task's sizes.

One-shot it answers the whole motion (split into several steps where a count exceeds the cap); closed-loop,
one capped step. Where the geometry fails (too few matches, no parallax, a degenerate essential matrix) it
answers Stay and says why in ``AgentTurn.info["reason"]``; it also answers Stay when the median disparity of
the matches is below ``stop_disparity_px`` (1.5 px): the views coincide, and smaller motions are noise.
Without a depth image the translation is one unit step along the recovered direction (``info["scale"] = "unit"``).
"""

from __future__ import annotations

import math
import time

import numpy as np

from .. import geometry
from ..action_space import ActionSequence, Step
from .base import (AgentConfigError, AgentTurn, observation_mode, quantise_motion, split_counts, stay_sequence,
                   turn_from_sequence)
from .baselines import BaselineAgent

__all__ = ["GeometricAgent", "estimate_motion"]


def _gray(img: np.ndarray) -> np.ndarray:
    import cv2

    a = np.asarray(img)
    if a.ndim == 2:
        return a.astype(np.uint8)
    return cv2.cvtColor(a[..., :3].astype(np.uint8), cv2.COLOR_RGB2GRAY)


def default_intrinsics(width: int, height: int, fov_y_deg: float = 60.0) -> np.ndarray:
    f = 0.5 * height / math.tan(math.radians(fov_y_deg) / 2)
    return np.array([[f, 0.0, width / 2.0], [0.0, f, height / 2.0], [0.0, 0.0, 1.0]])


def estimate_motion(cur_rgb: np.ndarray, goal_rgb: np.ndarray, K: np.ndarray, depth: np.ndarray | None = None,
                    n_features: int = 2000, ratio: float = 0.8, min_matches: int = 12,
                    seed: int = 0, stop_disparity_px: float = 0.5) -> tuple[np.ndarray | None, dict]:
    """The body-frame motion Δ (4, 4) from the current camera to the goal camera, or None, and diagnostics.

    ``depth`` is the current view's depth in metres (H, W); ``K`` the (3, 3) pinhole intrinsics in pixels.
    """
    import cv2

    info: dict = {}
    g1, g2 = _gray(cur_rgb), _gray(goal_rgb)
    orb = cv2.ORB_create(nfeatures=n_features, fastThreshold=5, edgeThreshold=15, patchSize=15)
    k1, d1 = orb.detectAndCompute(g1, None)
    k2, d2 = orb.detectAndCompute(g2, None)
    info["n_keypoints"] = [len(k1 or ()), len(k2 or ())]
    if d1 is None or d2 is None or len(k1) < min_matches or len(k2) < min_matches:
        info["reason"] = "too few features"
        return None, info
    pairs = cv2.BFMatcher(cv2.NORM_HAMMING).knnMatch(d1, d2, k=2)
    good = [p[0] for p in pairs if len(p) == 2 and p[0].distance < ratio * p[1].distance]
    info["n_matches"] = len(good)
    if len(good) < min_matches:
        info["reason"] = "too few matches"
        return None, info
    p1 = np.float64([k1[m.queryIdx].pt for m in good])
    p2 = np.float64([k2[m.trainIdx].pt for m in good])
    disp = np.median(np.linalg.norm(p1 - p2, axis=1))
    info["median_disparity_px"] = float(disp)
    if disp < stop_disparity_px:
        info["reason"] = f"median disparity {disp:.2f} px < {stop_disparity_px:g} px: the views coincide"
        return np.eye(4), info
    K = np.asarray(K, dtype=np.float64)
    # MAGSAC++ where OpenCV has it (≥ 4.5): plain RANSAC at a 1 px threshold sometimes settles on the
    # truck/pan (bas-relief) confusion in small images; OpenCV's RNG is reseeded so the answer is deterministic.
    cv2.setRNGSeed(int(seed))
    method = getattr(cv2, "USAC_MAGSAC", cv2.RANSAC)
    E, mask = cv2.findEssentialMat(p1, p2, K, method=method, prob=0.9999, threshold=1.0)
    if E is not None and E.shape[0] > 3:  # several solutions stacked: take the first
        E = E[:3]
    if E is None or E.shape != (3, 3):
        info["reason"] = "degenerate essential matrix"
        return None, info
    n_in, R, t, mask2, X = cv2.recoverPose(E, p1, p2, K, distanceThresh=1e4, mask=mask)
    info["n_inliers"] = int(n_in)
    if n_in < min_matches // 2:
        info["reason"] = "too few inliers"
        return None, info
    t = t.reshape(3)
    inl = mask2.reshape(-1) > 0
    scale = None
    if depth is not None:
        X = X[:, inl]
        z_tri = X[2] / np.where(np.abs(X[3]) > 1e-12, X[3], np.nan)
        pts = p1[inl]
        d = np.asarray(depth, dtype=np.float64)
        u = np.clip(np.round(pts[:, 0]).astype(int), 0, d.shape[1] - 1)
        v = np.clip(np.round(pts[:, 1]).astype(int), 0, d.shape[0] - 1)
        z_meas = d[v, u]
        ok = np.isfinite(z_tri) & (z_tri > 1e-6) & np.isfinite(z_meas) & (z_meas > 1e-6)
        if ok.sum() >= 3:
            scale = float(np.median(z_meas[ok] / z_tri[ok]))
            info["scale"] = scale
            info["n_scale_points"] = int(ok.sum())
    if scale is None:
        info["scale"] = "unit"
    # X_goal = R X_cur + t  ⇒  the goal camera in the current frame: Δ = [Rᵀ | −Rᵀ t].
    delta = np.eye(4)
    delta[:3, :3] = R.T
    delta[:3, 3] = -R.T @ t * (scale if scale is not None else 1.0)
    info["unit_translation"] = scale is None
    return delta, info


class GeometricAgent(BaselineAgent):
    """ORB + essential matrix + depth scale → integer counts with the task's sizes (see the module doc)."""

    name = "geometric"

    def __init__(self, seed: int = 0, n_features: int = 2000, ratio: float = 0.8, min_matches: int = 12,
                 stop_disparity_px: float = 1.5):
        super().__init__(seed)
        if not float(stop_disparity_px) >= 0:
            raise AgentConfigError(f"geometric: stop_disparity_px must be ≥ 0, got {stop_disparity_px!r}")
        self.stop_disparity_px = float(stop_disparity_px)
        try:
            import cv2  # noqa: F401
        except ImportError as e:  # pragma: no cover - opencv is part of the agents extra
            raise AgentConfigError("geometric: needs OpenCV (pip install 'spatialact[agents]')") from e
        if int(n_features) < 50:
            raise AgentConfigError(f"geometric: n_features must be ≥ 50, got {n_features!r}")
        if not 0.0 < float(ratio) <= 1.0:
            raise AgentConfigError(f"geometric: ratio must lie in (0, 1], got {ratio!r}")
        if int(min_matches) < 5:
            raise AgentConfigError(f"geometric: min_matches must be ≥ 5 (five-point algorithm), got {min_matches!r}")
        self.n_features, self.ratio, self.min_matches = int(n_features), float(ratio), int(min_matches)

    def params(self) -> dict:
        return {"seed": self.seed, "n_features": self.n_features, "ratio": self.ratio,
                "min_matches": self.min_matches, "stop_disparity_px": self.stop_disparity_px}

    def act(self, observation: dict) -> AgentTurn:
        t0 = time.perf_counter()
        task = self._require_task()
        cap = task.gt.cap
        cur, goal = observation.get("rgb"), observation.get("goal_rgb")
        if cur is None or goal is None:
            return self._turn(stay_sequence(task.sizes, cap), t0, {"reason": "no current or goal image"})
        K = observation.get("intrinsics")
        info: dict = {}
        if K is None:
            h, w = np.asarray(cur).shape[:2]
            K = default_intrinsics(w, h)
            info["intrinsics"] = "default 60° vertical field of view"
        delta, diag = estimate_motion(cur, goal, K, observation.get("depth"), self.n_features, self.ratio,
                                      self.min_matches, self.seed, self.stop_disparity_px)
        info.update(diag)
        if delta is None:
            return self._turn(stay_sequence(task.sizes, cap), t0, info)
        motion = geometry.delta_to_motion(delta)
        if info.get("unit_translation"):
            n = np.linalg.norm(motion[:3])
            motion[:3] = motion[:3] / n * task.sizes.translation if n > 0 else 0.0
        counts = quantise_motion(motion, task.sizes)
        info["motion"] = motion.tolist()
        if observation_mode(observation, self.mode) == "closed-loop":
            steps = [np.clip(counts, -cap, cap)]
        else:
            steps = split_counts(counts, cap)
        seq = ActionSequence(tuple(Step.from_signed(c.tolist()) for c in steps), task.sizes, cap)
        return turn_from_sequence(seq, task.answer_format, time.perf_counter() - t0, info)
