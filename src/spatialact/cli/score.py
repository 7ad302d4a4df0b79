"""Score a JSONL of model answers against a JSONL of tasks, offline (docs/scoring.md, "Offline scoring").

ANSWERS: one JSON object per line, {"task_id": ..., "response": "<the model's raw answer text>"}. lmms-eval
sample logs (--log_samples) are read too: a line with "doc_id" and "filtered_resps" / "resps" is matched to a
task by its doc's "task_id" / "id", by the "spatialact.task_id" inside its "hint", or else by doc_id as the
0-based line index into TASKS; with --profile lmms-eval, a sample whose doc carries its own "hint" is scored
with that hint (lmms-eval's extra_info), otherwise with the task exported by to_lmms_extra_info.

TASKS: a task file as written by `spatialact tasks` (validated on load). The order is ANSWERS TASKS: when the first
line of ANSWERS is a task or the first line of TASKS an answer, the command says which file is which (exit 2).
Both are regular files; ANSWERS may be '-', standard input (`zcat answers.jsonl.gz | spatialact score - TASKS
--out S`). A FIFO, a device, a socket or a folder is refused in one line saying what it is, before it is opened.

Writes one JSON line per answer line (default: next to ANSWERS, <answers>.scores.jsonl; each answer to a task
carries the task's "s0", what the stay baseline's answer scores on it) and prints a summary. It leads with skill,
overall and per kind: (mean score − mean s0) / (1 − mean s0), 0 for doing nothing and 1 for the ground truth, with a
bootstrap 95% interval (1000 resamples, seed 0; docs/scoring.md, "Skill"). The raw score follows under its name:
overall mean with its bootstrap 95% interval, per kind, per source, and the counts of
answers that did not parse, lines that were not JSON, unknown task ids and tasks with no answer. A bad line is
scored 0 with its reason (invalid_json, invalid_line, unknown_task, parse_error, lmms_error), never a crash;
such lines count in the overall mean (under kind/source "unknown" when no task matched). Tasks with no answer
are only counted, unless --missing-as-zero. An answers file in which no line names a task of TASKS (empty, blank
lines only, or written for another task file) is no result: refused (exit 2) with nothing written, an existing
--out left as it was.

A provider's batch output is read too (docs/scoring.md, "Scoring a provider's batch output"): the OpenAI Batch API's
output file of the requests `spatialact prompt --format openai-batch` wrote ({"id", "custom_id", "response":
{"status_code", "body"}, "error"} lines), told by its first line (or --answers-format openai-batch; always for '-').
Each answered line's choices[0].message.content is the answer to the task its custom_id names (the episode key
task|openai|none|one-shot|seed); a line with an error, a status other than 200 or no message text is a failed
episode: no score, counted and listed under "batch" in the summary (the scores keep the file's line numbers), and
the command exits 1, as eval does; token counts are summed. A custom_id naming no task of TASKS is refused in one
line naming the file and the line (exit 2).

Large files are read in chunks (--chunk answers at a time), so memory stays bounded whatever the file size;
--workers N scores the answers in N processes (the output is the same for any N). The pipeline is
spatialact.scorers.score_file; this command only adds the options and the table.

Examples:
  spatialact score answers.jsonl tasks.jsonl
  spatialact score answers.jsonl tasks.jsonl --profile paper+rot --weights 0.5,0.3,0.2 --json
  spatialact score samples_spatialtreebench.jsonl tasks.jsonl --profile lmms-eval --out scores.jsonl
  spatialact score batch_output.jsonl batch.tasks.jsonl
"""

from __future__ import annotations

import argparse

from ..vocab import MAX_N_BOOT, MAX_WORKERS
from .main import print_json, seed_arg

PROFILES = ("paper", "paper+rot", "lmms-eval")
CHUNK = 20000  # answer lines per chunk: bounds memory whatever the file size (spatialact.scorers.offline.CHUNK)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("answers", metavar="ANSWERS", help="answers JSONL ({task_id, response} or lmms-eval samples), a "
                                                      "regular file, or '-' for standard input (then --out)")
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
    p.add_argument("--n-boot", type=int, default=1000,
                   help=f"bootstrap resamples (default 1000, at most {MAX_N_BOOT:,})")
    p.add_argument("--seed", type=seed_arg, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--max-groups", type=int, default=100, metavar="N",
                   help="break a summary column (kind, source, a tag key) down only if it has at most N values "
                        "(default 100; more is a measurement, not a category; 0: no limit)")
    p.add_argument("--chunk", type=int, default=CHUNK, help=f"answer lines per chunk (default {CHUNK})")
    p.add_argument("--workers", type=int, default=1,
                   help=f"processes that score answers in parallel (default 1: no extra processes; at most "
                        f"{MAX_WORKERS}, and never more than the pieces of 2,048 answer lines to score)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--answers-format", choices=ANSWERS_FORMATS, default="auto",
                   help="auto (default): told by the first line of ANSWERS (answers for '-'); answers: {task_id, "
                        "response} lines or lmms-eval samples; openai-batch: a provider's batch output file "
                        "(custom_id = episode key, as `spatialact prompt --format openai-batch` writes it)")


