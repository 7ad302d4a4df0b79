"""Trajectories in (docs/trajectories.md): the readers and the one :class:`Trajectory` type.

Readers (generic ``.npz`` / ``.json``, TUM, KITTI, RealEstate10K, DROID in its LeRobot form, EgoDex) return one
:class:`Trajectory` type: C2W float64 poses (world +Z up, OpenCV body axes, metres), timestamps, fps, gripper or
grip states, image references, intrinsics, instruction and metadata. This package imports only ``geometry``
(docs/architecture.md). Action extraction and task building live in :mod:`spatialact.tasks`: import
:func:`extract_actions` (the paper's Action-Extraction Pipeline), :func:`replay`, :func:`quantisation_bound` and
:func:`tasks_from_trajectory` from ``spatialact.tasks``, the rest (``Extraction``, ``keyframe_indices``,
``frame_motions``, ``DEFAULT_THRESHOLDS``) from ``spatialact.tasks.extraction``. Their old names here still work, as
deprecated aliases that warn (:class:`DeprecationWarning` naming the new path), loaded on first use.
"""

import warnings

from .loader import FORMATS, guess_format, load_trajectory
from .trajectory import FrameRef, Trajectory, TrajectoryError

# Deprecated alias -> the module that owns it now.
_MOVED = {"extract_actions": "spatialact.tasks", "replay": "spatialact.tasks", "quantisation_bound": "spatialact.tasks",
          "tasks_from_trajectory": "spatialact.tasks", "Extraction": "spatialact.tasks.extraction",
          "keyframe_indices": "spatialact.tasks.extraction", "frame_motions": "spatialact.tasks.extraction",
          "DEFAULT_THRESHOLDS": "spatialact.tasks.extraction"}

__all__ = ["Trajectory", "TrajectoryError", "FrameRef", "load_trajectory", "guess_format", "FORMATS"]


def __getattr__(name):
    # Extraction and task building are in spatialact.tasks (above the readers); the old names are loaded lazily, so
    # that importing the readers never imports them, and warn.
    if name not in _MOVED:
        raise AttributeError(f"module 'spatialact.trajectories' has no attribute {name!r}")
    warnings.warn(f"spatialact.trajectories.{name} is deprecated; use {_MOVED[name]}.{name}", DeprecationWarning,
                  stacklevel=2)
    if name == "tasks_from_trajectory":
        from ..tasks.from_trajectory import tasks_from_trajectory

        return tasks_from_trajectory
    from ..tasks import extraction

    return getattr(extraction, name)
