"""Trajectories in, action sequences and tasks out (SPEC §5).

Readers (generic ``.npz`` / ``.json``, TUM, KITTI, RealEstate10K, DROID in its LeRobot form, EgoDex) return one
:class:`Trajectory` type: C2W float64 poses (world +Z up, OpenCV body axes, metres), timestamps, fps, gripper or
grip states, image references, intrinsics, instruction and metadata. :func:`extract_actions` is the paper's
Action-Extraction Pipeline; :func:`replay` executes a sequence; :func:`tasks_from_trajectory` samples tasks.
"""

from .extraction import (DEFAULT_THRESHOLDS, Extraction, extract_actions, frame_motions, keyframe_indices,
                         quantisation_bound, replay)
from .loader import FORMATS, guess_format, load_trajectory
from .trajectory import FrameRef, Trajectory, TrajectoryError

__all__ = ["Trajectory", "TrajectoryError", "FrameRef", "load_trajectory", "guess_format", "FORMATS",
           "extract_actions", "Extraction", "replay", "keyframe_indices", "quantisation_bound", "frame_motions",
           "DEFAULT_THRESHOLDS", "tasks_from_trajectory"]


def __getattr__(name):
    # The task builder imports the task schema (jsonschema) and Pillow lazily; keep `import trajectories` light.
    if name == "tasks_from_trajectory":
        from .building import tasks_from_trajectory

        return tasks_from_trajectory
    raise AttributeError(name)
