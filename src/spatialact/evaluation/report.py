"""Reports (SPEC §8): Markdown and a self-contained HTML page for one or more run directories.

``make_report(run_dirs, out_dir)`` writes ``report.md`` (figures and frames as files next to it) and
``report.html`` (the same content with every image inlined as a base64 data URL: no external assets). Tables:
overall (several runs side by side), per kind and per tag, each mean with its bootstrap 95% interval
(:mod:`.stats`); plots (matplotlib, Agg): score distributions per run, final position error against start–goal
distance (symmetric-log axes, with a note, when an outlier would squash the rest: :func:`error_distance_layout`),
predicted against true paths in top view (world x–y, metres, from ``pred_poses`` and ``gt_poses``);
start / goal / final frames of example episodes (best, median and worst score of each run); token and cost totals;
a Diagnostics section (FlipEval, viewpoint robustness, difficulty ladder, prediction bias) for the runs it applies
to (:func:`diagnostics_section`). Tables and plots outside it show the plain episodes (variant ""); the mirrored
episodes of ``eval --flip`` appear in the Diagnostics section.

Model answers, task ids, tags and every other string from a run are untrusted: each is escaped with
``html.escape`` in the HTML, and frame paths from records are used only when they resolve inside their run.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import math
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .episode import is_failure
from .results import read_config, read_records, safe_name
from .stats import Summary, bootstrap_ci

__all__ = ["make_report", "load_runs", "RunData", "error_distance_layout", "tool_use_section", "diagnostics_section"]

MAX_RESPONSE_CHARS = 2000
N_PATH_EXAMPLES = 4


@dataclass
class RunData:
    """One run of a report. ``records``: its plain episodes (variant ""), what the general tables and plots show;
    ``all_records``: every record, the mirrored episodes of ``eval --flip`` too (the diagnostics section)."""

    path: Path
    label: str
    config: dict
    records: list[dict] = field(default_factory=list)
    all_records: list[dict] = field(default_factory=list)

    @property
    def agent(self) -> str:
        recs = self.records or self.all_records  # a run of generated questions has no plain episode
        return str(recs[0].get("agent")) if recs else "?"

    @property
    def model(self):
        recs = self.records or self.all_records
        return recs[0].get("model") if recs else None


def _num(v) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f if math.isfinite(f) else math.nan


def _get(r: dict, key: str):
    """A record field; tolerant of a nested ``closed_loop`` / ``scores`` layout."""
    if key in r and r[key] is not None:
        return r[key]
    for nest in ("closed_loop", "scores"):
        d = r.get(nest)
        if isinstance(d, dict) and d.get(key) is not None:
            return d[key]
    return None


def _response(r: dict) -> str:
    v = r.get("response")
    if v is None:
        v = r.get("responses")
    if isinstance(v, list):  # closed loop: one answer per step
        return "\n".join(f"[step {k + 1}] {x}" for k, x in enumerate(v))
    return "" if v is None else str(v)


def _poses(r: dict, key: str) -> np.ndarray | None:
    v = r.get(key)
    if v is None and key == "pred_poses":
        v = r.get("poses")
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if a.ndim != 3 or a.shape[1:] != (4, 4) or not np.all(np.isfinite(a)):
        return None
    return a


def _d0(r: dict) -> float:
    v = _num(_get(r, "d0"))
    if math.isfinite(v):
        return v
    g = _poses(r, "gt_poses")
    if g is not None and len(g) > 1:
        return float(np.linalg.norm(g[-1, :3, 3] - g[0, :3, 3]))
    return math.nan


def _usage(r: dict, key: str) -> float:
    u = r.get("usage") or {}
    v = _num(u.get(key)) if isinstance(u, dict) else math.nan
    return 0.0 if math.isnan(v) else v


def load_runs(run_dirs) -> list[RunData]:
    runs = []
    for d in run_dirs:
        p = Path(d)
        recs = read_records(p)
        cfg = read_config(p)
        runs.append(RunData(p, "", cfg, [r for r in recs if not r.get("variant")], recs))
    labels = []
    for run in runs:
        lab = run.agent + (f" ({run.model})" if run.model else "")
        labels.append(lab)
    for i, run in enumerate(runs):
        run.label = labels[i] if labels.count(labels[i]) == 1 else f"{labels[i]} [{run.path.name}]"
    seen: dict[str, int] = {}
    for run in runs:  # still equal (same directory name twice): number them
        if run.label in seen:
            seen[run.label] += 1
            run.label = f"{run.label} #{seen[run.label]}"
        else:
            seen[run.label] = 1
    return runs


# ----- tables ---------------------------------------------------------------------------------------------------
def _overall_rows(runs: list[RunData]) -> tuple[list[str], list[list]]:
    headers = ["run", "episodes", "score [95% CI]", "success [95% CI]", "final pos. err. (m, median)", "SPL",
               "parse ok", "repairs / ep.", "errors", "prompt tokens", "completion tokens", "cost (USD)"]
    rows = []
    for run in runs:
        rs = run.records
        score = bootstrap_ci(_num(_get(r, "score")) for r in rs)
        succ = bootstrap_ci(_get(r, "success") for r in rs if _get(r, "success") is not None)
        fpe = [_num(_get(r, "final_position_error")) for r in rs]
        fpe = [v for v in fpe if math.isfinite(v)]
        spl = bootstrap_ci((_get(r, "spl") for r in rs), n_boot=0)
        # failed episodes (api_error / error) carry ok = None: they have no answer to parse, so they are left out
        oks = (r.get("ok", (r.get("parse") or {}).get("ok")) for r in rs)
        ok = [bool(v) for v in oks if v is not None]
        reps = bootstrap_ci((_get(r, "n_repairs") for r in rs), n_boot=0)
        errors = sum(1 for r in rs if r.get("error"))
        rows.append([run.label, len(rs), score.fmt(), succ.fmt(), f"{np.median(fpe):.3f}" if fpe else "–",
                     spl.fmt(ci=False), f"{100 * np.mean(ok):.0f}%" if ok else "–", reps.fmt(2, ci=False), errors,
                     f"{sum(_usage(r, 'prompt_tokens') for r in rs):,.0f}",
                     f"{sum(_usage(r, 'completion_tokens') for r in rs):,.0f}",
                     f"{sum(_usage(r, 'cost_usd') for r in rs):.4f}"])
    return headers, rows


def _group_table(runs: list[RunData], group) -> tuple[list[str], list[list]]:
    groups: list[str] = sorted({g for run in runs for r in run.records for g in group(r)})
    headers = ["group"] + [run.label for run in runs]
    rows = []
    for g in groups:
        row = [g]
        for run in runs:
            s = bootstrap_ci(_num(_get(r, "score")) for r in run.records if g in group(r))
            row.append(f"{s.fmt()} (n={s.n})" if s.n else "–")
        rows.append(row)
    return headers, rows


# Tags that mark a task of a diagnostic suite (the ladder's level, the viewpoint pairs): see _diagnostic_task.
_DIAGNOSTIC_TAGS = ("level", "viewpoint")


def _diagnostic_task(r: dict) -> bool:
    tags = r.get("tags") or {}
    return isinstance(tags, dict) and any(k in tags for k in _DIAGNOSTIC_TAGS)


def _by_kind(r: dict) -> list[str]:
    return [str(r.get("kind"))]


# Tags that name a group of tasks rather than a category (one value per viewpoint pair): not broken down by.
_PAIRING_TAGS = ("pair",)


# Tags binned per kind (spatialact.tasks.tags.DISTANCE_EDGES_M: navigation in metres, manipulation in centimetres):
# their rows name the kind, or "distance=0-0.1 m" (manip) and "distance=0-0.5 m" (nav) would read as overlapping.
_KIND_BINNED_TAGS = ("distance",)


def _by_tag(r: dict) -> list[str]:
    tags = r.get("tags") or {}
    if not isinstance(tags, dict):
        return []
    return [f"{k}={v}" + (f" ({r.get('kind')})" if k in _KIND_BINNED_TAGS else "")
            for k, v in sorted(tags.items()) if k not in _PAIRING_TAGS]


def _by_source(r: dict) -> list[str]:
    return [str(r.get("source"))]


# ----- plots ----------------------------------------------------------------------------------------------------
def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=90, bbox_inches="tight")
    _plt().close(fig)
    return path


def _plot_scores(runs: list[RunData], path: Path) -> Path | None:
    data = [[v for v in (_num(_get(r, "score")) for r in run.records) if math.isfinite(v)] for run in runs]
    if not any(data):
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(4.5, 1.6 * len(runs) + 2), 3.2))
    pos = [i + 1 for i, d in enumerate(data) if d]
    ax.violinplot([d for d in data if d], positions=pos, showmeans=True, showextrema=True)
    for i, d in enumerate(data):
        if d:
            jitter = np.random.default_rng(i).uniform(-0.08, 0.08, len(d))
            ax.scatter(np.full(len(d), i + 1) + jitter, d, s=6, alpha=0.4, color="k")
    ax.set_xticks(range(1, len(runs) + 1))
    ax.set_xticklabels([run.label for run in runs], rotation=15, ha="right", fontsize=8)
    ax.set_ylabel("episode score")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("Score distribution per run")
    return _save(fig, path)


# Error-against-distance axes: linear, unless an outlier would squeeze the informative part (errors around the
# no-progress line error = d0) into a sliver: then both axes are symmetric-log (linear below LOG_LINEAR_BELOW_M so
# exact zeros still show) and a note under the plot says so and how far the largest value is.
SPREAD_FOR_LOG = 5.0  # largest error beyond this many times the largest distance
DECADES_FOR_LOG = 2.0  # or values spanning more than this many decades above LOG_LINEAR_BELOW_M
LOG_LINEAR_BELOW_M = 0.01


def error_distance_layout(d0, err) -> dict:
    """How to draw final position errors ``err`` against start–goal distances ``d0`` (finite, metres).

    Returns ``{"scale": "linear" | "symlog", "linthresh": m, "limit": m, "note": str | None}``: ``symlog`` when
    the largest error exceeds :data:`SPREAD_FOR_LOG` × the largest distance, or when the values ≥ 1 cm span more
    than :data:`DECADES_FOR_LOG` decades (kinds with centimetre and metre distances in one run).
    """
    x = np.asarray(d0, dtype=np.float64)
    y = np.asarray(err, dtype=np.float64)
    both = np.concatenate([x, y])
    top = float(both.max()) if both.size else 0.0
    xmax, ymax = (float(x.max()) if x.size else 0.0), (float(y.max()) if y.size else 0.0)
    big = both[both >= LOG_LINEAR_BELOW_M]
    decades = math.log10(top / float(np.percentile(big, 10))) if big.size >= 2 and top > 0 else 0.0
    note = None
    if xmax > 0 and ymax > SPREAD_FOR_LOG * xmax:
        note = (f"log axes (linear below {LOG_LINEAR_BELOW_M * 100:g} cm): the largest error, {ymax:.3g} m, is "
                f"{ymax / xmax:.1f}× the largest distance ({xmax:.3g} m)")
    elif decades > DECADES_FOR_LOG:
        note = (f"log axes (linear below {LOG_LINEAR_BELOW_M * 100:g} cm): values span {decades:.1f} decades, up "
                f"to {top:.3g} m")
    if note is None:
        return {"scale": "linear", "linthresh": LOG_LINEAR_BELOW_M, "limit": top * 1.05, "note": None}
    return {"scale": "symlog", "linthresh": LOG_LINEAR_BELOW_M, "limit": top * 1.5, "note": note}


def _plot_error_distance(runs: list[RunData], path: Path) -> tuple[Path | None, str | None]:
    """The scatter plot and its note (None on linear axes); (None, None) when no record has both values."""
    per_run = []
    for run in runs:
        pts = [(_d0(r), _num(_get(r, "final_position_error"))) for r in run.records]
        pts = [(a, b) for a, b in pts if math.isfinite(a) and math.isfinite(b)]
        if pts:
            per_run.append((run.label, np.asarray(pts, dtype=np.float64)))
    if not per_run:
        return None, None
    allp = np.concatenate([p for _, p in per_run])
    lay = error_distance_layout(allp[:, 0], allp[:, 1])
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for label, p in per_run:
        ax.scatter(p[:, 0], p[:, 1], s=10, alpha=0.6, label=label)
    lim = lay["limit"]
    if lay["scale"] == "symlog":
        for set_scale in (ax.set_xscale, ax.set_yscale):
            set_scale("symlog", linthresh=lay["linthresh"], linscale=0.5)
        ax.set_xlim(0, lim)
        ax.set_ylim(0, lim)
        # y = x is straight on equal symlog axes, but matplotlib joins points linearly: sample it densely.
        line = np.concatenate([[0.0], np.geomspace(lay["linthresh"] / 10, lim, 200)])
        ax.plot(line, line, "k:", lw=0.8, label="error = distance (no progress)")
        ax.grid(True, which="major", lw=0.3, alpha=0.5)
        fig.text(0.01, -0.07, f"log axes, linear below {lay['linthresh'] * 100:g} cm (see the note in the report)",
                 fontsize=7, ha="left", va="top")
    else:
        xl = ax.get_xlim()
        ax.plot([0, xl[1]], [0, xl[1]], "k:", lw=0.8, label="error = distance (no progress)")
    ax.set_xlabel("start–goal distance d0 (m)")
    ax.set_ylabel("final position error (m)")
    ax.set_title("Final position error against distance")
    ax.legend(fontsize=7, loc="best")
    return _save(fig, path), lay["note"]


def _plot_paths(run: RunData, episodes: list[dict], path: Path) -> Path | None:
    eps = [r for r in episodes if _poses(r, "gt_poses") is not None or _poses(r, "pred_poses") is not None]
    if not eps:
        return None
    plt = _plt()
    n = len(eps)
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, n, figsize=(3.3 * n, 3.2), squeeze=False)
    for ax, r in zip(axes[0], eps):
        g, p = _poses(r, "gt_poses"), _poses(r, "pred_poses")
        both = np.concatenate([q[:, :2, 3] for q in (g, p) if q is not None])
        span = float(max(np.ptp(both[:, 0]), np.ptp(both[:, 1]), 1e-3))  # arrows scale with the panel, not 10 cm
        for poses, style, lab in ((g, "g-o", "true"), (p, "r--x", "predicted")):
            if poses is not None:
                ax.plot(poses[:, 0, 3], poses[:, 1, 3], style, ms=4, lw=1.2, label=lab)
                # the camera's forward (+Z) axis, projected on the ground plane
                f = poses[-1, :3, 2]
                ax.annotate("", xytext=(poses[-1, 0, 3], poses[-1, 1, 3]),
                            xy=(poses[-1, 0, 3] + 0.15 * span * f[0], poses[-1, 1, 3] + 0.15 * span * f[1]),
                            arrowprops={"arrowstyle": "->", "color": style[0], "lw": 1.2})
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.yaxis.set_major_locator(MaxNLocator(4))
        start = g if g is not None else p
        ax.plot(start[0, 0, 3], start[0, 1, 3], "ks", ms=6, label="start")
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_title(f"{str(r.get('task_id'))[:28]}\nscore {_num(_get(r, 'score')):.2f}", fontsize=8)
        ax.set_xlabel("world x (m)", fontsize=7)
        ax.set_ylabel("world y (m)", fontsize=7)
        ax.tick_params(labelsize=6)
    axes[0][0].legend(fontsize=6)
    fig.suptitle(f"{run.label}: paths in top view (world x–y)", fontsize=9, y=1.08)
    fig.tight_layout(w_pad=2.0)
    return _save(fig, path)


# ----- examples -------------------------------------------------------------------------------------------------
def _examples(run: RunData, k: int = 3) -> list[tuple[str, dict]]:
    scored = [r for r in run.records if math.isfinite(_num(_get(r, "score")))]
    if not scored:
        return []
    scored.sort(key=lambda r: (_num(_get(r, "score")), str(r.get("task_id"))))
    picks = [("best", scored[-1]), ("median", scored[len(scored) // 2]), ("worst", scored[0])]
    out, seen = [], set()
    for name, r in picks[:k]:
        if id(r) not in seen:
            seen.add(id(r))
            out.append((name, r))
    return out


def _frame_file(run: RunData, r: dict, name: str) -> Path | None:
    frames = r.get("frames") or {}
    rel = frames.get(name) if isinstance(frames, dict) else None
    if not isinstance(rel, str) or not rel:
        return None
    root = run.path.resolve()
    p = (run.path / rel).resolve()
    if root not in p.parents or not p.is_file():  # a path from the record must stay inside its run
        return None
    return p


def _data_url(path: Path) -> str:
    mime = "image/png" if path.suffix.lower() == ".png" else "image/jpeg"
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


# ----- writers --------------------------------------------------------------------------------------------------
def _md_cell(v) -> str:
    s = html.escape(str(v), quote=False).replace("|", "\\|").replace("\n", " ")
    return s


def _md_table(headers, rows) -> str:
    out = ["| " + " | ".join(_md_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _html_table(headers, rows) -> str:
    e = html.escape
    out = ["<table><thead><tr>" + "".join(f"<th>{e(str(h))}</th>" for h in headers) + "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _fence(text: str) -> str:
    longest, run_ = 0, 0
    for ch in text:
        run_ = run_ + 1 if ch == "`" else 0
        longest = max(longest, run_)
    return "`" * max(3, longest + 1)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1200px;color:#222;
background:#fff;padding:0 16px}
h1{font-size:26px;border-bottom:3px solid #2b6cb0;padding-bottom:6px}h2{font-size:20px;margin-top:32px;color:#2b6cb0}
h3{font-size:16px}table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #ccd;padding:4px 8px;text-align:left}th{background:#e8eef8}tr:nth-child(even){background:#f7f9fc}
pre{background:#f4f4f4;border:1px solid #ddd;padding:8px;white-space:pre-wrap;word-break:break-word;font-size:12px;
max-height:260px;overflow:auto}
.frames{display:flex;gap:12px;flex-wrap:wrap}.frames figure{margin:0;text-align:center;font-size:12px}
.frames img{width:192px;image-rendering:pixelated;border:1px solid #999;background:#eee}
.plot{max-width:100%;border:1px solid #eee}.meta{color:#555;font-size:13px}
.ep{border-left:4px solid #2b6cb0;padding-left:12px;margin:16px 0}
"""


