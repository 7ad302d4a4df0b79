"""Score a JSONL of model answers against a JSONL of tasks, offline (SPEC §4, §8).

ANSWERS: one JSON object per line, {"task_id": ..., "response": "<the model's raw answer text>"}. lmms-eval
sample logs (--log_samples) are read too: a line with "doc_id" and "filtered_resps" / "resps" is matched to a
task by its doc's "task_id" / "id", by the "spatialact.task_id" inside its "hint", or else by doc_id as the
0-based line index into TASKS; with --profile lmms-eval, a sample whose doc carries its own "hint" is scored
with that hint (lmms-eval's extra_info), otherwise with the task exported by to_lmms_extra_info.

TASKS: a task file as written by `spatialact tasks` (validated on load).

Writes one JSON line per answer line (default: next to ANSWERS, <answers>.scores.jsonl) and prints a summary:
overall mean with a bootstrap 95% interval (1000 resamples, seed 0), per kind, per source, and the counts of
answers that did not parse, lines that were not JSON, unknown task ids and tasks with no answer. A bad line is
scored 0 with its reason (invalid_json, invalid_line, unknown_task, parse_error, lmms_error), never a crash;
such lines count in the overall mean (under kind/source "unknown" when no task matched). Tasks with no answer
are only counted, unless --missing-as-zero.

Large files are read in chunks (--chunk answers at a time), so memory stays bounded whatever the file size;
--workers N parses the answers in N processes (parsing is the slow part: ~0.5 ms per 10-step answer).

Examples:
  spatialact score answers.jsonl tasks.jsonl
  spatialact score answers.jsonl tasks.jsonl --profile paper+rot --weights 0.5,0.3,0.2 --json
  spatialact score samples_spatialtreebench.jsonl tasks.jsonl --profile lmms-eval --out scores.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

PROFILES = ("paper", "paper+rot", "lmms-eval")
CHUNK = 20000  # answer lines per chunk: bounds memory whatever the file size


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("answers", metavar="ANSWERS", help="answers JSONL ({task_id, response} or lmms-eval samples)")
    p.add_argument("tasks", metavar="TASKS", help="task file (JSONL)")
    p.add_argument("--profile", choices=PROFILES, default="paper",
                   help="paper (default): the paper's step score; paper+rot: navigation adds rotation; "
                        "lmms-eval: lmms-eval's spatialtreebench score")
    p.add_argument("--weights", metavar="WT,WR,WG",
                   help="manipulation/hand weights of translation, rotation, gripper (default equal thirds)")
    p.add_argument("--out", metavar="FILE", help="per-answer scores JSONL (default <answers>.scores.jsonl)")
    p.add_argument("--tree", metavar="FILE", help="hierarchy JSON in lmms-eval's layout (default: SpatialTree L4)")
    p.add_argument("--per-step", action="store_true", help="also write per-step scores (slower)")
    p.add_argument("--missing-as-zero", action="store_true",
                   help="count tasks without an answer as 0 in the summary (default: only report them)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--chunk", type=int, default=CHUNK, help=f"answer lines per chunk (default {CHUNK})")
    p.add_argument("--workers", type=int, default=1,
                   help="processes that parse answers in parallel (default 1: no extra processes)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def default_out(answers: str) -> Path:
    a = Path(answers)
    stem = a.name[:-len(a.suffix)] if a.suffix in (".jsonl", ".json", ".txt") else a.name
    return a.with_name(stem + ".scores.jsonl")


# ------------------------------------------------------------------------------------------------------------
# Reading answer lines
# ------------------------------------------------------------------------------------------------------------
def _first_text(x):
    """lmms-eval's resps / filtered_resps: a string, or lists of them (one per request / per filter)."""
    depth = 0
    while isinstance(x, list) and x and depth < 4:
        x = x[0]
        depth += 1
    return x if isinstance(x, str) else None


def _maybe_json(x):
    if isinstance(x, str):
        try:
            return json.loads(x)
        except ValueError:
            return None
    return x if isinstance(x, dict) else None


