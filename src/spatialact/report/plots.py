"""Every figure of the report, drawn with matplotlib (Agg backend, imported only when a figure is drawn) and saved
as a PNG (90 dpi) at the path given; each function returns that path, or None when it has nothing to draw.

Figures: score distributions per run (:func:`plot_scores`), final position error against start–goal distance
(:func:`plot_error_distance`, with symmetric-log axes when an outlier would squash the rest:
:func:`error_distance_layout`), predicted against true paths in top view (:func:`plot_paths`: world x–y in metres
from C2W (4, 4) poses, world +Z up), and the diagnostics: FlipEval (:func:`plot_flip`), viewpoint robustness
(:func:`plot_viewpoints`), the difficulty ladder (:func:`plot_ladder`) and prediction bias (:func:`plot_bias`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..action_space import AXES, MOTION_PRIMITIVES
from ..diagnostics.metrics import SIGN_LABELS
from ..vocab import KINDS, LEVELS
from .load import RunData, as_float, record_poses, record_value, start_goal_distance
from .tables import fmt_value

__all__ = ["plot_scores", "plot_error_distance", "error_distance_layout", "plot_paths", "plot_flip", "plot_ladder",
           "plot_viewpoints", "plot_bias", "SPREAD_FOR_LOG", "DECADES_FOR_LOG", "LOG_LINEAR_BELOW_M"]


# The 12 primitives' names shortened for the bias plot's axis.
_SHORT_NAMES = {"Dolly In": "DollyIn", "Dolly Out": "DollyOut", "Truck Right": "TruckR", "Truck Left": "TruckL",
                "Pedestal Down": "PedDown", "Pedestal Up": "PedUp", "Pan Right": "PanR", "Pan Left": "PanL",
                "Tilt Up": "TiltUp", "Tilt Down": "TiltDown", "Roll CCW": "RollCCW", "Roll CW": "RollCW"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=90, bbox_inches="tight")
    _pyplot().close(fig)
    return path


def plot_scores(runs: list[RunData], path: Path) -> Path | None:
    """Each run's episode scores: a violin with the points jittered over it."""
    data = [[v for v in (as_float(record_value(r, "score")) for r in run.records) if math.isfinite(v)]
            for run in runs]
    if not any(data):
        return None
    plt = _pyplot()
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


def plot_error_distance(runs: list[RunData], path: Path) -> tuple[Path | None, str | None]:
    """The scatter plot and its note (None on linear axes); (None, None) when no record has both values."""
    per_run = []
    for run in runs:
        pts = [(start_goal_distance(r), as_float(record_value(r, "final_position_error"))) for r in run.records]
        pts = [(a, b) for a, b in pts if math.isfinite(a) and math.isfinite(b)]
        if pts:
            per_run.append((run.label, np.asarray(pts, dtype=np.float64)))
    if not per_run:
        return None, None
    allp = np.concatenate([p for _, p in per_run])
    lay = error_distance_layout(allp[:, 0], allp[:, 1])
    plt = _pyplot()
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


def plot_paths(run: RunData, episodes: list[dict], path: Path) -> Path | None:
    """Predicted against true camera paths of ``episodes`` in top view (world x–y, metres), one panel each, with
    the final forward (+Z) axis as an arrow; episodes without poses are left out."""
    eps = [r for r in episodes
           if record_poses(r, "gt_poses") is not None or record_poses(r, "pred_poses") is not None]
    if not eps:
        return None
    plt = _pyplot()
    n = len(eps)
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, n, figsize=(3.3 * n, 3.2), squeeze=False)
    for ax, r in zip(axes[0], eps):
        g, p = record_poses(r, "gt_poses"), record_poses(r, "pred_poses")
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
        ax.set_title(f"{str(r.get('task_id'))[:28]}\nscore {as_float(record_value(r, 'score')):.2f}", fontsize=8)
        ax.set_xlabel("world x (m)", fontsize=7)
        ax.set_ylabel("world y (m)", fontsize=7)
        ax.tick_params(labelsize=6)
    axes[0][0].legend(fontsize=6)
    fig.suptitle(f"{run.label}: paths in top view (world x–y)", fontsize=9, y=1.08)
    fig.tight_layout(w_pad=2.0)
    return _save(fig, path)