def make_report(run_dirs, out_dir) -> tuple[Path, Path]:
    """Write ``out_dir/report.md`` and ``out_dir/report.html`` for the given run directories; returns their paths.

    ``report.md`` refers to PNG files under ``out_dir/figures`` and ``out_dir/frames``; ``report.html`` inlines
    them and needs nothing else.
    """
    run_dirs = [Path(d) for d in (run_dirs if isinstance(run_dirs, (list, tuple)) else [run_dirs])]
    if not run_dirs:
        raise ValueError("make_report: no run directories given")
    runs = load_runs(run_dirs)
    out = Path(out_dir)
    figdir, framedir = out / "figures", out / "frames"
    for d in (figdir, framedir):
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)

    md: list[str] = []
    hb: list[str] = []  # HTML body
    e = html.escape

    def heading(level: int, text: str) -> None:
        md.append(f"{'#' * level} {_md_cell(text)}\n")
        hb.append(f"<h{level}>{e(text)}</h{level}>")

    def para(text: str) -> None:
        md.append(_md_cell(text) + "\n")
        hb.append(f"<p class='meta'>{e(text)}</p>")

    def table(headers, rows) -> None:
        md.append(_md_table(headers, rows) + "\n")
        hb.append(_html_table(headers, rows))

    def image(path: Path | None, alt: str) -> None:
        if path is None:
            return
        md.append(f"![{_md_cell(alt)}]({path.relative_to(out).as_posix()})\n")
        hb.append(f"<img class='plot' alt='{e(alt)}' src='{_data_url(path)}'>")

    from .. import __version__

    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    heading(1, "spatialact report")
    para(f"Generated {now} by spatialact {__version__}. Scores are episode step scores (SPEC §4); intervals are "
         f"percentile-bootstrap 95% intervals of the mean (1000 resamples, seed 0).")

    heading(2, "Runs")
    if any(r.get("variant") == "mirror" for run in runs for r in run.all_records):
        para("Runs with mirrored episodes (eval --flip): the tables and plots below show the plain episodes; the "
             "mirrored ones are compared with them in the Diagnostics section.")
    run_rows = []
    n_answers = {id(run): sum(1 for r in run.all_records if r.get("record") == "question") for run in runs}
    for run in runs:
        recs = run.records or run.all_records
        prov = (recs[0].get("provenance") if recs else None) or {}
        cfg = run.config.get("config", run.config) if isinstance(run.config, dict) else {}
        modes = sorted({str(r.get("mode")) for r in run.all_records if r.get("mode")})
        row = [run.label, str(run.path), ", ".join(modes) or str(cfg.get("mode", "–")), len(run.records)]
        if any(n_answers.values()):
            row.append(n_answers[id(run)])
        run_rows.append(row + [prov.get("spatialact_version", "–"), (prov.get("git_commit") or "–")[:12],
                               (prov.get("task_file_sha256") or prov.get("question_file_sha256") or "–")[:12]])
    table(["run", "directory", "mode", "episodes"] + (["question answers"] if any(n_answers.values()) else [])
          + ["version", "commit", "task / question file sha256"], run_rows)
    # question-only runs have no episodes: they appear in the Runs table and under Diagnostics › Generated questions
    ep_runs = [run for run in runs if run.records]
    if not ep_runs:
        para("No episodes: these runs hold answers to generated questions only (see Generated questions under "
             "Diagnostics).")
    tool_use_section(ep_runs, heading, para, table)

    if ep_runs:
        heading(2, "Overall")
        table(*_overall_rows(ep_runs))
        core = [replace(run, records=[r for r in run.records if not _diagnostic_task(r)]) for run in ep_runs]
        if any(0 < len(c.records) < len(run.records) for c, run in zip(core, ep_runs)):
            para("These runs also hold the tasks of the diagnostic suites (tagged level or viewpoint; see "
                 "Diagnostics): the table above covers every plain episode, the one below the other tasks only "
                 "(the table `spatialact demo` prints).")
            table(*_overall_rows([c for c in core if c.records]))
        heading(2, "Per kind")
        table(*_group_table(ep_runs, _by_kind))
    if any(_by_source(r) != ["None"] for run in ep_runs for r in run.records):
        heading(2, "Per source")
        table(*_group_table(ep_runs, _by_source))
    if any(_by_tag(r) for run in ep_runs for r in run.records):
        heading(2, "Per tag")
        table(*_group_table(ep_runs, _by_tag))

    api = [run for run in runs if any(_usage(r, "prompt_tokens") or _usage(r, "completion_tokens")
                                      for r in run.all_records)]
    if api:
        heading(2, "API usage")
        rows = []
        for run in api:
            rs = run.all_records  # the mirrored episodes of --flip cost tokens too
            pt = sum(_usage(r, "prompt_tokens") for r in rs)
            ct = sum(_usage(r, "completion_tokens") for r in rs)
            cost = sum(_usage(r, "cost_usd") for r in rs)
            cached = sum(1 for r in rs if isinstance(r.get("usage"), dict) and r["usage"].get("cached"))
            lat = [_num(r.get("latency_s")) for r in rs]
            lat = [v for v in lat if math.isfinite(v)]
            rows.append([run.label, run.model or "–", f"{pt:,.0f}", f"{ct:,.0f}", f"{cost:.4f}",
                         f"{cost / max(1, len(rs)):.5f}", cached, f"{np.mean(lat):.2f}" if lat else "–"])
        table(["run", "model", "prompt tokens", "completion tokens", "cost (USD)",
               "cost / record (episode or answer)", "cache hits", "mean latency (s)"], rows)

    diagnostics_section(runs, figdir, heading, para, table, image)

    if ep_runs:
        heading(2, "Plots")
        image(_plot_scores(ep_runs, figdir / "scores.png"), "score distribution per run")
        ed_path, ed_note = _plot_error_distance(ep_runs, figdir / "error_vs_distance.png")
        image(ed_path, "final position error against distance")
        if ed_note:
            para(f"Error against distance: {ed_note}.")
    for i, run in enumerate(runs):
        if not run.records:
            continue
        eps = [r for _, r in _examples(run, 3)]
        extra = [r for r in run.records if r not in eps][: max(0, N_PATH_EXAMPLES - len(eps))]
        image(_plot_paths(run, eps + extra, figdir / f"paths_{i}.png"), f"{run.label}: predicted and true paths")

    if ep_runs:
        heading(2, "Example episodes")
    for i, run in enumerate(runs):
        if not run.records:
            continue
        heading(3, run.label)
        for which, r in _examples(run):
            score = _num(_get(r, "score"))
            reason = r.get("reason") or (r.get("parse") or {}).get("error") or ""
            err = r.get("error") or ""
            summary = (f"{which}: task {r.get('task_id')} ({r.get('kind')}), score {score:.3f}"
                       + (f", final position error {_num(_get(r, 'final_position_error')):.3f} m"
                          if _get(r, "final_position_error") is not None else "")
                       + (f", reason {reason}" if reason else "") + (f", error {err}" if err else ""))
            md.append(f"**{_md_cell(summary)}**\n")
            hb.append(f"<div class='ep'><p><b>{e(summary)}</b></p><div class='frames'>")
            md_imgs = []
            for name in ("start", "goal", "final"):
                src = _frame_file(run, r, name)
                if src is None:
                    continue
                dst = framedir / str(i) / safe_name(str(r.get("key") or r.get("task_id"))) / f"{name}.png"
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
                md_imgs.append(f"![{name}]({dst.relative_to(out).as_posix()})")
                hb.append(f"<figure><img alt='{e(name)}' src='{_data_url(dst)}'><figcaption>{e(name)}"
                          f"</figcaption></figure>")
            hb.append("</div>")
            if md_imgs:
                md.append(" ".join(md_imgs) + "\n")
            text = _response(r)
            if len(text) > MAX_RESPONSE_CHARS:
                text = text[:MAX_RESPONSE_CHARS] + f"\n… ({len(text) - MAX_RESPONSE_CHARS} more characters)"
            fence = _fence(text)
            md.append(f"Model answer:\n\n{fence}text\n{text}\n{fence}\n")
            hb.append(f"<p>Model answer:</p><pre>{e(text)}</pre></div>")

    md_path, html_path = out / "report.md", out / "report.html"
    md_path.write_text("\n".join(md), encoding="utf-8")
    page = ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; img-src data:; "
            "style-src 'unsafe-inline'\">"
            f"<title>spatialact report</title><style>{_CSS}</style></head><body>\n" + "\n".join(hb)
            + "\n</body></html>\n")
    html_path.write_text(page, encoding="utf-8")
    return md_path, html_path


