"""The task schema and task-file I/O (docs/tasks.md), action extraction from trajectories
(``tasks.extraction``, docs/trajectories.md) and tasks built from them (``tasks.trajectory_pairs``). Light core: no
simulator needed; extraction and building load on first use."""

from .io import (TaskFile, TaskFileError, clear_task_cache, file_sha256, load_task_file, load_tasks, save_tasks,
                 task_cache_dir)
from .task import READ_SCHEMA_VERSIONS, SCHEMA_VERSION, Task, counts_from_names, default_success, sequence_dict
from .tags import bin_label, motion_tags, steps_tag
from .validation import schema_problems, semantic_problems, task_schema, validate_task_dict

__all__ = ["Task", "SCHEMA_VERSION", "READ_SCHEMA_VERSIONS", "default_success",
           "sequence_dict", "counts_from_names", "TaskFile", "TaskFileError", "load_tasks", "load_task_file",
           "clear_task_cache", "task_cache_dir", "save_tasks", "validate_task_dict", "schema_problems",
           "semantic_problems", "task_schema", "file_sha256", "bin_label", "motion_tags", "steps_tag",
           "extract_actions", "replay", "quantisation_bound", "pairs_from_trajectory"]


def __getattr__(name):
    if name in ("extract_actions", "replay", "quantisation_bound"):
        from . import extraction

        return getattr(extraction, name)
    if name == "pairs_from_trajectory":
        from .trajectory_pairs import pairs_from_trajectory

        return pairs_from_trajectory
    raise AttributeError(f"module 'spatialact.tasks' has no attribute {name!r}")
