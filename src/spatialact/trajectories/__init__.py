"""Trajectories in (docs/trajectories.md): the readers and the one :class:`Trajectory` type.

Readers (generic ``.npz`` / ``.json``, TUM, KITTI, RealEstate10K, DROID in its LeRobot form, EgoDex) return one
:class:`Trajectory` type: C2W float64 poses (world +Z up, OpenCV body axes, metres), timestamps, fps, gripper or
grip states, image references, intrinsics, instruction and metadata. This package imports only ``geometry``
(docs/architecture.md). Action extraction and task building live above, in :mod:`spatialact.tasks`
(:func:`~spatialact.tasks.extract_actions`, the paper's Action-Extraction Pipeline, and the rest of
:mod:`spatialact.tasks.extraction`).
"""

from .errors import TrajectoryError
from .loader import FORMATS, guess_format, load_trajectory
from .trajectory import FrameRef, Trajectory

__all__ = ["Trajectory", "TrajectoryError", "FrameRef", "load_trajectory", "guess_format", "FORMATS"]