#: What ANSWERS may hold (--answers-format).
ANSWERS_FORMATS = ("auto", "answers", "openai-batch")

_SNIFF_BYTES = 1 << 20  # of the first non-blank line read to tell a task file from an answers file


def _first_record(path: str) -> dict | None:
    """The first non-blank line of the regular file ``path`` as a JSON object, or None (not a regular file — a pipe
    is never read here —, unreadable, not JSON, or a first line longer than 1 MiB)."""
    import json
    import os

    try:
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as f:
            budget = _SNIFF_BYTES
            while budget > 0:
                line = f.readline(budget)
                if not line:
                    return None
                budget -= len(line)
                line = line.strip().removeprefix(b"\xef\xbb\xbf")
                if line:
                    if not line.startswith(b"{") or (budget <= 0 and not line.endswith(b"}")):
                        return None  # not an object, or longer than the budget
                    rec = json.loads(line)
                    return rec if isinstance(rec, dict) else None
    except (OSError, ValueError, RecursionError):  # RecursionError: nesting deeper than json decodes
        return None
    return None


def file_kind(path: str) -> str | None:
    """``"tasks"`` when the first line of ``path`` is a task (``gt``, ``start_pose``, ``goal_pose``), ``"answers"``
    when it is an answer (``task_id`` and ``response``) or an lmms-eval sample (``doc_id``), ``"openai-batch"`` for
    a provider's batch output and ``"openai-batch-input"`` for a batch input file
    (:func:`spatialact.export.openai_batch.line_kind`), else None."""
    rec = _first_record(path)
    if rec is None:
        return None
    if {"gt", "start_pose", "goal_pose"} <= rec.keys():
        return "tasks"
    if ("task_id" in rec and "response" in rec) or "doc_id" in rec:
        return "answers"
    from spatialact.export.openai_batch import line_kind

    return line_kind(rec)


def check_argument_order(answers: str, tasks: str) -> str | None:
    """One line when ANSWERS is a task file or TASKS an answers file (the two arguments swapped, or one given
    twice), saying which file is which; else None."""
    a, t = file_kind(answers), file_kind(tasks)
    if a == "tasks" and t == "answers":
        return (f"the arguments are swapped: {answers} is a task file and {tasks} an answers file; the order is "
                f"ANSWERS TASKS: spatialact score {tasks} {answers}")
    if a == "tasks":
        return f"{answers} is a task file, not an answers file: the order is ANSWERS TASKS"
    if t in ("answers", "openai-batch"):
        return f"{tasks} is an answers file, not a task file: the order is ANSWERS TASKS"
    if a == "openai-batch-input" or t == "openai-batch-input":
        name = answers if a == "openai-batch-input" else tasks
        return (f"{name} is an OpenAI batch input file (the requests), not an answers or task file: upload it to "
                f"the Batch API and score the output file the provider returns")
    return None


