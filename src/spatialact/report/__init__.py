"""Reports (docs/results.md): Markdown and a self-contained HTML page for one or more run directories.

``make_report(run_dirs, out_dir)`` writes ``report.md`` (figures and frames as files next to it) and
``report.html`` (the same content with every image inlined as a base64 data URL: no external assets);
``overall_json(run_dirs)`` gives the overall figures per run (``spatialact report --json``).

The package, one module a job: :mod:`.load` (runs and their records, tolerant field readers), :mod:`.tables`
(table rows and number formats), :mod:`.plots` (every figure; matplotlib imported when one is drawn),
:mod:`.document` (the one writer that emits Markdown and HTML from the same calls, escaping every string), a module
per section — :mod:`.overall` (Runs, Overall, per kind / source / tag, API usage, Plots, the ladder's calibration),
:mod:`.tool_use`, :mod:`.game` (per map, blocked steps), :mod:`.diagnostics`, :mod:`.questions`, :mod:`.examples` (paths and example episodes with their
frames) — and :mod:`.make`, which puts the sections together. Tables and plots outside the Diagnostics section show
the plain episodes (variant ""); the mirrored episodes of ``eval --flip`` appear in the Diagnostics section.

Model answers, task ids, tags and every other string from a run are untrusted: each is escaped with
``html.escape`` in the HTML, and frame paths from records are used only when they resolve inside their run.
"""

from __future__ import annotations

from .compare import RunsDifferWarning, compare_runs
from .diagnostics import diagnostics_section
from .examples import MAX_RESPONSE_CHARS, N_PATH_EXAMPLES
from .load import RunData, load_runs
from .make import make_report, overall_json
from .plots import DECADES_FOR_LOG, LOG_LINEAR_BELOW_M, SPREAD_FOR_LOG, error_distance_layout
from .questions import question_summaries, questions_section
from .tool_use import MAX_TOOL_TEXT, tool_use_section

__all__ = ["make_report", "overall_json", "load_runs", "RunData", "error_distance_layout", "diagnostics_section",
           "questions_section", "tool_use_section", "question_summaries", "MAX_RESPONSE_CHARS", "N_PATH_EXAMPLES",
           "MAX_TOOL_TEXT", "SPREAD_FOR_LOG", "DECADES_FOR_LOG", "LOG_LINEAR_BELOW_M", "compare_runs",
           "RunsDifferWarning"]