class _Tasks:
    """The task file in compact arrays: ground-truth motions per task, kinds, sizes, labels."""

    def __init__(self, tasks):
        import numpy as np

        from spatialact.scorers import KIND_CODES, leaf_of, sequence_arrays

        self.tasks = tasks
        self.index = {t.id: i for i, t in enumerate(tasks)}
        arrs = [sequence_arrays(t.gt.with_sizes(t.gt.sizes)) for t in tasks]
        self.lengths = np.array([len(m) for m, _ in arrs], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)
        self.motions = np.concatenate([m for m, _ in arrs]) if arrs else np.zeros((0, 6))
        self.grippers = np.concatenate([g for _, g in arrs]) if arrs else np.zeros(0, dtype=np.int64)
        self.kind_code = np.array([KIND_CODES[t.kind] for t in tasks], dtype=np.int64)
        self.unit_t = np.array([t.gt.sizes.translation for t in tasks], dtype=np.float64)
        self.leaf = [leaf_of({"kind": t.kind, "tags": t.tags}) for t in tasks]
        self._lmms: dict = {}

    def gt_rows(self, idx):
        import numpy as np

        idx = np.asarray(idx, dtype=np.int64)
        L = self.lengths[idx]
        start = np.repeat(self.offsets[idx], L)
        within = np.arange(L.sum()) - np.repeat(np.cumsum(L) - L, L)
        rows = start + within
        return self.motions[rows], self.grippers[rows], L

    def lmms_info(self, i):
        from spatialact.scorers import to_lmms_extra_info

        if i not in self._lmms:
            self._lmms[i] = to_lmms_extra_info(self.tasks[i])
        return self._lmms[i]


def _read_line(raw: bytes, tasks: _Tasks) -> dict:
    """One answer line → {"task_id", "task" (index or None), "response", "reason", "error", "hint", "kind"}."""
    item = {"task_id": None, "task": None, "response": None, "reason": None, "error": None, "hint": None,
            "lmms_kind": None}
    try:
        rec = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        item.update(reason="invalid_json", error=f"not JSON: {str(e)[:120]}")
        return item
    if not isinstance(rec, dict):
        item.update(reason="invalid_line", error=f"expected a JSON object, got {type(rec).__name__}")
        return item
    tid = rec.get("task_id")
    if "response" in rec:
        item["response"] = rec["response"]
    elif "doc_id" in rec and ("filtered_resps" in rec or "resps" in rec):
        # lmms-eval sample log line
        text = _first_text(rec.get("filtered_resps"))
        if text is None:
            text = _first_text(rec.get("resps"))
        item["response"] = text
        doc = rec.get("doc") if isinstance(rec.get("doc"), dict) else {}
        hint = _maybe_json(doc.get("hint"))
        if isinstance(hint, dict) and "optimal_rel_pose" in hint:
            item["hint"] = hint
        meta = _maybe_json(doc.get("extra_info")) or {}
        if isinstance(meta, dict):
            item["lmms_kind"] = {"agenticnaveval": "nav", "manipulateeval": "manip"}.get(meta.get("metricfunc"))
        sp = (hint or {}).get("spatialact") if isinstance(hint, dict) else None
        for cand in (tid, doc.get("task_id"), doc.get("id"), (sp or {}).get("task_id") if isinstance(sp, dict) else None):
            if isinstance(cand, (str, int)) and str(cand) in tasks.index:
                tid = str(cand)
                break
        else:
            d = rec.get("doc_id")
            if tid is None and isinstance(d, int) and not isinstance(d, bool) and 0 <= d < len(tasks.tasks):
                tid = tasks.tasks[d].id  # lmms-eval's doc_id is the record's index in the split
    else:
        item.update(reason="invalid_line", error="no 'response' field (nor lmms-eval 'doc_id' + 'resps')",
                    task_id=str(tid) if tid is not None else None)
        return item
    if tid is None:
        item.update(reason="invalid_line", error="no 'task_id' field")
        return item
    item["task_id"] = str(tid)
    i = tasks.index.get(str(tid))
    if i is None:
        item.update(reason="unknown_task", error=f"task id {str(tid)[:80]!r} is not in the task file")
        return item
    item["task"] = i
    return item


