"""Leaderboard rows and the leaderboard (docs/results.md, "Leaderboard").

A **row** sums up one run for a leaderboard (:func:`leaderboard_row`): what it ran — the suite and its SHA-256, the
agent and its options (secrets left out: :func:`scrub_options`), the model, the prompt version, the renderer and
render quality, the image size, the mode, the profile — and its figures, overall and per track (:mod:`.skill`:
episodes, skill with its interval, the paper's raw step score, success, SPL, parse-ok rate, blocked-step rate, API
errors, tokens and cost). ``spatialact report`` writes the rows of its runs to ``leaderboard.json`` in the report
folder (:data:`LEADERBOARD_FILE`) and puts each into ``report --json``.

The **leaderboard** (:func:`write_leaderboard`, ``spatialact leaderboard ROW.json… --out DIR``) reads rows
(:func:`read_rows`), refuses rows that are not comparable (:func:`check_comparable`: a different suite SHA-256 —
or suite, for suites without one —, profile, mode or image size), sorts them by overall skill (highest first; ties by
run name) and ranks them: a row's rank is 1 + the number of rows whose interval lies wholly above its own, so rows
whose intervals overlap share a rank (:func:`rank_rows`). It writes ``leaderboard.md``, ``leaderboard.html`` (the
report's document writer: every string escaped) and ``leaderboard.csv`` (a text cell that a spreadsheet would read
as a formula — starting with =, +, -, @, a tab or a carriage return — is prefixed with ``'``), each by the output
rule.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from pathlib import Path

from ..jsonline import check_depth, open_input, read_bounded
from ..outputs import write_text
from ..records import is_question
from .document import Document
from .load import RunData, as_float
from .skill import group_figures, run_config, run_provenance, track_of
from .tables import fmt_skill

__all__ = ["leaderboard_row", "leaderboard_rows", "rows_document", "read_rows", "check_comparable", "rank_rows",
           "write_leaderboard", "scrub_options", "LeaderboardError", "LEADERBOARD_FILE", "ROW_FORMAT", "ROW_VERSION",
           "COMPARED_FIELDS", "SECRET_PARTS"]

#: The file of a report folder that holds its runs' rows.
LEADERBOARD_FILE = "leaderboard.json"
#: The ``format`` and ``version`` of a leaderboard file and of each row.
ROW_FORMAT, ROW_VERSION = "spatialact-leaderboard", 1
#: Fields rows must agree on to stand in one leaderboard (``suite`` too when neither row has a suite SHA-256).
COMPARED_FIELDS = ("suite_sha256", "profile", "mode", "image_size")
#: An agent option whose name contains one of these (any case) is left out of a row: keys, tokens, headers.
SECRET_PARTS = ("key", "token", "secret", "password", "passwd", "auth", "header", "cookie", "credential", "bearer")
#: Options that say where files lie on the machine that ran, not what ran: left out too.
_LOCAL_OPTIONS = ("cache_dir",)


class LeaderboardError(ValueError):
    """A row file that cannot be read, or rows that do not belong in one leaderboard; one line naming them."""


def _scrub_url(v: str) -> str:
    """A URL without its user information (``user:password@``) or query string (``?key=…``)."""
    scheme, sep, rest = v.partition("://")
    if not sep:
        return v
    host, slash, path = rest.partition("/")
    host = host.rpartition("@")[2]
    return f"{scheme}://{host}{slash}{path.split('?', 1)[0].split('#', 1)[0]}"


def scrub_options(v):
    """Agent options without secrets: every key naming one of :data:`SECRET_PARTS` (``api_key_env``, ``headers``,
    ``extra_headers``, ``token`` …) and the local options (``cache_dir``) dropped at any depth, URLs without user
    information or query string."""
    if isinstance(v, dict):
        return {str(k): scrub_options(x) for k, x in v.items()
                if not any(p in str(k).lower() for p in SECRET_PARTS) and str(k) not in _LOCAL_OPTIONS}
    if isinstance(v, (list, tuple)):
        return [scrub_options(x) for x in v]
    if isinstance(v, str) and "://" in v:
        return _scrub_url(v)
    return v


def _figures(plain: list[dict], every: list[dict]) -> dict:
    """A row's figures of a group: skill and rates over its plain episodes, failures, tokens and cost over all of
    its episode records (mirrored ones cost too)."""
    f = group_figures(plain)
    whole = group_figures(every) if every is not plain else f
    sk = f["skill"]
    return {"episodes": f["episodes"],
            "skill": {k: (None if not math.isfinite(as_float(sk[k])) else float(sk[k]))
                      for k in ("skill", "lo", "hi")} | {"n": int(sk["n"])},
            "score": f["score"]["mean"] if f["score"]["n"] else None, "success": f["success"]["mean"],
            "spl": f["spl"]["mean"], "parse_ok": f["parse_ok"]["mean"], "blocked_rate": f["blocked"]["rate"],
            "api_errors": whole["api_errors"], "prompt_tokens": whole["prompt_tokens"],
            "completion_tokens": whole["completion_tokens"], "cost_usd": whole["cost_usd"]}


def _suite(cfg: dict, prov: dict) -> tuple[str | None, str | None]:
    """The suite id and SHA-256 of a run: a frozen suite's name and file hash, else its task source (a built-in
    procedural suite, ``suite:default:seed=0``, or a task file's name) and the task file's hash."""
    if cfg.get("suite") or prov.get("suite"):
        return str(cfg.get("suite") or prov.get("suite")), cfg.get("suite_sha256") or prov.get("suite_sha256")
    src = cfg.get("tasks") or prov.get("task_file")
    if isinstance(src, str) and not src.startswith("suite:"):
        src = Path(src).name  # a task file: its name, not where it lay on the machine that ran
    return (str(src) if src else None), cfg.get("tasks_sha256") or prov.get("task_file_sha256")


def leaderboard_row(run: RunData) -> dict:
    """The leaderboard row of one run (module docstring)."""
    cfg, prov = run_config(run), run_provenance(run)
    agent = cfg.get("agent") if isinstance(cfg.get("agent"), dict) else {"name": cfg.get("agent")}
    desc = prov.get("agent") if isinstance(prov.get("agent"), dict) else {}
    suite, sha = _suite(cfg, prov)
    episodes = [r for r in run.all_records if not is_question(r)]
    gl = Counter(str(r["gl_renderer"]) for r in run.records if r.get("gl_renderer"))
    w, h = cfg.get("width"), cfg.get("height")
    modes = sorted({str(r.get("mode")) for r in run.records if r.get("mode")})
    tracks = sorted({track_of(r) for r in run.records})
    return {"format": ROW_FORMAT, "version": ROW_VERSION, "run": run.label,
            "agent": agent.get("name") or run.agent, "model": run.model or desc.get("model"),
            "agent_options": scrub_options(agent.get("kwargs") or {}),
            "suite": suite, "suite_sha256": sha,
            "prompt_version": cfg.get("prompt_version") or (desc.get("params") or {}).get("prompt_version"),
            "renderer": cfg.get("renderer"), "gl_renderer": gl.most_common(1)[0][0] if gl else None,
            "render_quality": cfg.get("render_quality") or "default",
            "image_size": [int(w), int(h)] if isinstance(w, int) and isinstance(h, int) else None,
            "mode": modes[0] if len(modes) == 1 else (", ".join(modes) or cfg.get("mode")),
            "profile": cfg.get("profile") or "paper", "seed": cfg.get("seed"), "repeats": cfg.get("repeats") or 1,
            "spatialact_version": prov.get("spatialact_version"), "git_commit": prov.get("git_commit"),
            "overall": _figures(run.records, episodes),
            "tracks": {t: _figures([r for r in run.records if track_of(r) == t],
                                   [r for r in episodes if track_of(r) == t]) for t in tracks}}


def leaderboard_rows(runs: list[RunData]) -> list[dict]:
    """The rows of the runs that have episodes."""
    return [leaderboard_row(run) for run in runs if run.records]


def rows_document(rows: list[dict]) -> str:
    """The text of a leaderboard file: ``{"format", "version", "rows"}`` as strict JSON (NaN as null)."""
    from ..jsonline import strict_json

    return json.dumps(strict_json({"format": ROW_FORMAT, "version": ROW_VERSION, "rows": rows}), indent=2,
                      allow_nan=False) + "\n"


def _check_row(row, where: str) -> dict:
    if not isinstance(row, dict):
        raise LeaderboardError(f"{where}: a row is a JSON object, got {type(row).__name__}")
    if not isinstance(row.get("run"), str):
        raise LeaderboardError(f"{where}: field 'run' (the run's name) is missing")
    overall = row.get("overall")
    sk = overall.get("skill") if isinstance(overall, dict) else None
    if not isinstance(sk, dict) or any(k not in sk for k in ("skill", "lo", "hi")):
        raise LeaderboardError(f"{where}: field 'overall.skill' ({{skill, lo, hi}}) is missing")
    for k in ("skill", "lo", "hi"):
        if sk[k] is not None and (isinstance(sk[k], bool) or not isinstance(sk[k], (int, float))):
            raise LeaderboardError(f"{where}: field 'overall.skill.{k}' is not a number")
    for k in COMPARED_FIELDS:
        if k not in row:
            raise LeaderboardError(f"{where}: field '{k}' is missing")
    return row


def read_rows(paths) -> list[tuple[str, dict]]:
    """``(name, row)`` for every row of the files (a report's ``leaderboard.json``, a list of rows, or one row);
    a row's name is its file (with ``#k`` when the file holds several) and its run. One-line
    :class:`LeaderboardError` naming the file for anything unreadable."""
    out = []
    for p in map(Path, paths):
        with open_input(p, "file", LeaderboardError) as f:  # a regular file only: no FIFO, device or folder
            try:
                raw = read_bounded(f)
                check_depth(raw)
            except ValueError as e:  # a line over the size limit, JSON nested past the depth limit
                raise LeaderboardError(f"{p}: {e}") from None
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise LeaderboardError(f"{p}: not UTF-8 text") from None
        except json.JSONDecodeError as e:
            raise LeaderboardError(f"{p}: not valid JSON ({e.msg} at line {e.lineno})") from None
        rows = data.get("rows") if isinstance(data, dict) and "rows" in data else data
        rows = rows if isinstance(rows, list) else [rows]
        if not rows:
            raise LeaderboardError(f"{p}: holds no row")
        for k, row in enumerate(rows):
            where = f"{p}#{k + 1}" if len(rows) > 1 else str(p)
            _check_row(row, where)
            out.append((f"{where} ({row['run']})", row))
    return out


def _frozen(row: dict) -> bool:
    from ..taskgen import FROZEN_SUITES

    return str(row.get("suite") or "").split("/", 1)[0] in FROZEN_SUITES


def check_comparable(named: list[tuple[str, dict]]) -> None:
    """Refuse (:class:`LeaderboardError`, one line naming the two rows and the field) rows that differ in
    :data:`COMPARED_FIELDS`, or in ``suite`` when neither has a suite SHA-256 or either is a frozen suite (its splits
    and tracks share the file's SHA-256: ``l4-v1-lite/nav`` is not ``l4-v1``)."""
    if not named:
        return
    first_name, first = named[0]
    for name, row in named[1:]:
        fields = list(COMPARED_FIELDS)
        # a frozen suite's split and track (l4-v1, l4-v1-lite, l4-v1/nav) share the suite file's SHA-256: the id too
        if (first.get("suite_sha256") is None and row.get("suite_sha256") is None) or _frozen(first) or _frozen(row):
            fields.insert(0, "suite")
        for k in fields:
            if first.get(k) != row.get(k):
                raise LeaderboardError(f"rows differ in {k}: {first_name} has {json.dumps(first.get(k))}, {name} has "
                                       f"{json.dumps(row.get(k))}; a leaderboard compares runs of one suite, profile, "
                                       f"mode and image size")


def _interval(row: dict) -> tuple[float, float, float]:
    sk = row["overall"]["skill"]
    v = as_float(sk.get("skill"))
    lo, hi = as_float(sk.get("lo")), as_float(sk.get("hi"))
    return v, (lo if math.isfinite(lo) else v), (hi if math.isfinite(hi) else v)


def rank_rows(rows: list[dict]) -> list[tuple[int | None, dict]]:
    """``(rank, row)`` sorted by overall skill, highest first (ties by run name; rows without a skill last, rank
    None). Rank = 1 + the number of rows whose interval lies wholly above this row's (their low end above its high
    end): rows whose intervals overlap share a rank."""
    known = [r for r in rows if math.isfinite(_interval(r)[0])]
    unknown = sorted((r for r in rows if not math.isfinite(_interval(r)[0])), key=lambda r: str(r["run"]))
    known.sort(key=lambda r: (-_interval(r)[0], str(r["run"])))
    out = []
    for r in known:
        hi = _interval(r)[2]
        out.append((1 + sum(1 for o in known if o is not r and _interval(o)[1] > hi), r))
    return out + [(None, r) for r in unknown]


def _pct(v) -> str:
    f = as_float(v)
    return "–" if not math.isfinite(f) else f"{100 * f:.0f}%"


def _num(v, digits: int = 3) -> str:
    f = as_float(v)
    return "–" if not math.isfinite(f) else f"{f:.{digits}f}"


def _track_names(rows: list[dict]) -> list[str]:
    return sorted({t for r in rows for t in (r.get("tracks") or {}) if isinstance(t, str)})


def _table(ranked: list[tuple[int | None, dict]]) -> tuple[list[str], list[list]]:
    """The main table: rank, run, model, overall skill with its interval, then the other overall figures."""
    headers = ["rank", "run", "model", "skill [95% CI]", "episodes", "step score (paper)", "success", "SPL",
               "parse ok", "blocked steps", "API errors", "tokens", "cost (USD)"]
    rows = []
    for rank, r in ranked:
        o = r["overall"]
        tok = as_float(o.get("prompt_tokens")) + as_float(o.get("completion_tokens"))
        rows.append([rank if rank is not None else "–", r["run"], r.get("model") or "–", fmt_skill(o["skill"]),
                     o.get("episodes", "–"), _num(o.get("score")), _num(o.get("success")), _num(o.get("spl")),
                     _pct(o.get("parse_ok")), _pct(o.get("blocked_rate")), o.get("api_errors", "–"),
                     f"{tok:,.0f}" if math.isfinite(tok) else "–", _num(o.get("cost_usd"), 4)])
    return headers, rows


def _track_table(ranked: list[tuple[int | None, dict]], tracks: list[str]) -> tuple[list[str], list[list]]:
    """Skill with its interval and episodes per track, one row per run in the leaderboard's order."""
    rows = []
    for rank, r in ranked:
        per = r.get("tracks") or {}
        cells = []
        for t in tracks:
            f = per.get(t) or {}
            cells.append(f"{fmt_skill(f.get('skill'))} (n={f['episodes']})" if f.get("episodes") else "–")
        rows.append([rank if rank is not None else "–", r["run"], *cells])
    return ["rank", "run", *tracks], rows


def _details_table(ranked: list[tuple[int | None, dict]]) -> tuple[list[str], list[list]]:
    """What each run ran: agent and options, prompt version, renderer, version and commit."""
    rows = []
    for _, r in ranked:
        renderer = f"{r.get('renderer') or '–'} ({r.get('render_quality') or 'default'})"
        rows.append([r["run"], r.get("agent") or "–", json.dumps(r.get("agent_options") or {}, sort_keys=True),
                     r.get("prompt_version") or "–", renderer, r.get("gl_renderer") or "–",
                     r.get("spatialact_version") or "–", (r.get("git_commit") or "–")[:12]])
    return ["run", "agent", "options", "prompt version", "renderer", "GL", "spatialact", "commit"], rows


def _safe_cell(v):
    """A CSV cell a spreadsheet shows as text: strings that would start a formula get a leading ``'``."""
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return "" if v is None else v


_CSV_FIGURES = ("episodes", "score", "success", "spl", "parse_ok", "blocked_rate", "api_errors", "prompt_tokens",
                "completion_tokens", "cost_usd")


def _csv_part(f: dict | None) -> list:
    f = f or {}
    sk = f.get("skill") or {}
    return [sk.get("skill"), sk.get("lo"), sk.get("hi"), sk.get("n")] + [f.get(k) for k in _CSV_FIGURES]


def _csv(ranked: list[tuple[int | None, dict]], tracks: list[str]) -> str:
    figs = _CSV_FIGURES
    head = (["rank", "run", "agent", "model", "suite", "suite_sha256", "mode", "profile", "image_size", "renderer",
             "render_quality", "prompt_version", "skill", "skill_lo", "skill_hi", "skill_n", *figs]
            + [f"{t}_{k}" for t in tracks for k in ("skill", "skill_lo", "skill_hi", "skill_n", *figs)]
            + ["agent_options"])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(head)
    for rank, r in ranked:
        size = r.get("image_size")
        size = "x".join(str(x) for x in size) if isinstance(size, list) else size
        line = ([rank, r["run"], r.get("agent"), r.get("model"), r.get("suite"), r.get("suite_sha256"),
                 r.get("mode"), r.get("profile"), size, r.get("renderer"), r.get("render_quality"),
                 r.get("prompt_version")] + _csv_part(r["overall"])
                + [x for t in tracks for x in _csv_part((r.get("tracks") or {}).get(t))]
                + [json.dumps(r.get("agent_options") or {}, sort_keys=True)])
        w.writerow([_safe_cell(x) for x in line])
    return buf.getvalue()


def write_leaderboard(named: list[tuple[str, dict]], out_dir) -> tuple[Path, Path, Path]:
    """Check (:func:`check_comparable`), rank (:func:`rank_rows`) and write ``leaderboard.md``, ``leaderboard.html``
    and ``leaderboard.csv`` into ``out_dir``; returns their paths."""
    check_comparable(named)
    rows = [r for _, r in named]
    ranked = rank_rows(rows)
    tracks = _track_names(rows)
    out = Path(out_dir)
    first = rows[0]
    size = first.get("image_size")
    doc = Document(out)
    doc.heading(1, "spatialact leaderboard")
    sha = first.get("suite_sha256")
    where = f"sha256 {sha}" if sha else "no SHA-256: not a frozen suite file"
    dims = "x".join(map(str, size)) if isinstance(size, list) else "–"
    doc.paragraph(f"Tasks {first.get('suite') or '–'} ({where}), mode {first.get('mode')}, profile "
                  f"{first.get('profile')}, image size {dims}; {len(rows)} run{'s' * (len(rows) != 1)}.")
    doc.paragraph("Sorted by skill (0: what doing nothing, the stay baseline, scores; 1: the ground truth) with its "
                  "bootstrap 95% interval over episodes. Rank: 1 + the number of runs whose interval lies wholly "
                  "above this run's, so runs whose intervals overlap share a rank. The paper's raw step score "
                  "stands beside it, unchanged.")
    doc.table(*_table(ranked))
    doc.heading(2, "Skill per track")
    doc.table(*_track_table(ranked, tracks))
    doc.heading(2, "Runs")
    doc.table(*_details_table(ranked), wrap=True)
    md, page = doc.write("spatialact leaderboard", stem="leaderboard")
    csv_path = write_text(out / "leaderboard.csv", _csv(ranked, tracks))
    return md, page, csv_path
