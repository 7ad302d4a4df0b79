"""The report's "Paired comparison": runs that answered the same episodes, compared episode by episode.

Two runs share an episode when their records have the same pairing key (:func:`.skill.pair_key`: the suite's
SHA-256 — else the task file's, else the task source the run names —, task id, variant, mode and profile); the
plain episodes are paired (the mirrored ones of ``eval --flip`` are compared in the Diagnostics section), an episode
run several times (``eval --repeats K``) counts once with its figures averaged over its repeats. For every pair of
runs (A listed before B) and every group — all shared episodes, each track of a suite, each kind — the table gives
the number of shared episodes and A − B of skill (:func:`spatialact.scorers.paired_difference` with s0: the paired
bootstrap 95% interval and the Wilcoxon signed-rank p-value of the per-episode score differences) and, for
closed-loop episodes, of success. The p-values of the whole table are one family, Holm-corrected together
(:func:`spatialact.scorers.holm`). A cell over fewer than :data:`~.skill.MIN_PAIRED` shared episodes is marked:
its interval and p-value are rough.
"""

from __future__ import annotations

import math

from ..scorers import holm, paired_difference
from .document import Document
from .load import RunData
from .skill import MIN_PAIRED, episode_values, has_track, pair_key, run_config, run_provenance, track_of

__all__ = ["paired_rows", "paired_section", "paired_json", "FEW_MARK"]

#: The mark of a cell over fewer than MIN_PAIRED shared episodes.
FEW_MARK = "†"


def _episodes(run: RunData) -> dict:
    """Pairing key → (episode values, track, kind) of the run's plain episodes (repeats averaged)."""
    cfg, prov = run_config(run), run_provenance(run)
    vals = episode_values(run.records, key=lambda r: pair_key(r, r.get("provenance") or prov, cfg))
    info = {pair_key(r, r.get("provenance") or prov, cfg): (track_of(r), str(r.get("kind"))) for r in run.records}
    return {k: (v, *info[k]) for k, v in vals.items()}


def _groups(a: dict, keys: list, tracks: bool) -> list[tuple[str, list]]:
    """("all", every key), then per track (when the records have tracks of their own), then per kind."""
    out = [("all", keys)]
    if tracks:
        for t in sorted({a[k][1] for k in keys}):
            out.append((f"track {t}", [k for k in keys if a[k][1] == t]))
    for kind in sorted({a[k][2] for k in keys}):
        out.append((f"kind {kind}", [k for k in keys if a[k][2] == kind]))
    return out


def paired_json(runs: list[RunData], n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """Every (run A, run B, group) with shared episodes: ``a``, ``b`` (labels), ``group``, ``n``, ``mode``
    (``closed-loop`` when every shared episode is, else ``one-shot`` or ``mixed``), ``skill`` ({diff, lo, hi, n,
    p, p_holm}) and, for closed-loop groups, ``success`` (the same); ``few``: n < MIN_PAIRED. The p-values are
    Holm-corrected over the whole list."""
    eps = [_episodes(run) for run in runs]
    tracks = any(has_track(r) for run in runs for r in run.records)
    out = []
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            a, b = eps[i], eps[j]
            shared = sorted((k for k in a if k in b), key=lambda k: tuple(str(x) for x in k))
            if not shared:
                continue
            for name, keys in _groups(a, shared, tracks):
                va, vb = [a[k][0] for k in keys], [b[k][0] for k in keys]
                modes = {k[3] for k in keys}
                mode = modes.pop() if len(modes) == 1 else "mixed"
                row = {"a": runs[i].label, "b": runs[j].label, "group": name, "n": len(keys), "mode": mode,
                       "skill": paired_difference([v["score"] for v in va], [v["score"] for v in vb],
                                                  [v["s0"] for v in va], [v["s0"] for v in vb], n_boot, seed)}
                if mode == "closed-loop":
                    row["success"] = paired_difference([v["success"] for v in va], [v["success"] for v in vb],
                                                       n_boot=n_boot, seed=seed)
                row["few"] = row["skill"]["n"] < MIN_PAIRED
                out.append(row)
    cells = [row[m] for row in out for m in ("skill", "success") if m in row]
    for cell, p in zip(cells, holm([c["p"] for c in cells])):
        cell["p_holm"] = p
    return out


def _diff(d: dict | None) -> str:
    if not d or not math.isfinite(d.get("diff", math.nan)):
        return "–"
    ci = f" [{d['lo']:+.3f}, {d['hi']:+.3f}]" if d.get("n", 0) > 1 and math.isfinite(d["lo"]) else ""
    return f"{d['diff']:+.3f}{ci}"


def _p(v) -> str:
    return "–" if v is None or not math.isfinite(v) else ("<0.001" if v < 0.001 else f"{v:.3f}")


def paired_rows(pairs: list[dict]) -> tuple[list[str], list[list]]:
    """The table of :func:`paired_json`'s rows (the success columns only when some group is closed-loop)."""
    closed = any("success" in r for r in pairs)
    headers = ["A − B", "group", "shared episodes", "Δ skill [95% CI]", "p", "p (Holm)"]
    headers += ["Δ success [95% CI]", "p (success)", "p (success, Holm)"] if closed else []
    rows = []
    for r in pairs:
        s, c = r["skill"], r.get("success")
        row = [f"{r['a']} − {r['b']}", r["group"], f"{r['n']}{' ' + FEW_MARK if r['few'] else ''}",
               _diff(s), _p(s["p"]), _p(s.get("p_holm"))]
        if closed:
            row += [_diff(c), _p(c["p"]), _p(c.get("p_holm"))] if c else ["–", "–", "–"]
        rows.append(row)
    return headers, rows


def paired_section(doc: Document, runs: list[RunData]) -> list[dict]:
    """"Paired comparison" when two or more runs share episodes (nothing otherwise); returns the rows."""
    pairs = paired_json(runs) if len(runs) > 1 else []
    if not pairs:
        return pairs
    doc.heading(2, "Paired comparison")
    doc.paragraph("Runs compared on the episodes they share (the same suite or task file, task, variant, mode and "
                  "profile), episode by episode: A − B of skill (and of success, closed loop), with the paired "
                  "bootstrap 95% interval and the two-sided Wilcoxon signed-rank p-value of the per-episode score "
                  "(success) differences; p (Holm): adjusted over every p-value of this table (Holm–Bonferroni). "
                  "An episode run several times counts once, averaged over its repeats.")
    doc.table(*paired_rows(pairs))
    if any(r["few"] for r in pairs):
        doc.paragraph(f"{FEW_MARK} fewer than {MIN_PAIRED} shared episodes: the interval and the p-value are rough "
                      f"(a Wilcoxon test on so few pairs can hardly reach significance).")
    return pairs
