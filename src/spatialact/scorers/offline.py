"""Offline scoring (docs/scoring.md, "Offline scoring"; the records of docs/results.md): a file of model answers
against a task file, the pipeline behind ``spatialact score``.

    summary = score_file("answers.jsonl", "tasks.jsonl", profile="paper", out="answers.scores.jsonl")

Answer lines are ``{"task_id": ..., "response": "<the model's raw text>"}``; lmms-eval ``--log_samples`` lines
(``doc_id`` with ``filtered_resps`` / ``resps``) are read too, matched to a task by their own ``task_id``, their
doc's ``task_id`` / ``id``, the ``spatialact.task_id`` in the doc's ``hint`` (written by ``to_lmms_extra_info``),
or else ``doc_id`` as the 0-based line index into the task file. Each line is parsed leniently with its task's
unit sizes and cap, scored in batch (:func:`~spatialact.scorers.score_episodes_batch`: the same numbers as the
per-record :func:`~spatialact.scorers.score_answer`), and summarised: skill first (0 for doing nothing, 1 for the
ground truth; docs/scoring.md, "Skill"), overall and per kind, then the raw score (mean, bootstrap 95% interval,
breakdown by kind, source and tag, hierarchical SpatialTree score). Every answer to a task carries that task's s0
(the one-shot score of the stay baseline's answer under the same profile and weights, computed for all tasks in
one batch call).

Pipeline, chunk by chunk (``chunk`` answer lines at a time, so memory is bounded whatever the file size; only
one float and one task index per answer are kept for the summary):

1. read the raw lines; 2. decode each line and match it to a task (a dictionary look-up); 3. parse the answer
(:func:`~spatialact.action_space.parse_response`); 4. score the chunk's episodes in one batch call; 5. format
the per-answer JSON lines from precomputed per-task fragments. With ``workers > 1`` steps 2–5 run in worker
processes on pieces of the chunk, and the main process only reads, writes the returned text in line order and
keeps the scores: the output is the same whatever the number of workers. 6. The summary at the end
(:mod:`.aggregate`).

Bad lines never stop a run: they score 0 with a reason (``invalid_json``, ``invalid_line``, ``unknown_task``,
``parse_error``, ``lmms_error``) and count in the overall mean (kind / source ``unknown`` when no task matched).
A file with no line that names a task of the task file (empty, blank, the wrong task file) is no result: it is
refused (ValueError) with nothing written, an existing output file left as it was.
Light core only: numpy, and scipy for profile ``lmms-eval`` only.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import itertools
import json
import os
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from ..jsonline import MAX_LINE_BYTES, LineTooLong, LongLine, fast_loads, iter_lines, open_input, strict_json
from ..outputs import OutputFile, check_output
from ..vocab import MAX_N_BOOT, MAX_WORKERS, PROFILES
from .aggregate import (KIND_LEAVES, MAX_GROUPS, aggregate_coded, hierarchical_scores, leaf_of, load_tree,
                        skill_summary, tag_label)
from .batch import KIND_CODES, score_episodes_batch
from .ground_truth import ground_truth_message, ground_truth_misses, success_thresholds
from .step import normalise_weights

__all__ = ["score_file", "OFFLINE_PROFILES", "REASONS", "CHUNK", "default_out"]

#: Profiles of :func:`score_file`.
OFFLINE_PROFILES = (*PROFILES, "lmms-eval")
#: Reasons a line is not scored as its answer (its ``reason`` field): it scores 0, or null for ``gt_problem`` (an
#: answer to a task whose ground truth does not lead to its goal).
REASONS = ("parse_error", "invalid_json", "invalid_line", "unknown_task", "lmms_error", "gt_problem")
#: Default answer lines per chunk: bounds memory whatever the file size.
CHUNK = 20_000
#: Lines per piece handed to a worker process (``workers > 1``).
PIECE = 2_048
# The most worker processes (``workers``) and bootstrap resamples (``n_boot``) score_file takes: vocab.MAX_WORKERS,
# vocab.MAX_N_BOOT (their one home, shared with the command line and eval).
#: Bytes of output held in memory, before a line has named a task, beyond which they spill to a temporary file.
HOLD = 32 << 20

_EP_FLOATS = ("total", "s_d", "s_theta", "s_step", "s_rot", "s_grip", "net_translation_error", "net_rotation_error")
_ZERO12 = (0,) * 12
_NO_REPAIRS = (0, ())
_LMMS_KIND = {"agenticnaveval": "nav", "manipulateeval": "manip"}
_decode = json.JSONDecoder().decode


def _loads_std(raw: bytes):
    return _decode(raw.decode("utf-8-sig"))  # json.loads(bytes) without its encoding sniffing; a BOM is fine


_loads = fast_loads(_loads_std)  # orjson where it gives the same answer (spatialact.jsonline)
# Characters JSON leaves raw that str.splitlines() takes for line ends (json escapes the ASCII ones itself).
_LINE_SEPARATORS = (("\x85", "\\u0085"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def default_out(answers) -> Path:
    """Where ``spatialact score`` writes per-answer scores by default: ``<answers stem>.scores.jsonl`` beside it."""
    a = Path(answers)
    stem = a.name[:-len(a.suffix)] if a.suffix in (".jsonl", ".json", ".txt") else a.name
    return a.with_name(stem + ".scores.jsonl")


# ------------------------------------------------------------------------------------------------------------
# The task file in compact arrays
# ------------------------------------------------------------------------------------------------------------
class _TaskTable:
    """What scoring needs from the tasks, in arrays: ground-truth step motions (concatenated), kinds, unit
    sizes, caps, ids; the Task objects themselves only where a profile needs them (``lmms-eval``, per-step).
    Built from :class:`~spatialact.tasks.Task` objects or from :class:`spatialact.tasks.fields.TaskFields` (the same
    attributes). Picklable (sent once to each worker process)."""

    def __init__(self, tasks: Sequence, keep_tasks: bool):
        from ..action_space import StepSizes

        T = len(tasks)
        self.n = T
        self.ids = [t.id for t in tasks]
        self.index = {tid: i for i, tid in enumerate(self.ids)}
        self.tasks = list(tasks) if keep_tasks else None
        sizes_index: dict = {}
        self.sizes: list = []
        sid: list = []
        self.caps = [t.gt.cap for t in tasks]
        lengths_: list = []
        counts: list = []
        grips: list = []
        vec: list = []
        units: list = []
        row = 0
        for t in tasks:
            key = (t.sizes.translation, t.sizes.rotation)
            k = sizes_index.get(key)
            if k is None:
                k = sizes_index[key] = len(self.sizes)
                self.sizes.append(StepSizes(*key))
            sid.append(k)
            gt = t.gt
            steps = gt.steps
            lengths_.append(len(steps))
            units.append((gt.sizes.translation, gt.sizes.rotation))
            for s in steps:
                c = s.counts
                if c is None:
                    vec.append((row, s.motion))
                    counts.extend(_ZERO12)
                else:
                    counts.extend(c)
                g = s.gripper
                grips.append(-1 if g is None else g)
                row += 1
        self.size_id = np.array(sid, dtype=np.int64)
        lengths = np.array(lengths_, dtype=np.int64)
        gt_units = np.repeat(np.array(units, dtype=np.float64).reshape(-1, 2), 3, axis=1)  # (T, 6): t t t r r r
        self.units = np.array([[s.translation] * 3 + [s.rotation] * 3 for s in self.sizes]).reshape(-1, 6)
        self.lengths = lengths
        self.offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if T else lengths
        self.motions = _motions(counts, np.repeat(gt_units, lengths, axis=0), vec)
        poses = getattr(tasks, "poses", None)  # (T, 2, 4, 4) start and goal, when the decoder made them
        if poses is None:
            poses = np.array([(t.start_pose, t.goal_pose) for t in tasks], dtype=np.float64).reshape(-1, 2, 4, 4)
        self.gt_problems = _gt_problems(poses[:, 0], poses[:, 1], [success_thresholds(t.success) for t in tasks],
                                        self.motions, lengths)
        self.grippers = np.array(grips, dtype=np.int64)
        self.kind = [t.kind for t in tasks]
        self.kind_code = np.array([KIND_CODES[k] for k in self.kind], dtype=np.int64)
        self.unit_t = gt_units[:, 0].copy()
        self.source = [t.source for t in tasks]
        self.tags = [t.tags for t in tasks]
        self._head: list = [None] * T
        self._tags_json: dict = {}
        self._lmms: dict = {}

    def gt_rows(self, idx: np.ndarray):
        L = self.lengths[idx]
        start = np.repeat(self.offsets[idx], L)
        within = np.arange(int(L.sum())) - np.repeat(np.cumsum(L) - L, L)
        rows = start + within
        return self.motions[rows], self.grippers[rows], L

    def head(self, i: int, profile_json: str) -> str:
        """The JSON fragment of an output line that depends only on the task (cached)."""
        h = self._head[i]
        if h is None:
            tags = self.tags[i]
            try:  # tags are categories: few distinct sets, each written once
                key = _tags_key(tags)
                tj = self._tags_json.get(key)
                if tj is None:
                    tj = self._tags_json[key] = _js(tags)
            except TypeError:  # an unhashable value
                tj = _js(tags)
            h = self._head[i] = (f'"task_id": {_jstr(self.ids[i])}, "kind": "{self.kind[i]}", "source": '
                                 f'{_jstr(self.source[i])}, "tags": {tj}, "profile": {profile_json}, ')
        return h

    def lmms_info(self, i: int) -> dict:
        from .lmms_eval import to_lmms_extra_info

        info = self._lmms.get(i)
        if info is None:
            info = self._lmms[i] = to_lmms_extra_info(self.tasks[i], geometry=False)
        return info

    def __getstate__(self):
        d = dict(self.__dict__)
        d["_head"], d["_tags_json"], d["_lmms"] = [None] * self.n, {}, {}
        return d


def _gt_problems(start: np.ndarray, goal: np.ndarray, thresholds: list, motions: np.ndarray,
                 lengths: np.ndarray) -> dict:
    """``{task index: problem}`` for the tasks whose ground truth does not lead to their goal (one vectorised
    replay of every ground truth: :func:`.ground_truth.ground_truth_misses`)."""
    if not len(lengths):
        return {}
    th = np.array(thresholds, dtype=np.float64).reshape(-1, 2)
    miss, d, r = ground_truth_misses(np.array(start, dtype=np.float64), np.array(goal, dtype=np.float64), motions,
                                     lengths, th[:, 0], th[:, 1])
    return {int(i): ground_truth_message(float(d[i]), float(r[i]), th[i, 0], th[i, 1]) for i in np.flatnonzero(miss)}


def _motions(counts: list, units: np.ndarray, vec: list) -> np.ndarray:
    """Body-frame step motions (K, 6) from 12 counts per step (signed per axis × the step's units); the rows
    in ``vec`` are continuous steps given as ``(row, motion)``. Same numbers as :func:`.batch.sequence_arrays`."""
    if not len(units):
        return np.zeros((0, 6))
    c = np.array(counts, dtype=np.int64).reshape(-1, 6, 2)
    m = (c[:, :, 0] - c[:, :, 1]) * units
    for r, mo in vec:
        m[r] = mo
    return m


def _tags_key(tags: dict) -> tuple:
    """A hashable key of a tags dict; the value types are part of it (True == 1 == 1.0 in Python, not in JSON).
    Raises TypeError for an unhashable value (a list)."""
    return tuple((k, type(v), v) for k, v in tags.items())


def _js(x) -> str:
    return json.dumps(x, ensure_ascii=False, allow_nan=False)


def _jstr(s: str) -> str:
    """A string as JSON (what json.dumps(s, ensure_ascii=False) writes), without the encoder for plain text."""
    if s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'
    return json.dumps(s, ensure_ascii=False)


def _fj(x: float) -> str:
    """A float as JSON (what json.dumps writes); NaN and ±inf as null, so every line is strict JSON."""
    return repr(x) if x - x == 0.0 else "null"


# ------------------------------------------------------------------------------------------------------------
# One piece of lines: decode, match, parse, score, format
# ------------------------------------------------------------------------------------------------------------
class _Config:
    def __init__(self, table: _TaskTable, profile: str, weights: tuple, per_step: bool, write: bool,
                 s0: np.ndarray):
        self.table, self.profile, self.weights, self.per_step, self.write = table, profile, weights, per_step, write
        self.profile_json = _js(profile)
        self.weights_json = _js(list(weights))
        self.batch_profile = "paper" if profile == "lmms-eval" else profile
        self.s0_json = [_fj(v) for v in s0.tolist()]  # each task's s0 as written (null: no valid ground truth)


_NULL_BLOCK = 65_536  # tasks per batch call of _null_scores (bounds its memory)


def _null_scores(table: _TaskTable, profile: str, weights: tuple) -> np.ndarray:
    """s0 of every task (T,): the one-shot score of the null answer (one Stay per ground-truth step, no gripper
    state; :func:`.null.null_answer`) under ``profile`` and ``weights``, through the batch scorer (lmms-eval's score
    of it in its words under profile lmms-eval); NaN for a task whose ground truth does not lead to its goal."""
    T = table.n
    out = np.full(T, np.nan)
    if profile == "lmms-eval":
        from .lmms_eval import score_lmms_eval, to_lmms_answer
        from .null import null_answer

        for i, task in enumerate(table.tasks):
            kind = "nav" if task.kind == "nav" else "manip"
            out[i] = float(score_lmms_eval(to_lmms_answer(null_answer(task), kind), table.lmms_info(i), kind)
                           .get("score", 0.0))
    else:
        for a in range(0, T, _NULL_BLOCK):
            idx = np.arange(a, min(T, a + _NULL_BLOCK))
            n0 = np.maximum(table.lengths[idx], 1)
            rows = int(n0.sum())
            gm, gg, gl = table.gt_rows(idx)
            out[idx] = score_episodes_batch(np.zeros((rows, 6)), np.full(rows, -1, dtype=np.int64), n0, gm, gg, gl,
                                            table.kind_code[idx], table.unit_t[idx], profile=profile,
                                            weights=weights)["total"]
    out[np.fromiter(table.gt_problems, dtype=np.int64, count=len(table.gt_problems))] = np.nan
    return out


_STATE: _Config | None = None  # a worker process's configuration (set by _init_worker)


def _init_worker(cfg: _Config) -> None:
    global _STATE
    _STATE = cfg


def _work(lines: list, first: int):
    with _gc_paused():
        return _score_lines(lines, first, _STATE)


@contextlib.contextmanager
def _gc_paused():
    """The cyclic garbage collector paused (restored after). Scoring allocates millions of short-lived, acyclic
    objects (reference counting frees them) while the task table holds many long-lived ones, which every
    full collection would scan again: on 20 000 answers the collector cost 20-40% of the time. A run
    leaves almost no cyclic garbage (a few hundred objects per 100 000 answers), collected once restored."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


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
        except (ValueError, RecursionError):
            return None
    return x if isinstance(x, dict) else None


def _read_other(rec, table: _TaskTable):
    """A decoded line that is not the plain ``{"task_id", "response"}`` form → (task id text or None, task index
    or −1, response, reason, error, hint, lmms kind)."""
    if not isinstance(rec, dict):
        return None, -1, None, "invalid_line", f"expected a JSON object, got {type(rec).__name__}", None, None
    tid = rec.get("task_id")
    if not ("doc_id" in rec and ("filtered_resps" in rec or "resps" in rec)):
        return (None if tid is None else str(tid)), -1, None, "invalid_line", \
            "no 'response' field (nor lmms-eval 'doc_id' + 'resps')", None, None
    # an lmms-eval sample log line
    text = _first_text(rec.get("filtered_resps"))
    if text is None:
        text = _first_text(rec.get("resps"))
    doc = rec.get("doc") if isinstance(rec.get("doc"), dict) else {}
    hint = _maybe_json(doc.get("hint"))
    use_hint = hint if isinstance(hint, dict) and "optimal_rel_pose" in hint else None
    meta = _maybe_json(doc.get("extra_info"))
    lmms_kind = _LMMS_KIND.get(meta.get("metricfunc")) if isinstance(meta, dict) else None
    sp = hint.get("spatialact") if isinstance(hint, dict) else None
    for cand in (tid, doc.get("task_id"), doc.get("id"), sp.get("task_id") if isinstance(sp, dict) else None):
        if isinstance(cand, (str, int)) and str(cand) in table.index:
            tid = str(cand)
            break
    else:
        d = rec.get("doc_id")
        if tid is None and isinstance(d, int) and not isinstance(d, bool) and 0 <= d < table.n:
            tid = table.ids[d]  # lmms-eval's doc_id is the record's index in the split
    if tid is None:
        return None, -1, text, "invalid_line", "no 'task_id' field", None, None
    i = table.index.get(str(tid), -1)
    return str(tid), i, text, None, None, use_hint, lmms_kind


def _score_lines(lines: list, first: int, cfg: _Config):
    """Score raw answer lines (bytes) numbered from ``first``. Returns (output text or None, scores (m,), task
    indices (m,) with −1 for no task, counts) for the m non-blank lines, in line order."""
    piece = _read_piece(lines, first, cfg)
    tix = np.array(piece.tix, dtype=np.int64)
    scores, ep = _piece_scores(piece, tix, cfg)
    counts = _piece_counts(piece, len(lines), ep)
    text = _piece_text(piece, scores, ep, cfg) if cfg.write else None
    return text, scores, tix, counts


class _Piece:
    """The non-blank lines of one piece, read and parsed: per line its number (``lineno``), task index (``tix``, −1
    for none) and ``info`` ``[task id, reason, error, ok, (n_repairs, repair notes), format, lmms result, per-step
    scores]``; for the
    lines with a task (their positions in ``info``: ``matched``) the parsed steps, flattened for the batch scorer:
    12 counts per step (``counts``, zeros for a vector step), ``grips`` (−1: not stated), ``vec`` (row, motion) of
    the vector steps and ``lengths`` (steps per answer). ``blank`` counts the blank lines."""

    def __init__(self):
        self.lineno: list = []
        self.tix: list = []
        self.info: list = []
        self.counts: list = []
        self.grips: list = []
        self.vec: list = []
        self.lengths: list = []
        self.matched: list = []
        self.void: list = []  # positions of the answers to a task whose ground truth misses its goal
        self.blank = 0

    def refuse(self, tid, reason: str, error: str) -> None:
        """A line that scores 0 without a task: ``reason`` and ``error`` say why."""
        self.tix.append(-1)
        self.info.append([tid, reason, error, False, _NO_REPAIRS, None, None, None])

    def refuse_task(self, i: int, tid: str, error: str) -> None:
        """An answer to task ``i``, whose ground truth does not lead to its goal: not scored (score null)."""
        self.void.append(len(self.info))
        self.tix.append(i)
        self.info.append([tid, "gt_problem", error, False, _NO_REPAIRS, None, None, None])

    def add(self, i: int, steps, item: list) -> None:
        """A line answering task ``i``: its parsed ``steps`` and its ``info`` item."""
        counts, grips, vec = self.counts, self.grips, self.vec
        row = len(grips)
        for s in steps:
            c = s.counts
            if c is None:
                vec.append((row, s.motion))
                counts.extend(_ZERO12)
            else:
                counts.extend(c)
            g = s.gripper
            grips.append(-1 if g is None else g)
            row += 1
        self.lengths.append(len(steps))
        self.matched.append(len(self.info))
        self.tix.append(i)
        self.info.append(item)


def _read_piece(lines: list, first: int, cfg: _Config) -> _Piece:
    """Decode each non-blank line, match it to a task and parse its answer with the task's sizes and cap."""
    from ..action_space import parse_response

    table = cfg.table
    sizes, size_id, caps, gt_problems = table.sizes, table.size_id, table.caps, table.gt_problems
    piece = _Piece()
    for off, raw in enumerate(lines):
        if type(raw) is LongLine:
            piece.lineno.append(first + off)
            piece.refuse(None, "invalid_line", f"line of {raw.nbytes:,} bytes, longer than the limit "
                                               f"({MAX_LINE_BYTES:,} bytes, MAX_LINE_BYTES); not read")
            continue
        if not raw.strip():
            piece.blank += 1
            continue
        piece.lineno.append(first + off)
        try:
            rec = _loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            piece.refuse(None, "invalid_json", f"not JSON: {str(e)[:120]}")
            continue
        tid, i, response, reason, error, hint, lmms_kind = _locate(rec, table)
        if reason is not None:
            piece.refuse(tid, reason, error)
            continue
        if i < 0:
            piece.refuse(tid, "unknown_task", f"task id {tid[:80]!r} is not in the task file")
            continue
        if i in gt_problems:
            piece.refuse_task(i, tid, gt_problems[i])
            continue
        pr = parse_response(response, False, sizes[size_id[i]], caps[i])
        piece.add(i, pr.sequence.steps, _answer_info(tid, i, response, pr, hint, lmms_kind, cfg))
    return piece


def _locate(rec, table: _TaskTable):
    """A decoded line → (task id text or None, task index or −1, response, reason, error, hint, lmms kind); the
    plain ``{"task_id", "response"}`` form here, any other in :func:`_read_other`."""
    if type(rec) is dict and "response" in rec:
        tid = rec.get("task_id")
        if tid is None:
            return None, -1, None, "invalid_line", "no 'task_id' field", None, None
        tid = tid if type(tid) is str else str(tid)
        return tid, table.index.get(tid, -1), rec["response"], None, None, None, None
    return _read_other(rec, table)


def _answer_info(tid: str, i: int, response, pr, hint, lmms_kind, cfg: _Config) -> list:
    """The ``info`` item of an answer to task ``i`` parsed as ``pr``; under profile lmms-eval its score and verdict
    are lmms-eval's, and ``per_step`` adds the per-record scorer's per-step scores."""
    item = [tid, None if pr.ok else "parse_error", pr.error, pr.ok, (pr.n_repairs, pr.repairs), pr.format, None,
            None]
    table = cfg.table
    if cfg.profile == "lmms-eval":
        from .lmms_eval import INVALID_RESPONSE, score_lmms_eval

        kind = lmms_kind or ("nav" if table.kind[i] == "nav" else "manip")
        r = score_lmms_eval(response, hint if hint is not None else table.lmms_info(i), kind=kind)
        err = r.get("error")
        item[1] = None if err is None else ("parse_error" if err == INVALID_RESPONSE else "lmms_error")
        item[2], item[3], item[6] = err, err is None, r
    if cfg.per_step:
        from .episode import score_answer

        item[7] = score_answer(response, table.tasks[i], cfg.batch_profile, cfg.weights)["per_step"]
    return item


def _piece_scores(piece: _Piece, tix: np.ndarray, cfg: _Config):
    """(score per line (m,), the batch scorer's episode arrays or None): every answer with a task scored in one
    batch call; 0 for a line without a task, a parse error or a non-finite score; lmms-eval's own score under
    that profile; NaN (null) for an answer to a task whose ground truth does not lead to its goal."""
    scores = np.zeros(len(piece.info))
    scores[piece.void] = np.nan  # written as null, left out of the summary
    if not piece.matched:
        return scores, None
    table = cfg.table
    tidx = tix[piece.matched]
    L = np.array(piece.lengths, dtype=np.int64)
    pm = _motions(piece.counts, np.repeat(table.units[table.size_id[tidx]], L, axis=0), piece.vec)
    gm, gg, gl = table.gt_rows(tidx)
    ep = score_episodes_batch(pm, np.array(piece.grips, dtype=np.int64), L, gm, gg, gl, table.kind_code[tidx],
                              table.unit_t[tidx], profile=cfg.batch_profile, weights=cfg.weights)
    total = ep["total"]
    lmms = cfg.profile == "lmms-eval"
    for j, pos in enumerate(piece.matched):
        it = piece.info[pos]
        if lmms:
            s = it[6].get("score", 0.0)
            try:
                s = float(s)
            except (TypeError, ValueError):
                s = 0.0
        else:
            s = float(total[j]) if it[3] else 0.0
        scores[pos] = s if s == s else 0.0
    return scores, ep


def _piece_counts(piece: _Piece, n_lines: int, ep) -> dict:
    """Lines, blank, scored, ok, one count per reason and the flagged steps of one piece."""
    cnt = {"lines": n_lines, "blank": piece.blank, "scored": len(piece.info), "ok": 0, "flagged_steps": 0,
           **{r: 0 for r in REASONS}}
    for it in piece.info:
        if it[3]:
            cnt["ok"] += 1
        if it[1] is not None:
            cnt[it[1]] += 1
    if ep is not None:
        cnt["flagged_steps"] = int(ep["n_flagged"].sum())
    return cnt


def _piece_text(piece: _Piece, scores: np.ndarray, ep, cfg: _Config) -> str:
    """The piece's output lines, with U+0085, U+2028 and U+2029 as JSON escapes (str.splitlines() would split
    there)."""
    text = _format(piece.info, piece.lineno, piece.tix, scores, piece.matched, ep, cfg)
    if not text.isascii():
        for ch, esc in _LINE_SEPARATORS:
            if ch in text:
                text = text.replace(ch, esc)
    return text


def _format(info, lineno, tix, scores, matched, ep, cfg: _Config) -> str:
    """The per-answer JSON lines (keys in a fixed order, strict JSON: non-finite numbers are null)."""
    table = cfg.table
    pj, wj = cfg.profile_json, cfg.weights_json
    head = table.head
    s0j = cfg.s0_json
    fmts = {None: "null"}
    if ep is not None:
        nav = table.kind_code[np.asarray(tix, dtype=np.int64)[matched]] == KIND_CODES["nav"]
        cols = []
        for k in _EP_FLOATS:
            v = ep[k]
            if k == "s_grip":
                v = np.where(nav, np.nan, v)  # navigation carries no gripper score: null
            cols.append(list(map(repr, v.tolist())) if np.isfinite(v).all() else [_fj(x) for x in v.tolist()])
        ep_of = dict(zip(matched, zip(*cols, ep["n_pred"].tolist(), ep["n_gt"].tolist(), ep["n_flagged"].tolist())))
    else:
        ep_of = {}
    sc = scores.tolist()
    out = []
    for pos, (tid, reason, error, ok, (n_repairs, repairs), fmt, lr, per_step) in enumerate(info):
        i = tix[pos]
        h = head(i, pj) if i >= 0 else \
            f'"task_id": {"null" if tid is None else _jstr(tid)}, "kind": null, "source": null, "tags": {{}}, ' \
            f'"profile": {pj}, '
        f = fmts.get(fmt)
        if f is None:
            f = fmts[fmt] = _jstr(fmt)
        line = (f'{{"line": {lineno[pos]}, {h}"score": {_fj(sc[pos])}, "s0": {s0j[i] if i >= 0 else "null"}, '
                f'"ok": {"true" if ok else "false"}, '
                f'"reason": {"null" if reason is None else _jstr(reason)}, '
                f'"error": {"null" if error is None else _jstr(error)}, "n_repairs": {n_repairs}, '
                f'"repairs": {_js(list(repairs)) if repairs else "[]"}, "format": {f}, "weights": {wj}')
        e = ep_of.get(pos)
        if e is not None:
            line += (', "total": %s, "s_d": %s, "s_theta": %s, "s_step": %s, "s_rot": %s, "s_grip": %s, '
                     '"net_translation_error": %s, "net_rotation_error": %s, "n_pred": %d, "n_gt": %d, '
                     '"n_flagged": %d' % e)
        if lr is not None:
            line += f', "lmms": {_js(strict_json(lr))}'
        if per_step is not None:
            line += f', "per_step": {_js(strict_json(per_step))}'
        out.append(line + "}\n")
    return "".join(out)


# ------------------------------------------------------------------------------------------------------------
# The whole file
# ------------------------------------------------------------------------------------------------------------
def _answer_lines(answers):
    """(raw line iterator, its size in bytes or None, closer, label) for a path or an iterable of records."""
    if isinstance(answers, (str, os.PathLike)):
        if os.fspath(answers) == "-":  # standard input (``zcat answers.jsonl.gz | spatialact score - TASKS``)
            return _bounded_lines(sys.stdin.buffer, "-"), None, (lambda: None), "-"
        # A regular file (its size drives the progress bar); a FIFO, a device, a socket or a folder is refused in
        # one line before anything opens it (jsonline.open_input): a FIFO would block, /dev/zero never end.
        p = Path(answers)
        f = open_input(p, "answers file")
        return _bounded_lines(f, str(p)), os.fstat(f.fileno()).st_size, f.close, str(p)

    def enc(r):
        if isinstance(r, bytes):
            return r
        if isinstance(r, str):
            return r.encode("utf-8", "surrogatepass")
        return json.dumps(r, ensure_ascii=True, default=str).encode()

    return (enc(r) for r in answers), None, (lambda: None), None


def _bounded_lines(f, label: str):
    """The lines of the answers file ``f``, each at most MAX_LINE_BYTES long (a longer one comes as a LongLine,
    scored ``invalid_line``); one with no line end in sight is refused in one line naming the file."""
    try:
        yield from iter_lines(f)
    except LineTooLong as e:
        raise ValueError(f"answers file {label}: {e}") from None


def _chunks(lines, size: int, bar):
    """Lists of at most ``size`` raw lines, with the 1-based number of each list's first line."""
    first = 1
    chunk: list = []
    nbytes = 0
    for raw in lines:
        chunk.append(raw)
        nbytes += len(raw) + 1  # the line end iter_lines took off (a LongLine: its bytes are not counted)
        if len(chunk) >= size:
            bar(nbytes, len(chunk))
            yield first, chunk
            first += len(chunk)
            chunk, nbytes = [], 0
    if chunk:
        bar(nbytes, len(chunk))
        yield first, chunk


TABLE_FORMAT = 3  # bump when _TaskTable's fields change: cached tables of another format are rebuilt


def _build_table(tasks) -> _TaskTable:
    return _TaskTable(tasks, False)


@functools.lru_cache(maxsize=1)
def table_view():
    """score's view of a task file (``tasks.load_task_file(path, view=table_view())``: the one reader, its one
    cache); made on first use, so that importing the scorers imports no task-file reader."""
    from ..tasks.io import TaskView

    return TaskView("score-table", TABLE_FORMAT, _build_table)


def _load_table(tasks, keep: bool) -> tuple[_TaskTable, str | None]:
    from ..tasks import Task, load_task_file

    if isinstance(tasks, (str, os.PathLike)):
        if keep:  # a profile that needs the Task objects themselves
            return _TaskTable(load_task_file(tasks).tasks, keep), str(tasks)
        # Scoring needs only the table: the task file's view, cached by the SHA-256 of its bytes (so scoring several
        # models against one task file decodes it once), decoded by the compiled decoder of the fields scoring
        # reads (tasks.fields) or, when that decoder does not accept the file, by the full validator, which refuses
        # in one line (or accepts what the decoder was stricter about).
        return load_task_file(tasks, view=table_view()).view, str(tasks)
    tasks = list(tasks)
    for k, t in enumerate(tasks):
        if not isinstance(t, Task):
            raise TypeError(f"tasks[{k}]: expected a spatialact Task, got {type(t).__name__}")
    ids = set()
    for t in tasks:
        if t.id in ids:
            raise ValueError(f"tasks: task id {t.id!r} appears twice")
        ids.add(t.id)
    return _TaskTable(tasks, keep), None


def score_file(answers, tasks, *, profile: str = "paper", weights=None, workers: int = 1, out=None,
               tree=None, per_step: bool = False, missing_as_zero: bool = False, n_boot: int = 1000, seed: int = 0,
               chunk: int = CHUNK, max_groups: int | None = MAX_GROUPS, progress: bool = False) -> dict:
    """Score a file of model answers against tasks, offline; returns the summary dict.

    ``answers``: a JSONL path (``{"task_id", "response"}`` lines or lmms-eval sample logs), or an iterable of
    such records (dicts, or JSON text lines). ``tasks``: a task file path (``spatialact.tasks.load_tasks``,
    validated) or a list of :class:`~spatialact.tasks.Task`. ``profile``: ``paper`` | ``paper+rot`` |
    ``lmms-eval``. ``weights``: (w_t, w_r, w_g) for manipulation and hand (normalised; default equal thirds).
    ``workers``: processes that score in parallel (1: none; the output is the same for any number).
    ``out``: where to write one JSON line per non-blank answer line, by the output rule of
    :mod:`spatialact.outputs` (a regular file replaced atomically, a character device written through, a link
    followed and kept; a FIFO or a read-only file refused before any work); None writes nothing. ``tree``: hierarchy (path, JSON text or dict; default SpatialTree L4).
    ``per_step``: add each answer's per-step scores to its line (slower: the per-record scorer runs too).
    ``missing_as_zero``: tasks without an answer count as 0 in the summary. ``n_boot``, ``seed``: the
    bootstrap. ``chunk``: answer lines held in memory at once. ``max_groups``: the most groups in one breakdown
    column (see :func:`~spatialact.scorers.aggregate_arrays`). ``progress``: a progress bar on stderr.

    Summary keys: ``answers``, ``tasks``, ``out``, ``profile``, ``weights``, ``skill`` (``{"overall": {skill, lo,
    hi, n, score, s0}, "kind": {kind: ...}}``, :func:`~spatialact.scorers.skill_summary` of the answers with a task
    against their tasks' s0, one-shot, this profile and weights), ``counts`` (``lines``, ``blank``,
    ``scored``, ``ok``, one per reason, ``duplicates``, ``flagged_steps``, ``tasks``, ``missing``,
    ``gt_problem_tasks``), ``missing_task_ids`` (first 50), ``gt_problem_task_ids`` (first 50),
    ``missing_as_zero``, ``overall`` / ``kind`` / ``source`` / ``tags`` (``{mean, ci_low, ci_high, n}``),
    ``n_boot``, ``seed``, ``n_excluded``, ``skipped``, ``hierarchy``.

    A task whose ground truth does not lead to its goal (:mod:`.ground_truth`: replayed from its start it ends
    beyond the success thresholds) is no task: its answers are written with score null and reason
    ``gt_problem`` (counted in ``counts["gt_problem"]``), left out of every mean, and it is never ``missing``;
    tasks of which none is valid are refused (ValueError).
    Raises FileNotFoundError / ValueError (one line, naming the file, field or parameter) for bad input
    files or parameters; a bad answer line is scored 0 with its reason, never raised. Answers of which no line
    names a task of ``tasks`` (no non-blank line, or every line ``unknown_task`` / ``invalid_json`` /
    ``invalid_line``) raise a one-line ValueError naming the answers file, with nothing written: neither ``out``
    (an existing one is left as it was) nor its missing folders.
    """
    if profile not in OFFLINE_PROFILES:
        raise ValueError(f"profile must be one of {', '.join(OFFLINE_PROFILES)}, got {profile!r}")
    weights = normalise_weights(weights)
    for name, v, least in (("workers", workers, 1), ("chunk", chunk, 1), ("n_boot", n_boot, 0),
                           ("max_groups", 1 if max_groups is None else max_groups, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
            raise ValueError(f"{name} must be an integer of at least {least}, got {v!r}")
    for name, v, most, const in (("workers", workers, MAX_WORKERS, "MAX_WORKERS"),
                                 ("n_boot", n_boot, MAX_N_BOOT, "MAX_N_BOOT")):
        if v > most:
            raise ValueError(f"{name} must be at most {most:,} ({const}), got {v:,}")
    tree = load_tree(tree)
    lines, size, close, answers_label = _answer_lines(answers)
    with _gc_paused():
        return _score_file(lines, size, close, answers_label, tasks, profile, weights, workers, out, tree, per_step,
                           missing_as_zero, n_boot, seed, chunk, max_groups, progress)


def _score_file(lines, size, close, answers_label, tasks, profile, weights, workers, out, tree, per_step,
                missing_as_zero, n_boot, seed, chunk, max_groups, progress) -> dict:
    pool = _Pool()
    try:
        table, tasks_label = _load_table(tasks, keep=(profile == "lmms-eval" or per_step))
        _check_some_valid(table, tasks_label)
        out_path = None if out is None else Path(out)
        if out_path is not None:
            _check_out(out_path, answers_label, tasks_label)
        s0 = _null_scores(table, profile, weights)
        cfg = _Config(table, profile, weights, per_step, out_path is not None, s0)
        refuse = functools.partial(_refusal, answers_label, tasks_label)
        scores, tix, counts = _run(lines, size, cfg, pool, workers, chunk, out_path, progress, refuse)
        close()
        summary = _summarise(scores, tix, counts, table, tree, missing_as_zero, n_boot, seed, max_groups,
                             None if pool.executor is None else pool.executor.map, s0)
    finally:
        close()
        pool.shutdown()
    return {"answers": answers_label, "tasks": tasks_label, "out": None if out_path is None else str(out_path),
            "profile": profile, "weights": list(weights), **summary}


def _check_some_valid(table: _TaskTable, tasks_label) -> None:
    """Refuse tasks of which none has a ground truth that leads to its goal: there is nothing to score against."""
    if table.n and len(table.gt_problems) == table.n:
        first = min(table.gt_problems)
        what = f"task file {tasks_label}" if tasks_label is not None else "tasks"
        raise ValueError(f"{what}: no valid task: the ground truth of every task ({table.n}) does not lead to its "
                         f"goal; the first, task {table.ids[first]!r}: {table.gt_problems[first]}")


def _check_out(out_path: Path, answers_label, tasks_label) -> None:
    """Refuse, before any work, an ``out`` that is an input file or that cannot be written: a folder, a path under
    a file, or under a folder this process may not write in (its missing folders are made only once the output
    is known to be a result, see :func:`_run`)."""
    inputs = [Path(x).resolve() for x in (answers_label, tasks_label) if x is not None]
    if out_path.resolve() in inputs:
        raise ValueError(f"out {out_path} would overwrite an input file")
    if out_path.is_dir():
        raise ValueError(f"out {out_path}: is a folder; name a file")
    check_output(out_path, "out")  # a FIFO, a read-only file, a link loop: refused before any work
    for parent in out_path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"out {out_path}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ValueError(f"out {out_path}: folder {parent} is not writable")
            break


def _refusal(answers_label, tasks_label, counts: dict, matched: int) -> str | None:
    """Why the answers are no result (nothing is written then), or None. An empty file, one of blank lines, or one
    where no line names a task of the task file (the wrong task file, a failed export) is a mistake, not a score of
    nothing; lines that name a task but do not parse are results (score 0)."""
    what = f"answers file {answers_label}" if answers_label is not None else "answers"
    if counts["lines"] == counts["blank"]:
        return f"{what}: no answers (no non-blank line)"
    if matched:
        return None
    n = counts["lines"] - counts["blank"]
    why = ", ".join(f"{k} {counts[k]}" for k in ("unknown_task", "invalid_json", "invalid_line") if counts[k])
    tf = f"the task file {tasks_label}" if tasks_label is not None else "the tasks given"
    hint = "; is it the right task file?" if counts["unknown_task"] else ""
    return f"{what}: no line names a task of {tf} ({n} line{'s' if n != 1 else ''}: {why}){hint}"


class _Pool:
    """The worker processes of one run, started only once there is work for more than one of them (see
    :func:`_run`); ``executor`` stays None when none were started. Kept for the summary's bootstraps."""

    def __init__(self):
        self.executor = None

    def start(self, n: int, cfg: _Config) -> None:
        from concurrent.futures import ProcessPoolExecutor

        self.executor = ProcessPoolExecutor(n, initializer=_init_worker, initargs=(cfg,))

    def shutdown(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(cancel_futures=True)


def _run(lines, size, cfg: _Config, pool: _Pool, workers: int, chunk: int, out_path, progress: bool, refuse=None):
    """Stream the lines through :func:`_score_lines` (here, or in at most ``workers`` processes of ``pool``);
    write the output text in line order; return the scores and task indices of all non-blank lines and the summed
    counts.

    With ``workers > 1`` the first ``workers`` pieces (:data:`PIECE` lines each) are read before any process is
    started, and one process is started per piece read, at most ``workers``: a file of one piece starts none, a
    file of three pieces three. They are started before the progress bar, whose thread must not exist when a
    process forks.

    ``refuse(counts, matched)`` is asked at the end, before the output is renamed into place: a message means the
    answers are no result and it is raised as ValueError with nothing written (an existing ``out_path`` as it
    was). Output text is held back (in memory, spilling to an anonymous temporary file) until a line has named a
    task, so neither a temporary nor a missing folder of ``out_path`` is created for answers that are refused;
    a valid file is read once whatever the number of workers."""
    scores: list = []
    tix: list = []
    counts: dict = {}
    matched = 0
    bar = None
    # The output rule of spatialact.outputs: a regular file replaced atomically, a device written through, a link
    # followed and kept. Lone surrogates (a "\ud800" escape in an answer line) come back out as the same JSON escape.
    sink = None if out_path is None else OutputFile(out_path, errors="backslashreplace", newline="\n")
    f = None  # the output, opened once a line named a task
    held = None  # text held back before that (a SpooledTemporaryFile)

    def keep(res):
        nonlocal f, held, matched
        text, s, t, c = res
        matched += int(np.count_nonzero(t >= 0))
        if sink is not None:
            if f is None and matched:
                f = sink.open()
                if held is not None:
                    import shutil

                    held.seek(0)
                    shutil.copyfileobj(held, f, 1 << 20)
                    held.close()
                    held = None
            if f is not None:
                f.write(text)
            else:
                if held is None:
                    import tempfile

                    held = tempfile.SpooledTemporaryFile(max_size=HOLD, mode="w+", encoding="utf-8",
                                                         errors="backslashreplace", newline="\n")
                held.write(text)
        scores.append(s)
        tix.append(t)
        for k, v in c.items():
            counts[k] = counts.get(k, 0) + v

    read = [0, 0]  # bytes and lines read before the bar exists

    def tick(nb: int, nl: int) -> None:
        if bar is None:
            read[0] += nb
            read[1] += nl
        else:
            bar.update(nb if size is not None else nl)

    try:
        pieces = _chunks(lines, chunk if workers == 1 else max(1, min(chunk, PIECE)), tick)
        if workers > 1:
            ahead = list(itertools.islice(pieces, workers))
            if len(ahead) > 1:
                pool.start(len(ahead), cfg)
            pieces = itertools.chain(ahead, pieces)
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=size, unit="B" if size is not None else "line", unit_scale=True, desc="score",
                       leave=False)
            bar.update(read[0] if size is not None else read[1])
        if pool.executor is None:
            for first, lines_ in pieces:
                keep(_score_lines(lines_, first, cfg))
        else:
            import collections

            pending: collections.deque = collections.deque()
            for first, lines_ in pieces:
                pending.append(pool.executor.submit(_work, lines_, first))
                while len(pending) > 2 * workers:
                    keep(pending.popleft().result())
            while pending:
                keep(pending.popleft().result())
        for k in ("lines", "blank", "scored", "ok", *REASONS, "flagged_steps"):
            counts.setdefault(k, 0)
        why = refuse(counts, matched) if refuse is not None else None
        if why is not None:
            raise ValueError(why)
        if f is not None:
            sink.commit()
            f = None
    finally:
        if bar is not None:
            bar.close()
        if held is not None:
            held.close()
        if f is not None:  # not committed (refused, or an error): the temporary goes, out_path stays as it was
            sink.discard()
    x = np.concatenate(scores) if scores else np.zeros(0)
    ti = np.concatenate(tix) if tix else np.zeros(0, dtype=np.int64)
    return x, ti, counts


def _codes(values: list) -> tuple[np.ndarray, list]:
    """Per-task labels (None: no group) → (codes, distinct labels)."""
    index: dict = {}
    return np.array([-1 if v is None else index.setdefault(v, len(index)) for v in values], dtype=np.int64), \
        list(index)


def _tag_columns(tags: list) -> list:
    """One breakdown column per tag key over the tasks: ``(key, codes (T + 1,), labels)``, codes −1 where a task
    has no such tag (and in row T, lines without a task), labels ``"key=value"``; values with the same label share
    a group. Tasks with identical tags (the usual case: tags are categories) are handled once."""
    T = len(tags)
    sig_index: dict = {}
    reps: list = []  # one tags dict per distinct signature
    sig = np.empty(T + 1, dtype=np.int64)
    for i, t in enumerate(tags):
        try:
            key = _tags_key(t)
            c = sig_index.get(key)
        except TypeError:  # an unhashable value (a list): this task alone
            key, c = None, None
        if c is None:
            c = len(reps)
            reps.append(t)
            if key is not None:
                sig_index[key] = c
        sig[i] = c
    sig[T] = len(reps)  # lines without a task
    keys = sorted({k for t in reps for k in t}, key=str)
    columns = []
    for k in keys:
        by_label: dict = {}
        labels: list = []
        per_sig = np.full(len(reps) + 1, -1, dtype=np.int64)
        for j, t in enumerate(reps):
            if k in t:
                lab = tag_label(k, t[k])
                c = by_label.get(lab)
                if c is None:
                    c = by_label[lab] = len(labels)
                    labels.append(lab)
                per_sig[j] = c
        columns.append((k, per_sig[sig], labels))
    return columns


def _skills(x: np.ndarray, s0: np.ndarray, kind_codes: np.ndarray, kinds: list, n_boot: int, seed: int) -> dict:
    """Skill (:func:`.aggregate.skill_summary`) overall and per kind of the answers with a task (a line without one
    has no s0 and is left out); a kind holding every such answer shares the overall result."""
    has = np.isfinite(s0)
    overall = skill_summary(x[has], s0[has], n_boot, seed)
    per_kind = {}
    for c, label in enumerate(kinds):
        m = (kind_codes == c) & has
        k = int(np.count_nonzero(m))
        if k:
            per_kind[str(label)] = dict(overall) if k == overall["n"] else skill_summary(x[m], s0[m], n_boot, seed)
    return {"overall": overall, "kind": dict(sorted(per_kind.items()))}


def _summarise(x, ti, counts, table: _TaskTable, tree, missing_as_zero, n_boot, seed, max_groups,
               mapper=None, s0=None) -> dict:
    T = table.n
    scored = ~np.isnan(x)  # NaN: an answer to a task whose ground truth misses its goal (gt_problem), not scored
    if not scored.all():
        x, ti = x[scored], ti[scored]
    void = np.zeros(T, dtype=bool)
    void[list(table.gt_problems)] = True
    answered = np.bincount(ti[ti >= 0], minlength=T)
    missing = np.flatnonzero((answered == 0) & ~void)
    counts = {**counts, "duplicates": int(answered.sum() - np.count_nonzero(answered)), "tasks": T,
              "missing": int(len(missing)), "gt_problem_tasks": len(table.gt_problems)}
    if missing_as_zero and len(missing):
        x = np.concatenate([x, np.zeros(len(missing))])
        ti = np.concatenate([ti, missing])
    sel = np.where(ti < 0, T, ti)  # row T: lines without a task
    columns = []
    for name, labels in (("kind", table.kind), ("source", table.source)):
        codes, distinct = _codes(list(labels) + ["unknown"])
        columns.append((name, None, codes[sel], distinct))
    if s0 is None:
        s0 = np.full(T, np.nan)
    skill = _skills(x, np.append(s0, np.nan)[sel], columns[0][2], columns[0][3], n_boot, seed)
    tag_cols = _tag_columns(table.tags)
    for k, codes, distinct in tag_cols:
        columns.append(("tags", str(k), codes[sel], distinct))
    if not tag_cols:
        columns.append(("tags", None, np.full(len(x), -1), []))
    keys = [k for k, _, _ in tag_cols]
    agg = aggregate_coded(x, columns, n_boot, seed, max_groups, mapper)
    if any(str(k).startswith("spatree") for k in keys):
        per_task = [leaf_of({"kind": table.kind[i], "tags": table.tags[i]}) for i in range(T)]
    else:  # without spatree tags, leaf_of gives the kind's leaf
        per_task = [KIND_LEAVES.get(k) for k in table.kind]
    leaf_codes, leaves = _codes(per_task + [None])
    lc = leaf_codes[sel]
    hier = hierarchical_scores(leaf_values={leaf: x[lc == c] for c, leaf in enumerate(leaves)}, tree=tree)
    return {"skill": skill, "counts": counts, "missing_task_ids": [table.ids[i] for i in missing[:50]],
            "gt_problem_task_ids": [table.ids[i] for i in sorted(table.gt_problems)[:50]],
            "missing_as_zero": bool(missing_as_zero), **agg,
            "hierarchy": {k: hier[k] for k in ("tree", "score", "coverage", "score_missing_as_zero", "n", "nodes")}}