# ----- diagnostics (SPEC §9, docs/diagnostics.md) -----------------------------------------------------------------
_SHORT = {"Dolly In": "DollyIn", "Dolly Out": "DollyOut", "Truck Right": "TruckR", "Truck Left": "TruckL",
          "Pedestal Down": "PedDown", "Pedestal Up": "PedUp", "Pan Right": "PanR", "Pan Left": "PanL",
          "Tilt Up": "TiltUp", "Tilt Down": "TiltDown", "Roll CCW": "RollCCW", "Roll CW": "RollCW"}


def _fmt_mean(s: dict | None, digits: int = 3, ci: bool = True) -> str:
    """A ``{"mean", "ci_low", "ci_high", "n"}`` summary as text ("–" when empty)."""
    if not s or not s.get("n") or s.get("mean") is None:
        return "–"
    out = f"{s['mean']:.{digits}f}"
    if ci and s["n"] > 1 and s.get("ci_low") is not None:
        out += f" [{s['ci_low']:.{digits}f}, {s['ci_high']:.{digits}f}]"
    return out


def _fmt_val(v, digits: int = 3, signed: bool = False) -> str:
    f = _num(v)
    if not math.isfinite(f):
        return "–"
    return f"{f:+.{digits}f}" if signed else f"{f:.{digits}f}"


