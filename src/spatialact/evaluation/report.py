"""Deprecated: the report moved to :mod:`spatialact.report` (a package above evaluation and questions).

Every public name this module had still imports from here, with a ``DeprecationWarning`` naming its new home;
this alias is removed in a later release.
"""

from __future__ import annotations

import warnings

_MOVED = ("make_report", "overall_json", "load_runs", "RunData", "error_distance_layout", "diagnostics_section",
          "questions_section", "tool_use_section", "question_summaries", "MAX_RESPONSE_CHARS", "N_PATH_EXAMPLES",
          "MAX_TOOL_TEXT", "SPREAD_FOR_LOG", "DECADES_FOR_LOG", "LOG_LINEAR_BELOW_M")


def __getattr__(name: str):
    if name not in _MOVED:
        raise AttributeError(f"module 'spatialact.evaluation.report' has no attribute {name!r}")
    warnings.warn(f"spatialact.evaluation.report.{name} moved: import it from spatialact.report",
                  DeprecationWarning, stacklevel=2)
    from .. import report

    return getattr(report, name)


def __dir__():
    return list(_MOVED)
