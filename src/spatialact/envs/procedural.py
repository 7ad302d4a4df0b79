"""Deprecated: the task generators that lived here moved above the environments, to :mod:`spatialact.taskgen`
(``procedural_tasks``, ``TASK_VARIANTS``: :mod:`spatialact.taskgen.procedural`; ``ladder_tasks``,
``viewpoint_pairs``, ``LEVEL_FACTORS``, ``LADDER_KINDS``, ``UNCOMMON_FACTORS``: :mod:`spatialact.taskgen.ladder`),
and their helpers to :mod:`spatialact.envs.sampling` (``sample_signed_counts``) and :mod:`spatialact.envs.views`
(``view_overlap``). Every name still imports from here, with a DeprecationWarning naming its new home.
"""

from __future__ import annotations

import warnings

__all__ = ["procedural_tasks", "sample_signed_counts", "view_overlap", "TASK_VARIANTS", "ladder_tasks",
           "viewpoint_pairs", "LEVEL_FACTORS", "LADDER_KINDS", "UNCOMMON_FACTORS"]

#: old name -> the module it lives in now
MOVED = {"procedural_tasks": "spatialact.taskgen.procedural", "TASK_VARIANTS": "spatialact.taskgen.procedural",
         "ladder_tasks": "spatialact.taskgen.ladder", "viewpoint_pairs": "spatialact.taskgen.ladder",
         "LEVEL_FACTORS": "spatialact.taskgen.ladder", "LADDER_KINDS": "spatialact.taskgen.ladder",
         "UNCOMMON_FACTORS": "spatialact.taskgen.ladder",
         "sample_signed_counts": "spatialact.envs.sampling", "view_overlap": "spatialact.envs.views"}


def __getattr__(name):  # deprecated aliases: the upward imports (to spatialact.taskgen) of this module
    if name in MOVED:
        warnings.warn(f"spatialact.envs.procedural.{name} moved to {MOVED[name]}.{name}; import it from there",
                      DeprecationWarning, stacklevel=2)
        from ..taskgen import ladder, procedural
        from .sampling import sample_signed_counts
        from .views import view_overlap

        if name == "sample_signed_counts":
            return sample_signed_counts
        if name == "view_overlap":
            return view_overlap
        return getattr(procedural if MOVED[name].endswith("procedural") else ladder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