def _plot_flip(flips: list, path: Path) -> Path | None:
    """Plain, mirrored and paired scores and the mirror inconsistency per run (bars with 95% intervals)."""
    plt = _plt()
    names = ("plain", "mirrored", "paired", "inconsistency")
    colours = ("#2b6cb0", "#dd6b20", "#38a169", "#c53030")
    fig, ax = plt.subplots(figsize=(max(5.0, 1.5 * len(flips) + 2.5), 3.2))
    width = 0.8 / len(names)
    for j, (name, col) in enumerate(zip(names, colours)):
        xs, ys, lo, hi = [], [], [], []
        for i, (_, f) in enumerate(flips):
            s = f[name]
            if s and s.get("n") and s.get("mean") is not None:
                xs.append(i + (j - 1.5) * width)
                ys.append(s["mean"])
                lo.append(s["mean"] - (s["ci_low"] if s["ci_low"] is not None else s["mean"]))
                hi.append((s["ci_high"] if s["ci_high"] is not None else s["mean"]) - s["mean"])
        ax.bar(xs, ys, width, color=col, label=name, yerr=[lo, hi], capsize=2, error_kw={"lw": 0.8})
    ax.set_xticks(range(len(flips)))
    ax.set_xticklabels([run.label for run, _ in flips], rotation=15, ha="right", fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score / inconsistency")
    ax.set_title("FlipEval: plain, mirrored, paired scores and mirror inconsistency")
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.28))
    return _save(fig, path)


