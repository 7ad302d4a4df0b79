"""Reports (docs/results.md): Markdown and a self-contained HTML page for one or more run directories.

``make_report(run_dirs, out_dir)`` writes ``report.md`` (figures and frames as files next to it) and
``report.html`` (the same content with every image inlined as a base64 data URL: no external assets);
``overall_json(run_dirs)`` gives the figures per run and ``report_json(run_dirs)`` adds the paired comparison and
the leaderboard rows (``spatialact report --json``).

The package, one module a job: :mod:`.load` (runs and their records, tolerant field readers), :mod:`.tables`
(table rows and number formats), :mod:`.plots` (every figure; matplotlib imported when one is drawn),
:mod:`.document` (the one writer that emits Markdown and HTML from the same calls, escaping every string), a module
per section — :mod:`.overall` (Runs, Overall, per kind / source / tag, API usage, Plots, the ladder's calibration),
:mod:`.tool_use`, :mod:`.game` (per map), :mod:`.paired` (runs compared episode by episode), :mod:`.reliability`
(parse errors, blocked steps), :mod:`.diagnostics`, :mod:`.questions`, :mod:`.examples` (paths and example episodes
with their frames) — and :mod:`.make`, which puts the sections together. :mod:`.skill` computes the figures every
table leads with (skill first), :mod:`.s0` rebuilds s0 for records written before they carried it, and
:mod:`.leaderboard` makes a run's leaderboard row (``leaderboard.json``) and the leaderboard of many rows. Tables
and plots outside the Diagnostics section show the plain episodes (variant ""); the mirrored episodes of
``eval --flip`` appear in the Diagnostics section.

Model answers, task ids, tags and every other string from a run are untrusted: each is escaped with
``html.escape`` in the HTML, and frame paths from records are used only when they resolve inside their run.
"""

from __future__ import annotations

from .compare import RunsDifferWarning, compare_runs
from .diagnostics import diagnostics_section
from .examples import MAX_RESPONSE_CHARS, N_PATH_EXAMPLES
from .leaderboard import (LEADERBOARD_FILE, LeaderboardError, check_comparable, leaderboard_row, leaderboard_rows,
                          rank_rows, read_rows, scrub_options, write_leaderboard)
from .load import RunData, load_runs
from .make import make_report, overall_json, report_json
from .paired import paired_json
from .plots import DECADES_FOR_LOG, LOG_LINEAR_BELOW_M, SPREAD_FOR_LOG, error_distance_layout
from .questions import question_summaries, questions_section
from .s0 import rebuilt_s0
from .skill import MIN_PAIRED, group_figures, pair_key, track_of
from .tool_use import MAX_TOOL_TEXT, tool_use_section

__all__ = ["make_report", "overall_json", "report_json", "load_runs", "RunData", "error_distance_layout",
           "diagnostics_section", "questions_section", "tool_use_section", "question_summaries", "MAX_RESPONSE_CHARS",
           "N_PATH_EXAMPLES", "MAX_TOOL_TEXT", "SPREAD_FOR_LOG", "DECADES_FOR_LOG", "LOG_LINEAR_BELOW_M",
           "compare_runs", "RunsDifferWarning", "pair_key", "track_of", "group_figures", "rebuilt_s0", "paired_json",
           "MIN_PAIRED", "leaderboard_row", "leaderboard_rows", "read_rows", "check_comparable", "rank_rows",
           "write_leaderboard", "scrub_options", "LeaderboardError", "LEADERBOARD_FILE"]
