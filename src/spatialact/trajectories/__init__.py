"""Trajectories in (SPEC §5.1): the readers and the one :class:`Trajectory` type.

Readers (generic ``.npz`` / ``.json``, TUM, KITTI, RealEstate10K, DROID in its LeRobot form, EgoDex) return one
:class:`Trajectory` type: C2W float64 poses (world +Z up, OpenCV body axes, metres), timestamps, fps, gripper or
grip states, image references, intrinsics, instruction and metadata. This package imports only ``geometry``
(SPEC §1). Action extraction and task building live in :mod:`spatialact.tasks` (``tasks.extraction``,
``tasks.from_trajectory``); their names — :func:`extract_actions` (the paper's Action-Extraction Pipeline),
:func:`replay`, :func:`tasks_from_trajectory`, … — stay importable from here, loaded on first use.
"""

from .loader import FORMATS, guess_format, load_trajectory
from .trajectory import FrameRef, Trajectory, TrajectoryError

_EXTRACTION = ("extract_actions", "Extraction", "replay", "keyframe_indices", "quantisation_bound", "frame_motions",
               "DEFAULT_THRESHOLDS")

__all__ = ["Trajectory", "TrajectoryError", "FrameRef", "load_trajectory", "guess_format", "FORMATS",
           *_EXTRACTION, "tasks_from_trajectory"]


def __getattr__(name):
    # Extraction and task building are in spatialact.tasks (above the readers); re-exported lazily so that
    # importing the readers never imports them.
    if name in _EXTRACTION:
        from ..tasks import extraction

        return getattr(extraction, name)
    if name == "tasks_from_trajectory":
        from ..tasks.from_trajectory import tasks_from_trajectory

        return tasks_from_trajectory
    raise AttributeError(f"module 'spatialact.trajectories' has no attribute {name!r}")