def _plot_ladder(entries: list, path: Path) -> Path | None:
    """Score per difficulty level (with 95% intervals), one panel per kind, one line per run."""
    from ..diagnostics.summaries import LEVELS

    kinds = [k for k in ("nav", "manip", "hand") if any(k in lad for _, lad in entries)]
    if not kinds:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(kinds), figsize=(4.2 * len(kinds), 3.2), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        for run, lad in entries:
            if kind not in lad:
                continue
            sc = lad[kind]["scores"]
            xs = [i for i, lv in enumerate(LEVELS) if lv in sc and sc[lv]["mean"] is not None]
            ys = [sc[LEVELS[i]]["mean"] for i in xs]
            lo = [ys[k] - sc[LEVELS[i]]["ci_low"] for k, i in enumerate(xs)]
            hi = [sc[LEVELS[i]]["ci_high"] - ys[k] for k, i in enumerate(xs)]
            ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", ms=4, lw=1.2, capsize=2, label=run.label)
        ax.set_xticks(range(len(LEVELS)))
        ax.set_xticklabels(LEVELS)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("difficulty level")
        ax.set_ylabel("mean episode score")
        ax.set_title(f"{kind}: score per level")
        ax.grid(True, lw=0.3, alpha=0.5)
    axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return _save(fig, path)