def read_tree(arg: str):
    """``--tree``: JSON text (starting with ``{``) as it is, or the file it names read here — a regular file only
    (a FIFO or a device is refused unopened), at most ``jsonline.MAX_LINE_BYTES``, nested at most
    ``jsonline.MAX_JSON_DEPTH`` levels — as the decoded object; each refusal one line naming the file."""
    import json

    from spatialact.jsonline import MAX_LINE_BYTES, check_depth, check_input

    from .main import CLIError

    if arg.lstrip().startswith("{"):
        return arg
    st = check_input(arg, "hierarchy file", CLIError)
    if st.st_size > MAX_LINE_BYTES:
        raise CLIError(f"--tree {arg}: {st.st_size:,} bytes, more than a hierarchy file may hold "
                       f"({MAX_LINE_BYTES:,}, jsonline.MAX_LINE_BYTES)")
    with open(arg, "rb") as f:
        raw = f.read(MAX_LINE_BYTES + 1)
    try:
        check_depth(raw)
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        raise CLIError(f"--tree {arg}: not valid UTF-8 (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise CLIError(f"--tree {arg}: not valid JSON ({e.msg} at line {e.lineno})") from None
    except ValueError as e:  # TooDeep, a number too long to convert
        raise CLIError(f"--tree {arg}: {e}") from None


def default_out(answers: str):
    from spatialact.scorers.offline import default_out as _default_out

    return _default_out(answers)


_FREEZE_AT_EXIT = []  # registered once per process


def run(args: argparse.Namespace) -> int:
    """The command. The cyclic garbage collector is paused for its duration (restored after), and the heap is
    frozen at interpreter exit: the process ends right after the command, and the final collection would
    traverse every object of the loaded task file (about a million for 20 000 tasks: 1.5 s of a 4 s run)."""
    import atexit
    import gc

    if not _FREEZE_AT_EXIT:
        atexit.register(gc.freeze)
        _FREEZE_AT_EXIT.append(True)
    was = gc.isenabled()
    gc.disable()
    try:
        return _run(args)
    finally:
        if was:
            gc.enable()


def missing_folders(path) -> list:
    """The folders above ``path`` (a link followed) that do not exist yet, deepest first."""
    import os
    from pathlib import Path

    folder = Path(os.path.realpath(path)).parent
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def answers_format(args: argparse.Namespace) -> str:
    """What ANSWERS holds: --answers-format, or for ``auto`` what its first line is (``openai-batch`` for a
    provider's batch output; standard input is read as answers)."""
    if args.answers_format != "auto":
        return args.answers_format
    return "openai-batch" if args.answers != "-" and file_kind(args.answers) == "openai-batch" else "answers"


def read_batch(args: argparse.Namespace):
    """(the provider's batch output read as answers, the tasks to score them against): TASKS loaded (validated),
    less the tasks whose every request failed (a failed episode is no score, not a missing answer).
    One-line CLIError for an unknown custom id (file and line) or a batch in which no request was answered."""
    import sys

    from spatialact.export.openai_batch import BatchError, read_batch_output
    from spatialact.jsonline import open_input
    from spatialact.tasks import load_tasks

    from .main import CLIError

    tasks = load_tasks(args.tasks)
    ids = {t.id for t in tasks}
    f = sys.stdin.buffer if args.answers == "-" else open_input(args.answers, "answers file", CLIError)
    try:
        batch = read_batch_output(f, ids, args.answers)
    except BatchError as e:
        raise CLIError(str(e)) from None
    finally:
        if f is not sys.stdin.buffer:
            f.close()
    if not batch.answered:
        first = f"; first, line {batch.failures[0]['line']}: {batch.failures[0]['error']}" if batch.failures else ""
        other = sum(1 for x in batch.lines if x)  # no answer was read: the lines kept are not batch records
        other = f", {other} not a batch output record (no JSON object with a custom_id)" if other > 0 else ""
        raise CLIError(f"{args.answers}: no request of the batch was answered ({batch.n_lines} line(s), "
                       f"{batch.n_failed} failed{first}{other}): nothing to score")
    failed_only = batch.failed_tasks - batch.answered_tasks
    return batch, [t for t in tasks if t.id not in failed_only]


def fold_batch(summary: dict, batch, args: argparse.Namespace) -> None:
    """The batch's figures in the summary (``batch``: lines, answered, failed, failures, models, usage); the counts
    read as for the file itself (its failed lines are not blank; its tasks are the task file's, failed ones not
    missing)."""
    summary["answers"], summary["tasks"] = args.answers, args.tasks
    b = summary["batch"] = batch.summary()
    c = summary["counts"]
    c["blank"] = c.get("blank", 0) - batch.n_failed
    c["failed"] = batch.n_failed
    c["tasks"] = c.get("tasks", 0) + b["failed_tasks"]


def _run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from spatialact.outputs import output_path
    from spatialact.scorers import parse_weights
    from spatialact.scorers.offline import score_file

    from .main import CLIError, check_out

    from spatialact.jsonline import check_input

    # Both inputs are regular files ('-': the answers on standard input), looked at before anything opens them: a
    # FIFO would block the command for ever, /dev/zero never end; each refused in one line saying what it is.
    if args.answers == "-":
        if not args.out:  # nowhere beside standard input to write the scores
            raise CLIError("-: the answers come from standard input; name the scores file with --out")
    else:
        check_input(args.answers, "answers file", CLIError)
    check_input(args.tasks, "task file", CLIError)
    tree = read_tree(args.tree) if args.tree is not None else None
    swapped = check_argument_order(args.answers, args.tasks)
    if swapped:
        raise CLIError(swapped)
    for opt, v, least, most in (("--chunk", args.chunk, 1, None), ("--workers", args.workers, 1, MAX_WORKERS),
                                ("--n-boot", args.n_boot, 0, MAX_N_BOOT), ("--max-groups", args.max_groups, 0, None)):
        if v < least:
            raise CLIError(f"{opt} must be at least {least}, got {v}")
        if most is not None and v > most:
            raise CLIError(f"{opt} must be at most {most:,}, got {v:,}")
    weights = parse_weights(args.weights) if args.weights else None
    option = "--out" if args.out else "scores file"
    out = check_out(args.out if args.out else default_out(args.answers), option, folder=False)
    if out.resolve() in (Path(args.answers).resolve(), Path(args.tasks).resolve()):
        raise CLIError(f"--out {out} would overwrite an input file")
    # score_file writes its own temporary and renames it over the name it is given: it is given a fresh name that
    # the output rule then puts in place (a link followed, a character device written through, never replaced)
    answers, tasks, batch = args.answers, args.tasks, None
    if answers_format(args) == "openai-batch":
        batch, tasks = read_batch(args)
        answers = iter(batch.lines)
    missing = missing_folders(out)
    try:
        with output_path(out, option) as written:
            summary = score_file(answers, tasks, profile=args.profile, weights=weights,
                                 workers=args.workers, out=written, tree=tree, per_step=args.per_step,
                                 missing_as_zero=args.missing_as_zero, n_boot=args.n_boot, seed=args.seed,
                                 chunk=args.chunk, max_groups=args.max_groups or None,
                                 progress=not args.no_progress and sys.stderr.isatty())
    except BaseException:
        for folder in missing:  # answers refused: no folder of --out made for them is left behind
            try:
                folder.rmdir()
            except OSError:
                break
        raise
    summary["out"] = str(out)
    if batch is not None:
        fold_batch(summary, batch, args)
    status = 1 if batch is not None and batch.n_failed else 0  # failed episodes: exit 1, as eval
    if args.json:
        print_json(summary, ensure_ascii=False, indent=1)
        return status
    print_summary(args, summary)
    if status:
        b = summary["batch"]
        print(f"spatialact score: {b['failed']} request(s) of the batch failed (no score): first, line "
              f"{b['failures'][0]['line']} (task {b['failures'][0]['task_id']}): {b['failures'][0]['error']}",
              file=sys.stderr)
    return status


def print_summary(args: argparse.Namespace, summary: dict) -> None:
    """The summary as tables and lines (what the command prints without --json)."""
    from .table import format_table

    def rows(d):
        return [[name, s["n"], s["mean"], s["ci_low"], s["ci_high"]] for name, s in d.items()]

    setting = f"profile {args.profile}, weights " + ",".join(f"{w:.3g}" for w in summary["weights"])
    sk = summary["skill"]
    print(format_table([[name, k["n"], k["skill"], k["lo"], k["hi"], k["score"], k["s0"]]
                        for name, k in {"overall": sk["overall"], **sk["kind"]}.items()],
                       ["group", "n", "skill", "ci95_low", "ci95_high", "score", "s0"],
                       title=f"skill (0: doing nothing, the stay baseline's s0; 1: the ground truth), {setting}"))
    print()
    hdr = ["group", "n", "mean", "ci95_low", "ci95_high"]
    print(format_table(rows({"overall": summary["overall"]}), hdr, title=f"score (raw, the paper's), {setting}"))
    for name in ("kind", "source"):
        print()
        print(format_table(rows(summary[name]), [name] + hdr[1:]))
    c = summary["counts"]
    print()
    print(f"lines {c['lines']}, scored {c['scored']}, ok {c['ok']}; parse_error {c['parse_error']}, "
          f"invalid_json {c['invalid_json']}, invalid_line {c['invalid_line']}, unknown_task {c['unknown_task']}"
          + (f", lmms_error {c['lmms_error']}" if args.profile == "lmms-eval" else "")
          + (f", gt_problem {c['gt_problem']}" if c["gt_problem_tasks"] else "")
          + f"; duplicates {c['duplicates']}; tasks {c['tasks']}, missing {c['missing']}"
          + (" (counted as 0)" if args.missing_as_zero else "")
          + (f"; {c['gt_problem_tasks']} task(s) not scored, their ground truth does not lead to their goal: "
             + ", ".join(summary["gt_problem_task_ids"][:5]) + (", ..." if c["gt_problem_tasks"] > 5 else "")
             if c["gt_problem_tasks"] else ""))
    if summary["skipped"]:
        print("not broken down (more than --max-groups values): "
              + ", ".join(f"{k} ({n} values)" for k, n in summary["skipped"].items()))
    h = summary["hierarchy"]
    if h["score"] is not None:
        print(f"hierarchy {h['tree']}: {h['score']:.4f} (coverage {h['coverage']:.3f}; "
              f"missing leaves as 0: {h['score_missing_as_zero']:.4f})")
    if "batch" in summary:
        b = summary["batch"]
        u = b["usage"]
        print(f"openai batch: lines {b['lines']}, answered {b['answered']}, failed {b['failed']} (no score; "
              f"{b['failed_tasks']} task(s) without an answer)" + (f", cut to the text cap {b['truncated']}"
                                                                     if b["truncated"] else "")
              + f"; tokens: prompt {u['prompt_tokens']:,}, completion {u['completion_tokens']:,}"
              + (f" ({u['unknown']} line(s) with counts not believable: not summed)" if u["unknown"] else "")
              + (f"; model {', '.join(b['models'])}" if b["models"] else ""))
    print(f"per-answer scores: {summary['out']}")
