"""The task schema and task-file I/O (SPEC §5.3). Light core: no simulator needed."""

from .io import TaskFileError, file_sha256, load_tasks, save_tasks, task_schema, validate_record
from .task import ANSWER_FORMATS, KINDS, SCHEMA_VERSION, Task, default_success

__all__ = ["Task", "SCHEMA_VERSION", "KINDS", "ANSWER_FORMATS", "default_success", "TaskFileError", "load_tasks",
           "save_tasks", "validate_record", "task_schema", "file_sha256"]