def _plot_viewpoints(entries: list, path: Path) -> Path | None:
    """S_common against S_uncommon per run and kind (bars with 95% intervals), δ written above each pair."""
    rows = [(run, kind, v) for run, vp in entries for kind, v in vp.items() if kind != "all"]
    if not rows:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(rows) + 2.5), 3.3))
    for j, (name, col) in enumerate((("common", "#2b6cb0"), ("uncommon", "#dd6b20"))):
        xs = [i + (j - 0.5) * 0.38 for i in range(len(rows))]
        ys = [v[name]["mean"] or 0.0 for _, _, v in rows]
        lo = [y - (v[name]["ci_low"] if v[name]["ci_low"] is not None else y) for y, (_, _, v) in zip(ys, rows)]
        hi = [(v[name]["ci_high"] if v[name]["ci_high"] is not None else y) - y for y, (_, _, v) in zip(ys, rows)]
        ax.bar(xs, ys, 0.38, color=col, label=f"{name} viewpoint", yerr=[lo, hi], capsize=2, error_kw={"lw": 0.8})
    for i, (_, _, v) in enumerate(rows):
        top = max(v["common"]["ci_high"] or 0.0, v["uncommon"]["ci_high"] or 0.0)
        ax.text(i, min(1.0, top + 0.04), f"δ {_fmt_val(v['delta'], 2, signed=True)}", ha="center", fontsize=7)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([f"{run.label}\n{kind}" for run, kind, _ in rows], fontsize=7)
    ax.set_ylim(0, 1.12)
    ax.set_ylabel("mean episode score")
    ax.set_title("Viewpoint robustness: the same tasks from common and uncommon viewpoints")
    ax.legend(fontsize=7, loc="upper right")
    return _save(fig, path)