def plot_flip(flips: list, path: Path) -> Path | None:
    """Plain, mirrored and paired scores and the mirror inconsistency per run (bars with 95% intervals)."""
    plt = _pyplot()
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


def plot_ladder(entries: list, path: Path) -> Path | None:
    """Score per difficulty level (with 95% intervals), one panel per kind, one line per run."""
    kinds = [k for k in KINDS if any(k in lad for _, lad in entries)]
    if not kinds:
        return None
    plt = _pyplot()
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


def plot_viewpoints(entries: list, path: Path) -> Path | None:
    """S_common against S_uncommon per run and kind (bars with 95% intervals), δ written above each pair."""
    rows = [(run, kind, v) for run, vp in entries for kind, v in vp.items() if kind != "all"]
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(rows) + 2.5), 3.3))
    for j, (name, col) in enumerate((("common", "#2b6cb0"), ("uncommon", "#dd6b20"))):
        xs = [i + (j - 0.5) * 0.38 for i in range(len(rows))]
        ys = [v[name]["mean"] or 0.0 for _, _, v in rows]
        lo = [y - (v[name]["ci_low"] if v[name]["ci_low"] is not None else y) for y, (_, _, v) in zip(ys, rows)]
        hi = [(v[name]["ci_high"] if v[name]["ci_high"] is not None else y) - y for y, (_, _, v) in zip(ys, rows)]
        ax.bar(xs, ys, 0.38, color=col, label=f"{name} viewpoint", yerr=[lo, hi], capsize=2, error_kw={"lw": 0.8})
    for i, (_, _, v) in enumerate(rows):
        top = max(v["common"]["ci_high"] or 0.0, v["uncommon"]["ci_high"] or 0.0)
        ax.text(i, min(1.0, top + 0.04), f"δ {fmt_value(v['delta'], 2, signed=True)}", ha="center", fontsize=7)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([f"{run.label}\n{kind}" for run, kind, _ in rows], fontsize=7)
    ax.set_ylim(0, 1.12)
    ax.set_ylabel("mean episode score")
    ax.set_title("Viewpoint robustness: the same tasks from common and uncommon viewpoints")
    ax.legend(fontsize=7, loc="upper right")
    return _save(fig, path)


def plot_bias(label: str, bias: dict, path: Path) -> Path | None:
    """Predicted against true label counts (12 primitives), and the −/0/+ confusion matrix of each motion axis
    (rows: true sign, columns: predicted sign; colour = share of the row, numbers = counts)."""
    plt = _pyplot()
    fig = plt.figure(figsize=(12.5, 4.4))
    gs = fig.add_gridspec(2, 6, height_ratios=[1.0, 1.3], hspace=0.45, wspace=0.45)
    ax = fig.add_subplot(gs[0, :])
    x = np.arange(12)
    ax.bar(x - 0.2, bias["gt_counts"], 0.4, color="#999999", label="ground truth")
    ax.bar(x + 0.2, bias["pred_counts"], 0.4, color="#2b6cb0", label="predicted")
    ax.set_xticks(x)
    ax.set_xticklabels([_SHORT_NAMES[p.value] for p in MOTION_PRIMITIVES], fontsize=7)
    ax.set_ylabel("steps with the label", fontsize=8)
    ax.set_title(f"{label}: label counts (CV {fmt_value(bias['label_cv'], 2)}, "
                 f"truth {fmt_value(bias['label_cv_gt'], 2)}, "
                 f"normalised {fmt_value(bias['label_cv_normalised'], 2)}; L/R bias "
                 f"{fmt_value(bias['bias_pred'], 2, True)}, truth {fmt_value(bias['bias_gt'], 2, True)})", fontsize=9)
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


