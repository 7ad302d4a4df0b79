"""The report's game section: results per map (level) of the game's tasks and the rate of blocked steps.

Game tasks (``source: "game"``, docs/game.md) are tagged with the ``map`` they run in; their episode records carry
``blocked``, one flag per executed step, true where the level (a wall, the floor) stopped the step short of its
commanded motion (docs/results.md). Per run and map: episodes, success rate, mean score, and the blocked-step rate —
blocked steps over executed steps, summed over the map's episodes (an episode that executed nothing adds nothing).
Records of other worlds are left out. The same figures go into ``report --json`` (:func:`game_json`).

Below the table, a top view per run of its first game episodes (:func:`plot_game_paths`): the level's line
segments, read from the task's WAD by the one WAD reader (:func:`spatialact.envs.doom.wad.map_lines`; solid walls
black, two-sided lines grey), with the true path and the path walked in the game (world x–y, metres: x east, y
north; 1 map unit = 1/32 m). The level of an episode is its task's scene, found through the run's provenance (the
task file, when it is still there with the recorded SHA-256, or the built-in suite); an episode whose level cannot
be found is drawn without walls.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from .document import Document
from .load import RunData, as_float, record_poses, record_value
from .skill import blocked_steps, run_provenance

__all__ = ["game_map", "game_rows", "game_section", "game_json", "ALL_MAPS", "game_levels",
           "level_segments", "draw_level", "plot_game_paths", "N_GAME_VIEWS"]

#: The row of a run's game episodes on every map together.
ALL_MAPS = "all maps"
#: Game episodes drawn in top view per run.
N_GAME_VIEWS = 3
#: Metres of level shown around an episode's paths.
VIEW_MARGIN_M = 4.0
#: Metres per map unit (Doom's 1/32 m).
UNIT_M = 1.0 / 32.0


def game_map(r: dict) -> str | None:
    """The map a game episode ran in (its ``map`` tag), or None for a record of another world (the rooms of
    CameraNav record ``blocked`` too: they are not game levels)."""
    tags = r.get("tags") if isinstance(r.get("tags"), dict) else {}
    if r.get("source") != "game":
        return None
    m = tags.get("map")
    return str(m) if m is not None else "?"


def _summary(records: list[dict]) -> dict:
    succ = [bool(record_value(r, "success")) for r in records if record_value(r, "success") is not None]
    scores = [as_float(record_value(r, "score")) for r in records]
    scores = [s for s in scores if np.isfinite(s)]
    nb, ns = blocked_steps(records)
    return {"episodes": len(records), "success": float(np.mean(succ)) if succ else None,
            "n_success": int(sum(succ)), "score": float(np.mean(scores)) if scores else None,
            "blocked_steps": nb, "executed_steps": ns, "blocked_rate": nb / ns if ns else None}


def game_json(run: RunData) -> dict | None:
    """``{map: summary, ..., "all maps": summary}`` of a run's plain game episodes (None without any): each summary
    has ``episodes``, ``success`` (rate), ``n_success``, ``score`` (mean), ``blocked_steps``, ``executed_steps``
    and ``blocked_rate`` (blocked over executed steps; None when nothing was executed)."""
    by_map: dict[str, list[dict]] = {}
    for r in run.records:
        m = game_map(r)
        if m is not None:
            by_map.setdefault(m, []).append(r)
    if not by_map:
        return None
    out = {m: _summary(by_map[m]) for m in sorted(by_map)}
    out[ALL_MAPS] = _summary([r for m in sorted(by_map) for r in by_map[m]])
    return out


def _pct(v) -> str:
    return "–" if v is None else f"{100 * v:.0f}%"


def game_rows(runs: list[RunData]) -> tuple[list[str], list[list]]:
    """The "Per map" table: one row per run and map (then the run's maps together when it has several)."""
    headers = ["run", "map", "episodes", "success", "score (mean)", "blocked steps", "blocked-step rate"]
    rows = []
    for run in runs:
        per = game_json(run)
        if per is None:
            continue
        names = [m for m in per if m != ALL_MAPS] + ([ALL_MAPS] if len(per) > 2 else [])
        for m in names:
            s = per[m]
            score = "–" if s["score"] is None else f"{s['score']:.3f}"
            rows.append([run.label, m, s["episodes"], f"{s['n_success']}/{s['episodes']} ({_pct(s['success'])})",
                         score, f"{s['blocked_steps']}/{s['executed_steps']}", _pct(s["blocked_rate"])])
    return headers, rows


def game_section(doc: Document, runs: list[RunData], figdir: Path | None = None) -> None:
    """"Per map": the game episodes' results per level and their blocked-step rate, then each run's first game
    episodes in top view with the level's walls (figures under ``figdir``, default the report's ``figures/``;
    nothing without game episodes)."""
    headers, rows = game_rows(runs)
    if not rows:
        return
    doc.heading(2, "Per map (game levels)")
    doc.paragraph("Game tasks run in the level they were recorded in (docs/game.md). Blocked steps: executed steps the "
                  "level stopped short of their commanded motion (a wall, a ledge, a closed door, the floor under a "
                  "Pedestal Down), over every executed step of the map's episodes (the records' `blocked` flags).")
    doc.table(headers, rows)
    _top_views(doc, runs, Path(figdir) if figdir is not None else doc.out / "figures")


def _run_tasks(run: RunData) -> list:
    """The tasks a run ran: its built-in suite's, or its task file's when that file is still there with the SHA-256
    the run recorded ([] when neither can be read)."""
    prov = run_provenance(run)
    try:
        if prov.get("suite"):
            from ..taskgen import builtin_suite

            return list(builtin_suite(str(prov["suite"])))
        path = prov.get("task_file")
        if not path or not Path(path).is_file():
            return []
        from ..tasks import file_sha256, load_tasks

        if prov.get("task_file_sha256") and file_sha256(path) != prov["task_file_sha256"]:
            return []  # another file now: its levels may not be the run's
        return list(load_tasks(path))
    except Exception:  # an unreadable or unknown source: the episodes are drawn without walls
        return []


def game_levels(run: RunData) -> dict:
    """Task id → (WAD path, map name) of the run's game tasks whose level can be found (:func:`_run_tasks`; the WAD
    as its scene names it, with the scene's SHA-256)."""
    from ..envs.game_world import check_game_scene

    out, seen = {}, {}
    for t in _run_tasks(run):
        scene = t.scene if isinstance(t.scene, dict) else None
        if scene is None or scene.get("type") != "game":
            continue
        key = (str(scene.get("wad")), str(scene.get("wad_sha256")), str(scene.get("map")))
        if key not in seen:  # one check (a hash of the WAD) per level, not per task
            try:
                checked = check_game_scene(scene)
                seen[key] = (str(checked["wad_path"]), str(checked["map"]))
            except (ValueError, ImportError):
                seen[key] = None
        if seen[key] is not None:
            out[t.id] = seen[key]
    return out


@lru_cache(maxsize=8)
def level_segments(wad: str, level: str) -> tuple[np.ndarray, np.ndarray]:
    """A level's line segments in metres (M, 2, 2) (x east, y north) and which are solid walls (M,) bool, from
    :func:`spatialact.envs.doom.wad.map_lines`."""
    from ..envs.doom.wad import map_lines

    seg, one_sided, _ = map_lines(wad, level)
    return (np.asarray(seg, dtype=np.float64) * UNIT_M).reshape(-1, 2, 2), np.asarray(one_sided, dtype=bool)


def draw_level(ax, wad: str, level: str) -> None:
    """Draw a level's lines on a matplotlib axis in metres: solid walls black, two-sided lines (steps, windows,
    doors) light grey."""
    from matplotlib.collections import LineCollection

    seg, solid = level_segments(str(wad), str(level))
    ax.add_collection(LineCollection(seg[~solid], colors="0.75", linewidths=0.7, zorder=1))
    ax.add_collection(LineCollection(seg[solid], colors="black", linewidths=1.2, zorder=1))


def plot_game_paths(run: RunData, episodes: list[dict], levels: dict, path: Path) -> Path | None:
    """Top views of game ``episodes`` (one panel each): the level's lines (``levels``: task id → (WAD, map), see
    :func:`game_levels`; an episode without one is drawn without walls), the true path (green) and the path walked
    in the game (red), world x–y in metres, cropped to the paths ± :data:`VIEW_MARGIN_M`. None when no episode
    has poses."""
    eps = [r for r in episodes if record_poses(r, "gt_poses") is not None or record_poses(r, "pred_poses") is not None]
    if not eps:
        return None
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(eps), figsize=(3.6 * len(eps), 3.4), squeeze=False)
    for ax, r in zip(axes[0], eps):
        g, p = record_poses(r, "gt_poses"), record_poses(r, "pred_poses")
        xy = np.concatenate([q[:, :2, 3] for q in (g, p) if q is not None])
        level = levels.get(r.get("task_id"))
        if level is not None:
            draw_level(ax, *level)
        for poses, style, lab in ((g, "g-o", "true"), (p, "r--x", "in the game")):
            if poses is not None:
                ax.plot(poses[:, 0, 3], poses[:, 1, 3], style, ms=3, lw=1.2, label=lab, zorder=2)
        start = (g if g is not None else p)[0, :2, 3]
        ax.plot(*start, "ks", ms=5, label="start", zorder=3)
        lo, hi = xy.min(0) - VIEW_MARGIN_M, xy.max(0) + VIEW_MARGIN_M
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_aspect("equal")
        where = f"{level[1]}" if level is not None else "level not found: no walls"
        ax.set_title(f"{str(r.get('task_id'))[:28]}\n{where}", fontsize=8)
        ax.set_xlabel("x (m, east)", fontsize=7)
        ax.set_ylabel("y (m, north)", fontsize=7)
        ax.tick_params(labelsize=6)
    axes[0][0].legend(fontsize=6, loc="best")
    fig.suptitle(f"{run.label}: game episodes in top view", fontsize=9, y=1.04)
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path


def _top_views(doc: Document, runs: list[RunData], figdir: Path) -> None:
    for i, run in enumerate(runs):
        eps = [r for r in run.records if game_map(r) is not None][:N_GAME_VIEWS]
        if not eps:
            continue
        figdir.mkdir(parents=True, exist_ok=True)
        doc.image(plot_game_paths(run, eps, game_levels(run), figdir / f"game_top_{i}.png"),
                  f"{run.label}: game episodes in top view, with the level's walls")