# ------------------------------------------------------------------------------------------------------------
# Scoring one chunk
# ------------------------------------------------------------------------------------------------------------
def _parse_payload(payload: list) -> list:
    """Parse answers (lenient, with each task's sizes and cap) into compact arrays. Runs in worker processes
    with --workers > 1, so it takes and returns only plain, picklable values."""
    from spatialact.action_space import StepSizes, parse_response
    from spatialact.scorers import sequence_arrays

    out = []
    for response, t_size, r_size, cap in payload:
        pr = parse_response(response, strict=False, sizes=StepSizes(t_size, r_size), cap=cap)
        m, g = sequence_arrays(pr.sequence)
        out.append((pr.ok, list(pr.repairs), pr.format, pr.error, m, g))
    return out


def _payload(items: list, tasks: _Tasks) -> list:
    pl = []
    for it in items:
        if it["task"] is not None:
            t = tasks.tasks[it["task"]]
            pl.append((it["response"], t.sizes.translation, t.sizes.rotation, t.gt.cap))
    return pl


def _score_chunk(items: list, parsed: list, tasks: _Tasks, profile: str, weights, per_step: bool) -> list:
    """Score one chunk of answer lines, given their parses (:func:`_parse_payload`, in line order)."""
    import numpy as np

    from spatialact.scorers import score_answer, score_episodes_batch, score_lmms_eval
    from spatialact.scorers.lmms_eval import INVALID_RESPONSE

    ok_idx, pm, pg, pl = [], [], [], []
    it_parsed = iter(parsed)
    for n, it in enumerate(items):
        if it["task"] is None:
            continue
        t = tasks.tasks[it["task"]]
        ok, repairs, fmt, error, m, g = next(it_parsed)
        it["ok"], it["repairs"], it["format"] = ok, repairs, fmt
        if not ok:
            it.update(reason="parse_error", error=error)
        ok_idx.append(n)
        pm.append(m)
        pg.append(g)
        pl.append(len(m))
        if profile == "lmms-eval":
            kind = it["lmms_kind"] or ("nav" if t.kind == "nav" else "manip")
            info = it["hint"] if it["hint"] is not None else tasks.lmms_info(it["task"])
            r = score_lmms_eval(it["response"], info, kind=kind)
            it["lmms"] = r
            err = r.get("error")
            it["ok"] = err is None
            it["reason"] = None if err is None else ("parse_error" if err == INVALID_RESPONSE else "lmms_error")
            it["error"] = err
        if per_step:
            it["per_step"] = score_answer(it["response"], t, "paper" if profile == "lmms-eval" else profile,
                                          weights)["per_step"]
    if ok_idx:
        tidx = np.array([items[n]["task"] for n in ok_idx], dtype=np.int64)
        gm, gg, gl = tasks.gt_rows(tidx)
        out = score_episodes_batch(np.concatenate(pm), np.concatenate(pg), pl, gm, gg, gl, tasks.kind_code[tidx],
                                   tasks.unit_t[tidx], profile="paper" if profile == "lmms-eval" else profile,
                                   weights=weights)
        for j, n in enumerate(ok_idx):
            it = items[n]
            ep = {k: float(out[k][j]) for k in ("total", "s_d", "s_theta", "s_step", "s_rot", "s_grip",
                                                 "net_translation_error", "net_rotation_error")}
            if ep["s_grip"] != ep["s_grip"]:  # NaN: navigation carries no gripper score
                ep["s_grip"] = None
            ep.update(n_pred=int(out["n_pred"][j]), n_gt=int(out["n_gt"][j]), n_flagged=int(out["n_flagged"][j]))
            it["episode"] = ep
            if profile == "lmms-eval":
                it["score"] = float(it["lmms"].get("score", 0.0))
            else:
                it["score"] = ep["total"] if it["ok"] else 0.0
    return items


def _finite_json(x):
    """NaN / ±inf → None (recursively), so every output line is strict JSON whatever an answer produced."""
    if isinstance(x, float):
        return x if x == x and x not in (float("inf"), float("-inf")) else None
    if isinstance(x, dict):
        return {k: _finite_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite_json(v) for v in x]
    return x