def _plot_bias(label: str, bias: dict, path: Path) -> Path | None:
    """Predicted against true label counts (12 primitives), and the −/0/+ confusion matrix of each motion axis
    (rows: true sign, columns: predicted sign; colour = share of the row, numbers = counts)."""
    from ..action_space import AXES, MOTION_PRIMITIVES
    from ..diagnostics.metrics import SIGN_LABELS

    plt = _plt()
    fig = plt.figure(figsize=(12.5, 4.4))
    gs = fig.add_gridspec(2, 6, height_ratios=[1.0, 1.3], hspace=0.45, wspace=0.45)
    ax = fig.add_subplot(gs[0, :])
    x = np.arange(12)
    ax.bar(x - 0.2, bias["gt_counts"], 0.4, color="#999999", label="ground truth")
    ax.bar(x + 0.2, bias["pred_counts"], 0.4, color="#2b6cb0", label="predicted")
    ax.set_xticks(x)
    ax.set_xticklabels([_SHORT[p.value] for p in MOTION_PRIMITIVES], fontsize=7)
    ax.set_ylabel("steps with the label", fontsize=8)
    ax.set_title(f"{label}: label counts (CV {_fmt_val(bias['label_cv'], 2)}, truth {_fmt_val(bias['label_cv_gt'], 2)}"
                 f", normalised {_fmt_val(bias['label_cv_normalised'], 2)}; L/R bias "
                 f"{_fmt_val(bias['bias_pred'], 2, True)}, truth {_fmt_val(bias['bias_gt'], 2, True)})", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    conf = np.asarray(bias["confusion"], dtype=np.float64)
    for a, name in enumerate(AXES):
        cax = fig.add_subplot(gs[1, a])
        m = conf[a]
        share = m / np.maximum(m.sum(axis=1, keepdims=True), 1.0)
        cax.imshow(share, vmin=0.0, vmax=1.0, cmap="Blues")
        for i in range(3):
            for j in range(3):
                cax.text(j, i, f"{int(m[i, j])}", ha="center", va="center", fontsize=7,
                         color="white" if share[i, j] > 0.6 else "black")
        cax.set_xticks(range(3))
        cax.set_yticks(range(3))
        cax.set_xticklabels(SIGN_LABELS, fontsize=7)
        cax.set_yticklabels(SIGN_LABELS, fontsize=7)
        cax.set_title(name, fontsize=8)
        cax.set_xlabel("predicted", fontsize=7)
        if a == 0:
            cax.set_ylabel("true", fontsize=7)
    return _save(fig, path)


def _calibration(runs: list[RunData]) -> dict | None:
    """The ladder's calibration rows: the per-level means of the first ``random`` and ``oracle`` runs of the
    report that have ladder episodes (None unless both exist)."""
    from ..diagnostics.summaries import calibration_levels

    rows = {}
    for want in ("random", "oracle"):
        for run in runs:
            if run.agent == want:
                lv = calibration_levels(run.records)
                if lv:
                    rows[want] = lv
                    break
    return rows if len(rows) == 2 else None


def diagnostics_section(runs: list[RunData], figdir: Path, heading, para, table, image) -> None:
    """The "Diagnostics" section (SPEC §9): FlipEval (plain, mirrored, paired, inconsistency, left/right bias), the
    viewpoint robustness δ with paired intervals, the difficulty ladder with RPDR (and chance-normalised scores when
    random and oracle runs are in the report), and prediction bias with the sign confusion matrices. Each part is
    shown for the runs it applies to; nothing when none applies. Strings go through the report's escaping writers."""
    from ..diagnostics.summaries import LEVELS, run_diagnostics

    calib = _calibration(runs)
    diags = [(run, run_diagnostics(run.all_records, calib)) for run in runs]
    questions = question_summaries(runs)
    if not any(v for _, d in diags for v in d.values()) and not questions:
        return
    heading(2, "Diagnostics")
    para("Why an agent fails, not only how often (SPEC §9; definitions in docs/diagnostics.md). Intervals are "
         "percentile-bootstrap 95% intervals (1000 resamples, seed 0); '–' marks a figure that is undefined "
         "(a zero denominator) or has no data.")

    flips = [(run, d["flip"]) for run, d in diags if d["flip"]]
    if flips:
        heading(3, "FlipEval: mirrored views")
        para("Each task is also run mirrored left-right (eval --flip): images flipped, poses M T M, ground truth and "
             "instruction mirrored; the answer is mirrored back and scored against the true ground truth. Paired: "
             "the worse of the two scores per task. Inconsistency: 1 − the mean of the two answers scored against "
             "each other (0 = mirror-consistent; pairs with an unparsed answer are counted apart). L/R bias: "
             "(left − right) / (left + right) over the Truck, Pan and Roll units of the answers as given, beside the "
             "same figure of the ground truths asked (0 by construction under the flip).")
        table(["run", "pairs", "plain", "mirrored", "paired", "inconsistency", "unparsed pairs", "L/R bias",
               "L/R bias truth"],
              [[run.label, f["n_pairs"], _fmt_mean(f["plain"]), _fmt_mean(f["mirrored"]), _fmt_mean(f["paired"]),
                _fmt_mean(f["inconsistency"]), f["inconsistency_nan"], _fmt_val(f["bias_pred"], signed=True),
                _fmt_val(f["bias_gt"], signed=True)] for run, f in flips])
        image(_plot_flip(flips, figdir / "diag_flip.png"), "FlipEval per run")

    vps = [(run, d["viewpoint"]) for run, d in diags if d["viewpoint"]]
    if vps:
        heading(3, "Viewpoint robustness")
        para("Pairs of tasks that share scene and goal, one from a common viewpoint (level, |pitch| ≤ 15°, eye "
             "height) and one from an uncommon one (|roll| ≥ 20°, |pitch| ≥ 40°, or very low or high). "
             "δ = (S_uncommon − S_common) / S_common, with a paired bootstrap interval.")
        table(["run", "kind", "pairs", "S_common", "S_uncommon", "δ", "δ 95% CI"],
              [[run.label, kind, v["n_pairs"], _fmt_mean(v["common"]), _fmt_mean(v["uncommon"]),
                _fmt_val(v["delta"], signed=True),
                # one pair has no interval (its resamples are all the pair itself): shown as no interval, as n=1 is
                f"[{_fmt_val(v['delta_ci'][0], signed=True)}, {_fmt_val(v['delta_ci'][1], signed=True)}]"
                if v["n_pairs"] > 1 else "–"]
               for run, vp in vps for kind, v in vp.items()])
        image(_plot_viewpoints(vps, figdir / "diag_viewpoint.png"), "viewpoint robustness per run")

    lads = [(run, d["ladder"]) for run, d in diags if d["ladder"]]
    if lads:
        heading(3, "Difficulty ladder")
        para("Levels add one factor at a time: L1 one translation axis, L2 several, L3 with rotation, L4 distractor "
             "objects and low view overlap, L5 an uncommon viewpoint. RPDR = min(1, S_next / S_prev) between "
             "consecutive levels (Spatial457; 1 = no drop)."
             + (" Normalised: (S − S_random) / (S_oracle − S_random), from the random and oracle runs of this "
                "report." if calib else " A chance-normalised score needs random and oracle runs in the report."))
        rp_names = [f"{LEVELS[i]}→{LEVELS[i + 1]}" for i in range(len(LEVELS) - 1)]
        rows = []
        for run, lad in lads:
            for kind, v in lad.items():
                sc, rp = v["scores"], v["rpdr"]
                rows.append([run.label, kind] + [_fmt_mean(sc.get(lv), ci=False) for lv in LEVELS]
                            + [_fmt_val(rp.get(n)) for n in rp_names])
        table(["run", "kind"] + list(LEVELS) + [f"RPDR {n}" for n in rp_names], rows)
        if calib:
            table(["run", "kind"] + [f"normalised {lv}" for lv in LEVELS],
                  [[run.label, kind] + [_fmt_val((v.get("normalised") or {}).get(lv)) for lv in LEVELS]
                   for run, lad in lads for kind, v in lad.items()])
        image(_plot_ladder(lads, figdir / "diag_ladder.png"), "score per difficulty level")

    biases = [(run, d["bias"]) for run, d in diags if d["bias"]]
    if biases:
        heading(3, "Prediction bias")
        para("A label is a motion primitive present in a step. Label CV: the coefficient of variation (population "
             "std / mean) of the predicted label counts over the 12 primitives, zeros included (0 = every "
             "primitive equally often); normalised: the CV of predicted / true count over the labels in the ground "
             "truth (0 = the ground truth's own mix). The matrices compare the sign (−, 0, +) of each axis per step, "
             "predicted against true.")
        table(["run", "episodes", "label CV", "label CV truth", "label CV normalised", "L/R bias", "L/R bias truth"],
              [[run.label, b["n"], _fmt_val(b["label_cv"]), _fmt_val(b["label_cv_gt"]),
                _fmt_val(b["label_cv_normalised"]), _fmt_val(b["bias_pred"], signed=True),
                _fmt_val(b["bias_gt"], signed=True)] for run, b in biases])
        for i, (run, b) in enumerate(biases):
            image(_plot_bias(run.label, b, figdir / f"diag_bias_{i}.png"), f"{run.label}: label counts and sign "
                                                                            f"confusion per axis")
    questions_section(questions, heading, para, table)


def question_summaries(runs: list[RunData]) -> list:
    """(run, :func:`spatialact.questions.summarise` of its question records) for the runs that answered generated
    questions (``spatialact questions score``)."""
    from ..questions.scoring import summarise

    out = []
    for run in runs:
        s = summarise(run.all_records)
        if s:
            out.append((run, s))
    return out


def questions_section(questions: list, heading, para, table) -> None:
    """The generated-questions part of the Diagnostics section (SPEC §9, docs/questions.md): per run and question
    group, accuracy over every rotation and at rotation 0 beside the chance rate, CircularEval beside its chance
    rate, and for numeric questions MRA, δ=2 accuracy and the median relative error. Writes through the report's
    escaping writers."""
    if not questions:
        return
    from ..questions.scoring import summary_rows

    heading(3, "Generated questions")
    para("Camera-geometry questions (VGBench: relative pose, primitive, field of view, depth, distance, tracking) and "
         "task-flow questions (SpaCE-10) with exact answers from the simulator (spatialact questions). Option "
         "questions are asked under every rotation of their options: accuracy counts every answer, 'acc r0' the "
         "options in their stored order, CircularEval a question right under every rotation (chance: (1/n)^n for "
         "n options). Numeric answers: MRA (mean relative accuracy over thresholds 0.50…0.95) and δ=2 (within "
         "0.5x–2x of the truth). Failed answers (API errors) are counted, never scored.")
    rows = []
    headers = None
    for run, summary in questions:
        headers, rs = summary_rows(summary)
        rows += [[run.label] + r for r in rs]
    table(["run"] + headers, rows)


MAX_TOOL_TEXT = 300  # characters of a tool call's arguments or result shown in the report


def tool_use_section(runs: list[RunData], heading, para, table) -> None:
    """The "Tool use" section, for runs of tool-using agents (records with ``tools``): which tool set each run
    offered — runs with ``privileged`` tools are flagged, they read simulator truth — how many calls per episode,
    how many were malformed or failed, calls per tool, and every call of one example episode per run (arguments
    and results cut to :data:`MAX_TOOL_TEXT` characters). Writes through the report's ``heading`` / ``para`` /
    ``table`` writers, which escape every string."""
    tool_runs = [run for run in runs if any("tools" in r for r in run.records)]
    if not tool_runs:
        return
    heading(2, "Tool use")
    for run in tool_runs:
        if any(r.get("privileged") for r in run.records):
            para(f"PRIVILEGED: run {run.label} offered tools that read the simulator's truth (exact poses, "
                 f"segmentation); its scores are not comparable with agents that see only the images.")
    rows = []
    for run in tool_runs:
        rs = [r for r in run.records if "tools" in r]
        failed = sum(1 for r in rs if is_failure(r))
        calls = [c for r in rs for c in (r.get("tool_calls") or []) if isinstance(c, dict)]
        by_name: dict[str, int] = {}
        for c in calls:
            by_name[str(c.get("name"))] = by_name.get(str(c.get("name")), 0) + 1
        sets = sorted({str(r.get("tools")) for r in rs})
        ran = len(rs) - failed  # a failed episode's conversation broke off: left out of the rate
        ran_calls = sum(len(r.get("tool_calls") or []) for r in rs if not is_failure(r))
        rows.append([run.label, ", ".join(sets),
                     f"{len(rs)} ({failed} failed)" if failed else len(rs), len(calls),
                     f"{ran_calls / ran:.2f}" if ran else "–",
                     sum(1 for c in calls if c.get("malformed")),
                     sum(1 for c in calls if c.get("error") and not c.get("malformed")),
                     ", ".join(f"{k} {v}" for k, v in sorted(by_name.items())) or "–"])
    table(["run", "tool set", "episodes", "tool calls", "calls / episode (not failed)", "malformed", "failed calls",
           "calls per tool"], rows)

    def cut(v) -> str:
        t = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
        return t if len(t) <= MAX_TOOL_TEXT else t[:MAX_TOOL_TEXT] + "…"

    for run in tool_runs:
        ex = next((r for r in run.records if r.get("tool_calls")), None)
        if ex is None:
            continue
        para(f"{run.label}: the tool calls of task {ex.get('task_id')} (score {_num(_get(ex, 'score')):.3f}).")
        table(["turn", "call", "tool", "arguments", "result", "error"],
              [[c.get("turn", "–"), c.get("call", "–"), c.get("name"), cut(c.get("arguments")),
                cut(c.get("result")), c.get("error") or ""] for c in ex["tool_calls"] if isinstance(c, dict)])


def overall_json(run_dirs) -> list[dict]:
    """The overall figures per run as JSON-able dicts (for ``spatialact report --json``)."""
    from ..diagnostics.summaries import run_diagnostics
    from ..questions.scoring import summarise

    runs = load_runs([Path(d) for d in run_dirs])
    calib = _calibration(runs)
    out = []
    for run in runs:
        rs = run.records
        s: Summary = bootstrap_ci(_num(_get(r, "score")) for r in rs)
        succ = bootstrap_ci(_get(r, "success") for r in rs if _get(r, "success") is not None)
        every = run.all_records
        out.append({"run": run.label, "dir": str(run.path), "episodes": len(rs),
                    "question_answers": sum(1 for r in every if r.get("record") == "question"),
                    "score": s.to_dict(), "success": succ.to_dict(),
                    # failed episodes and failed question answers (api_error, error): never scored
                    "errors": sum(1 for r in every if is_failure(r)),
                    "prompt_tokens": sum(_usage(r, "prompt_tokens") for r in every),
                    "completion_tokens": sum(_usage(r, "completion_tokens") for r in every),
                    "cost_usd": sum(_usage(r, "cost_usd") for r in every),
                    "diagnostics": run_diagnostics(every, calib), "questions": summarise(every) or None})
    return out
