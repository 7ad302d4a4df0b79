"""Random ground truths for the worlds' task samplers: signed unit counts over the six motion axes.

Counts are per step (truck, pedestal, dolly, tilt, pan, roll), signed, whole units; a sampler turns them into an
:class:`~spatialact.action_space.ActionSequence` and defines the goal as its replay from the start pose.
"""

from __future__ import annotations

import numpy as np

__all__ = ["sample_signed_counts"]


def sample_signed_counts(rng: np.random.Generator, n_steps: int, axis_weights, max_counts, cap: int = 10,
                         n_axes_p=(0.5, 0.35, 0.15)) -> np.ndarray:
    """(n_steps, 6) signed integer counts (truck, pedestal, dolly, tilt, pan, roll); each step moves 1–3 axes."""
    w = np.asarray(axis_weights, dtype=float)
    w = w / w.sum()
    out = np.zeros((n_steps, 6), dtype=np.int64)
    for k in range(n_steps):
        m = int(rng.choice([1, 2, 3], p=n_axes_p))
        axes = rng.choice(6, size=m, replace=False, p=w)
        for a in axes:
            n = int(rng.integers(1, min(cap, int(max_counts[a])) + 1))
            out[k, a] = n if rng.random() < 0.5 else -n
    return out
