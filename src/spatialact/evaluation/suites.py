"""Built-in task suites: defined in :mod:`spatialact.taskgen.suites` (task generation), re-exported here, where the
evaluation has always found them."""

from __future__ import annotations

from ..taskgen.suites import DIAGNOSTIC_SUITES, MAX_PER_KIND, SUITES, builtin_suite, is_suite

__all__ = ["SUITES", "DIAGNOSTIC_SUITES", "MAX_PER_KIND", "builtin_suite", "is_suite"]