def _out_record(lineno: int, it: dict, tasks: _Tasks, profile: str, weights) -> dict:
    t = tasks.tasks[it["task"]] if it["task"] is not None else None
    rec = {"line": lineno, "task_id": it["task_id"], "kind": t.kind if t else None, "source": t.source if t else None,
           "tags": dict(t.tags) if t else {}, "profile": profile, "score": float(it.get("score", 0.0)),
           "ok": bool(it.get("ok", False)), "reason": it["reason"], "error": it["error"],
           "n_repairs": len(it.get("repairs", [])), "repairs": it.get("repairs", []), "format": it.get("format"),
           "weights": list(weights)}
    rec.update(_finite_json(it.get("episode") or {}))
    if "lmms" in it:
        rec["lmms"] = _finite_json(it["lmms"])
    if rec["score"] != rec["score"]:
        rec["score"] = 0.0
    if "per_step" in it:
        rec["per_step"] = it["per_step"]
    return rec


# ------------------------------------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> int:
    import array

    import numpy as np

    from spatialact.scorers import aggregate_arrays, hierarchical_scores, load_tree, normalise_weights, parse_weights
    from spatialact.tasks import load_tasks

    from .table import format_table

    answers = Path(args.answers)
    if not answers.is_file():
        raise FileNotFoundError(f"{answers}: no such answers file")
    weights = parse_weights(args.weights) if args.weights else normalise_weights(None)
    if args.chunk < 1 or args.workers < 1:
        raise ValueError("--chunk and --workers must be at least 1")
    tree = load_tree(args.tree) if args.tree else None
    tasks = _Tasks(load_tasks(args.tasks))
    out_path = Path(args.out) if args.out else default_out(args.answers)
    if out_path.resolve() == answers.resolve() or out_path.resolve() == Path(args.tasks).resolve():
        raise ValueError(f"--out {out_path} would overwrite an input file")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.name + ".tmp")

    scores = array.array("d")
    task_of = array.array("q")  # task index per scored line, −1 when none matched
    counts = {"lines": 0, "blank": 0, "scored": 0, "ok": 0, "parse_error": 0, "invalid_json": 0,
              "invalid_line": 0, "unknown_task": 0, "lmms_error": 0, "duplicates": 0, "flagged_steps": 0}
    answered = np.zeros(len(tasks.tasks), dtype=np.int64)

    from tqdm import tqdm

    size = answers.stat().st_size
    bar = tqdm(total=size, unit="B", unit_scale=True, desc="score", disable=True if args.no_progress else None,
               leave=False)

    def write(chunk, parsed, f):
        items = _score_chunk([it for _, it in chunk], parsed, tasks, args.profile, weights, args.per_step)
        lines = []
        for (lineno, _), it in zip(chunk, items):
            rec = _out_record(lineno, it, tasks, args.profile, weights)
            lines.append(json.dumps(rec, ensure_ascii=False, allow_nan=False))
            scores.append(rec["score"])
            task_of.append(-1 if it["task"] is None else it["task"])
            counts["scored"] += 1
            counts["ok"] += bool(rec["ok"])
            if rec["reason"] in counts:
                counts[rec["reason"]] += 1
            counts["flagged_steps"] += int(rec.get("n_flagged", 0) or 0)
            if it["task"] is not None:
                if answered[it["task"]]:
                    counts["duplicates"] += 1
                answered[it["task"]] += 1
        f.write("\n".join(lines) + ("\n" if lines else ""))

    def chunks(fin):
        chunk = []
        for lineno, raw in enumerate(fin, 1):
            bar.update(len(raw))
            counts["lines"] += 1
            if not raw.strip():
                counts["blank"] += 1
                continue
            chunk.append((lineno, _read_line(raw, tasks)))
            if len(chunk) >= args.chunk:
                yield chunk
                chunk = []
        yield chunk

    pool = None
    try:
        with open(answers, "rb") as fin, open(tmp, "w", encoding="utf-8") as fout:
            if args.workers <= 1:
                for chunk in chunks(fin):
                    write(chunk, _parse_payload(_payload([it for _, it in chunk], tasks)), fout)
            else:
                # Parsing (pure Python) runs in worker processes, chunk by chunk, at most 2 chunks per worker in
                # flight so memory stays bounded; scoring and writing stay here, in line order.
                import collections
                from concurrent.futures import ProcessPoolExecutor

                pool = ProcessPoolExecutor(args.workers)
                pending: collections.deque = collections.deque()
                for chunk in chunks(fin):
                    pending.append((chunk, pool.submit(_parse_payload, _payload([it for _, it in chunk], tasks))))
                    while len(pending) >= 2 * args.workers:
                        c, fut = pending.popleft()
                        write(c, fut.result(), fout)
                while pending:
                    c, fut = pending.popleft()
                    write(c, fut.result(), fout)
        os.replace(tmp, out_path)
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        if tmp.exists():
            tmp.unlink()

    # ---- summary
    missing = np.nonzero(answered == 0)[0]
    x = np.frombuffer(scores, dtype=np.float64) if len(scores) else np.zeros(0)
    ti = np.frombuffer(task_of, dtype=np.int64) if len(task_of) else np.zeros(0, dtype=np.int64)
    if args.missing_as_zero and len(missing):
        x = np.concatenate([x, np.zeros(len(missing))])
        ti = np.concatenate([ti, missing])
    kinds = np.array([t.kind for t in tasks.tasks] + ["unknown"], dtype=object)
    sources = np.array([t.source for t in tasks.tasks] + ["unknown"], dtype=object)
    sel = np.where(ti < 0, len(tasks.tasks), ti)
    tag_keys = sorted({k for t in tasks.tasks for k in t.tags}, key=str)
    from spatialact.scorers.aggregate import _label

    tag_cols = []
    for k in tag_keys:
        lab = np.array([f"{k}={_label(t.tags[k])}" if k in t.tags else None for t in tasks.tasks] + [None],
                       dtype=object)
        tag_cols.append(lab[sel])
    groups = {"kind": kinds[sel], "source": sources[sel]}
    if tag_cols:
        groups["tags"] = tag_cols
    agg = aggregate_arrays(x, groups, n_boot=args.n_boot, seed=args.seed)
    leaf_values: dict = {}
    leaves = np.array(tasks.leaf + [None], dtype=object)[sel]
    for leaf in {v for v in leaves if v is not None}:
        leaf_values[leaf] = x[leaves == leaf]
    hier = hierarchical_scores(leaf_values=leaf_values, tree=tree)
    summary = {
        "answers": str(answers), "tasks": str(args.tasks), "out": str(out_path), "profile": args.profile,
        "weights": list(weights), "counts": {**counts, "tasks": len(tasks.tasks), "missing": int(len(missing))},
        "missing_task_ids": [tasks.tasks[i].id for i in missing[:50]], "missing_as_zero": bool(args.missing_as_zero),
        **{k: agg[k] for k in agg}, "hierarchy": {k: hier[k] for k in ("tree", "score", "coverage",
                                                                        "score_missing_as_zero", "n", "nodes")},
    }
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=1))
        return 0

    def rows(d):
        return [[name, s["n"], s["mean"], s["ci_low"], s["ci_high"]] for name, s in d.items()]

    hdr = ["group", "n", "mean", "ci95_low", "ci95_high"]
    print(format_table(rows({"overall": agg["overall"]}), hdr, title=f"profile {args.profile}, weights "
                       + ",".join(f"{w:.3g}" for w in weights)))
    for name in ("kind", "source"):
        print()
        print(format_table(rows(agg[name]), [name] + hdr[1:]))
    c = summary["counts"]
    print()
    print(f"lines {c['lines']}, scored {c['scored']}, ok {c['ok']}; parse_error {c['parse_error']}, "
          f"invalid_json {c['invalid_json']}, invalid_line {c['invalid_line']}, unknown_task {c['unknown_task']}"
          + (f", lmms_error {c['lmms_error']}" if args.profile == "lmms-eval" else "")
          + f"; duplicates {c['duplicates']}; tasks {c['tasks']}, missing {c['missing']}"
          + (" (counted as 0)" if args.missing_as_zero else ""))
    if hier["score"] is not None:
        print(f"hierarchy {hier['tree']}: {hier['score']:.4f} (coverage {hier['coverage']:.3f}; "
              f"missing leaves as 0: {hier['score_missing_as_zero']:.4f})")
    print(f"per-answer scores: {out_path}")
    return 0
