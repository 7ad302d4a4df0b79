"""Reports (SPEC §8): Markdown and a self-contained HTML page for one or more run directories.

``make_report(run_dirs, out_dir)`` writes ``report.md`` (figures and frames as files next to it) and
``report.html`` (the same content with every image inlined as a base64 data URL: no external assets). Tables:
overall (several runs side by side), per kind and per tag, each mean with its bootstrap 95% interval
(:mod:`.stats`); plots (matplotlib, Agg): score distributions per run, final position error against start–goal
distance (symmetric-log axes, with a note, when an outlier would squash the rest: :func:`error_distance_layout`),
predicted against true paths in top view (world x–y, metres, from ``pred_poses`` and ``gt_poses``);
start / goal / final frames of example episodes (best, median and worst score of each run); token and cost totals.

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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .results import read_config, read_records, safe_name
from .stats import Summary, bootstrap_ci

__all__ = ["make_report", "load_runs", "RunData", "error_distance_layout", "tool_use_section"]

MAX_RESPONSE_CHARS = 2000
N_PATH_EXAMPLES = 4


@dataclass
class RunData:
    path: Path
    label: str
    config: dict
    records: list[dict] = field(default_factory=list)

    @property
    def agent(self) -> str:
        return str(self.records[0].get("agent")) if self.records else "?"

    @property
    def model(self):
        return self.records[0].get("model") if self.records else None


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
        runs.append(RunData(p, "", cfg, recs))
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


def _by_kind(r: dict) -> list[str]:
    return [str(r.get("kind"))]


def _by_tag(r: dict) -> list[str]:
    tags = r.get("tags") or {}
    if not isinstance(tags, dict):
        return []
    return [f"{k}={v}" for k, v in sorted(tags.items())]


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
    fig, axes = plt.subplots(1, n, figsize=(3.0 * n, 3.0), squeeze=False)
    for ax, r in zip(axes[0], eps):
        g, p = _poses(r, "gt_poses"), _poses(r, "pred_poses")
        for poses, style, lab in ((g, "g-o", "true"), (p, "r--x", "predicted")):
            if poses is not None:
                ax.plot(poses[:, 0, 3], poses[:, 1, 3], style, ms=4, lw=1.2, label=lab)
                # the camera's forward (+Z) axis, projected on the ground plane
                f = poses[-1, :3, 2]
                ax.arrow(poses[-1, 0, 3], poses[-1, 1, 3], 0.1 * f[0], 0.1 * f[1], color=style[0], width=0.004)
        start = g if g is not None else p
        ax.plot(start[0, 0, 3], start[0, 1, 3], "ks", ms=6, label="start")
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_title(f"{str(r.get('task_id'))[:28]}\nscore {_num(_get(r, 'score')):.2f}", fontsize=8)
        ax.set_xlabel("world x (m)", fontsize=7)
        ax.set_ylabel("world y (m)", fontsize=7)
        ax.tick_params(labelsize=6)
    axes[0][0].legend(fontsize=6)
    fig.suptitle(f"{run.label}: paths in top view (world x–y)", fontsize=9, y=1.08)
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
    run_rows = []
    for run in runs:
        prov = (run.records[0].get("provenance") if run.records else None) or {}
        cfg = run.config.get("config", run.config) if isinstance(run.config, dict) else {}
        modes = sorted({str(r.get("mode")) for r in run.records})
        run_rows.append([run.label, str(run.path), ", ".join(modes) or str(cfg.get("mode", "–")), len(run.records),
                         prov.get("spatialact_version", "–"), (prov.get("git_commit") or "–")[:12],
                         (prov.get("task_file_sha256") or "–")[:12]])
    table(["run", "directory", "mode", "episodes", "version", "commit", "task file sha256"], run_rows)
    tool_use_section(runs, heading, para, table)

    heading(2, "Overall")
    table(*_overall_rows(runs))
    heading(2, "Per kind")
    table(*_group_table(runs, _by_kind))
    if any(_by_source(r) != ["None"] for run in runs for r in run.records):
        heading(2, "Per source")
        table(*_group_table(runs, _by_source))
    if any(_by_tag(r) for run in runs for r in run.records):
        heading(2, "Per tag")
        table(*_group_table(runs, _by_tag))

    api = [run for run in runs if any(_usage(r, "prompt_tokens") or _usage(r, "completion_tokens")
                                      for r in run.records)]
    if api:
        heading(2, "API usage")
        rows = []
        for run in api:
            rs = run.records
            pt = sum(_usage(r, "prompt_tokens") for r in rs)
            ct = sum(_usage(r, "completion_tokens") for r in rs)
            cost = sum(_usage(r, "cost_usd") for r in rs)
            cached = sum(1 for r in rs if isinstance(r.get("usage"), dict) and r["usage"].get("cached"))
            lat = [_num(r.get("latency_s")) for r in rs]
            lat = [v for v in lat if math.isfinite(v)]
            rows.append([run.label, run.model or "–", f"{pt:,.0f}", f"{ct:,.0f}", f"{cost:.4f}",
                         f"{cost / max(1, len(rs)):.5f}", cached, f"{np.mean(lat):.2f}" if lat else "–"])
        table(["run", "model", "prompt tokens", "completion tokens", "cost (USD)", "cost / episode", "cache hits",
               "mean latency (s)"], rows)

    heading(2, "Plots")
    image(_plot_scores(runs, figdir / "scores.png"), "score distribution per run")
    ed_path, ed_note = _plot_error_distance(runs, figdir / "error_vs_distance.png")
    image(ed_path, "final position error against distance")
    if ed_note:
        para(f"Error against distance: {ed_note}.")
    for i, run in enumerate(runs):
        eps = [r for _, r in _examples(run, 3)]
        extra = [r for r in run.records if r not in eps][: max(0, N_PATH_EXAMPLES - len(eps))]
        image(_plot_paths(run, eps + extra, figdir / f"paths_{i}.png"), f"{run.label}: predicted and true paths")

    heading(2, "Example episodes")
    for i, run in enumerate(runs):
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
        calls = [c for r in rs for c in (r.get("tool_calls") or []) if isinstance(c, dict)]
        by_name: dict[str, int] = {}
        for c in calls:
            by_name[str(c.get("name"))] = by_name.get(str(c.get("name")), 0) + 1
        sets = sorted({str(r.get("tools")) for r in rs})
        rows.append([run.label, ", ".join(sets),
                     len(rs), len(calls), f"{len(calls) / max(1, len(rs)):.2f}",
                     sum(1 for c in calls if c.get("malformed")),
                     sum(1 for c in calls if c.get("error") and not c.get("malformed")),
                     ", ".join(f"{k} {v}" for k, v in sorted(by_name.items())) or "–"])
    table(["run", "tool set", "episodes", "tool calls", "calls / episode", "malformed", "failed", "calls per tool"],
          rows)

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
    runs = load_runs([Path(d) for d in run_dirs])
    out = []
    for run in runs:
        rs = run.records
        s: Summary = bootstrap_ci(_num(_get(r, "score")) for r in rs)
        succ = bootstrap_ci(_get(r, "success") for r in rs if _get(r, "success") is not None)
        out.append({"run": run.label, "dir": str(run.path), "episodes": len(rs), "score": s.to_dict(),
                    "success": succ.to_dict(), "errors": sum(1 for r in rs if r.get("error")),
                    "prompt_tokens": sum(_usage(r, "prompt_tokens") for r in rs),
                    "completion_tokens": sum(_usage(r, "completion_tokens") for r in rs),
                    "cost_usd": sum(_usage(r, "cost_usd") for r in rs)})
    return out
