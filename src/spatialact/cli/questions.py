"""Generated questions with exact answers (docs/questions.md): build a question file, and score answers to it.

  spatialact questions build --out q.jsonl [--n 4] [--seed 0] [--types depth,tracking,...]
      camera-geometry questions after SpatialScore's VGBench (relative_pose, primitive, fov, depth, relative_depth,
      distance, tracking) and task-flow questions after SpaCE-10 (task_flow), N of every type and format, from
      simulator renders of procedural rooms; with --trajectory FILE, from a recorded camera path replayed in its
      scene (a room around the path, or the mesh of --scene); with --trajectory RECORDING (a game trajectory
      folder, a DROID episode with --episode, an EgoDex .hdf5 with its video), from the recording's own frames,
      camera poses, intrinsics and depth (the types it can give; one it cannot is refused). Writes the question
      file (JSONL, validated against the shipped schema) and its images and depth maps in <out stem>_images/. The
      same seed gives the same file and images (same renderer and device).
  spatialact questions score Q.jsonl --agent openai --agent-arg model=gpt-4o --out runs/q-gpt4o
      asks an agent every question — option questions under every rotation of their options (CircularEval), numeric
      ones once — and writes one record per answer in the run directory (resumable: a rerun asks only what is
      missing, and the answers that failed). Agents: openai (the MLLM agent: same endpoint, response cache in
      <out>/cache, retries and records as its actions), oracle (reads the stored answer), constant (always "A"),
      random. `spatialact report RUN` shows the results in its Diagnostics section.
  spatialact questions score Q.jsonl --answers answers.jsonl [--out scores.jsonl]
      scores a file of answers offline: one JSON object a line, {"question_id", "rotation" (default 0),
      "response"} (the rotation of the options the model was shown; see spatialact.questions.question_prompt).

Scores (docs/scoring.md, Question scores): multiple choice and judgment — the exact letter after robust extraction (no
random fallback); accuracy over all rotations, at rotation 0, and CircularEval (right under every rotation), beside its
chance rate; numeric — mean relative accuracy (MRA, thresholds 0.50…0.95), δ=2 accuracy and the median relative error.
Exit status: 0 every answer scored, 1 some answers failed (API errors: rerun to retry), 2 bad input.

Examples:
  spatialact questions build --out questions/q.jsonl --n 4
  spatialact questions build --out questions/tum.jsonl --trajectory cam.txt --types relative_pose,task_flow
  spatialact questions build --out questions/game.jsonl --trajectory map01/ --n 2
  spatialact questions build --out questions/droid.jsonl --trajectory droid_1.0.1/ --episode 3
  spatialact questions score questions/q.jsonl --agent oracle --out runs/q-oracle
  spatialact questions score questions/q.jsonl --agent openai --agent-arg model=gpt-4o --out runs/q-gpt4o
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from .main import count_arg, print_json, seed_arg


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    b = sub.add_parser("build", help="generate a question file from simulator renders",
                       description="Generate questions with exact answers from procedural rooms or a replayed camera "
                                   "path (needs the sim extra: PyBullet).")
    b.add_argument("--out", required=True, metavar="FILE", help="question file to write (.jsonl); with --suite, the "
                                                                  "folder the suite's question track is rendered into")
    b.add_argument("--suite", default=None, choices=["l4-v1"],
                   help="render the frozen suite's question track (176 questions; its images, about 75 MB, are "
                        "rendered here with tiny at 384 px and checked against the suite's card) into the folder "
                        "--out, and write nothing else; the other options do not apply")
    b.add_argument("--n", type=count_arg(1, 10_000), default=4, help="questions of every type and format (default 4)")
    b.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    b.add_argument("--types", default=None, metavar="T1,T2",
                   help="question types (default all): relative_pose, primitive, fov, depth, relative_depth, "
                        "distance, tracking, task_flow")
    b.add_argument("--trajectory", metavar="FILE", default=None,
                   help="a recording asked on its own frames, poses, intrinsics (and depth): a game trajectory "
                        "folder, a DROID episode (LeRobot folder, --episode), an EgoDex .hdf5 with its .mp4; or a "
                        "camera path (TUM, KITTI, RealEstate10K, generic .npz/.json) replayed in a scene")
    b.add_argument("--format", default=None, help="trajectory format (default: guessed from the file)")
    b.add_argument("--entity", default=None, help="EgoDex: camera")
    b.add_argument("--episode", type=int, default=None, help="episode of a LeRobot (DROID) dataset (default: first)")
    b.add_argument("--camera", default=None,
                   help="DROID: the one camera whose frames and recorded poses are used (default: every camera "
                        "with a video and extrinsics)")
    b.add_argument("--scene", metavar="MESH", default=None,
                   help="with --trajectory: a mesh scene (.glb/.gltf/.obj/.ply) to replay in (default: a room "
                        "around the path)")
    b.add_argument("--max-keyframes", type=int, default=None, metavar="N",
                   help="with --trajectory: replay only the first N keyframes (one a second)")
    b.add_argument("--size", type=int, default=None,
                   help="image width in pixels (default 384; a recording's frames keep their recorded size)")
    b.add_argument("--renderer", choices=["tiny", "egl", "gl", "auto"], default=None,
                   help="renderer (default tiny: PyBullet's CPU renderer, the same images everywhere; not for a "
                        "recording, whose frames are not re-rendered)")
    from .runs import add_render_quality

    add_render_quality(b)
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    b.add_argument("--json", action="store_true", help="print JSON instead of a table")

    s = sub.add_parser("score", help="ask an agent the questions (or score a file of answers)",
                       description="Ask an agent every question (CircularEval over the option rotations) into a run "
                                   "directory, or score a JSONL of answers offline.")
    s.add_argument("questions", metavar="QUESTIONS", help="question file (JSONL, as written by questions build)")
    src = s.add_mutually_exclusive_group(required=True)
    src.add_argument("--agent", default=None,
                     help="openai (aliases mllm, api) | oracle | constant | random, or a plug-in agent with "
                          "answer(question): package.module:Class, path/to/agent.py:Class, an installed plug-in")
    src.add_argument("--answers", metavar="FILE", default=None,
                     help="score this JSONL of answers ({question_id, rotation, response}) instead of asking")
    s.add_argument("--agent-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="agent keyword argument, repeatable (e.g. model=gpt-4o, base_url=http://localhost:8000/v1; "
                        "constant: letter=B, number=2.0; random: seed=1); a secret is refused")
    s.add_argument("--out", metavar="PATH", default=None,
                   help="run directory (with --agent; required) or the scores file (with --answers; default "
                        "<answers>.scores.jsonl; - writes it to standard output, the summary then to stderr)")
    s.add_argument("--no-circular", action="store_true",
                   help="ask option questions under rotation 0 only (no CircularEval)")
    s.add_argument("--seed", type=seed_arg, default=None, help="run seed, part of the resume key (default 0)")
    s.add_argument("--limit", type=int, default=None, help="ask only the first N questions")
    from .eval import add_concurrency_arguments

    add_concurrency_arguments(s, "questions asked")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")


def _build_suite(args: argparse.Namespace) -> int:
    """``questions build --suite l4-v1 --out DIR``: the frozen question track, rendered and checked."""
    from spatialact.outputs import folder_for_work
    from spatialact.questions.suite import suite_questions

    from .main import CLIError, check_out

    check_out(args.out)
    with folder_for_work(args.out):
        try:
            path = suite_questions(args.out)
        except ValueError as e:
            raise CLIError(str(e)) from None
    if args.json:
        print_json({"out": str(path), "suite": args.suite})
    else:
        print(f"{args.suite} question track: {path} (checked against the suite's card); ask it with "
              f"spatialact questions score {path} --agent ... --out RUN_DIR")
    return 0


def _build(args: argparse.Namespace) -> int:
    from .main import CLIError, check_out
    from .table import format_table

    if args.suite is not None:
        return _build_suite(args)

    try:
        from spatialact.envs.rendering import render_quality_default
        from spatialact.questions.generate import build_questions, parse_types
    except ImportError as e:
        raise CLIError(f"questions build needs the simulator (pip install 'spatialact[sim]'): {e}") from None
    size = 384 if args.size is None else args.size
    if not 16 <= size <= 4096:
        raise CLIError(f"--size must be between 16 and 4096 pixels, got {size}")
    if args.max_keyframes is not None and args.max_keyframes < 2:
        raise CLIError(f"--max-keyframes must be at least 2, got {args.max_keyframes}")
    if args.trajectory is None:
        for opt, v in (("--scene", args.scene), ("--format", args.format), ("--entity", args.entity),
                       ("--max-keyframes", args.max_keyframes), ("--episode", args.episode),
                       ("--camera", args.camera)):
            if v is not None:
                raise CLIError(f"{opt} goes with --trajectory")
    types = None if args.types is None else parse_types(args.types)
    traj = None
    mesh = None
    if args.trajectory is not None:
        traj, mesh = _trajectory(args)
    out = check_out(args.out, folder=False)
    from spatialact.outputs import check_output_beside, folder_for_work

    # a character device is refused here, before any work: the images would have no folder beside it
    check_output_beside(out, out.parent / f"{out.stem}_images")
    # by the output rule: a dangling link above the file makes the folder it names; a build that fails removes it
    with folder_for_work(out.parent), render_quality_default(args.render_quality):  # the worlds draw at it
        res = build_questions(out, n=args.n, seed=args.seed, types=types, trajectory=traj, mesh=mesh,
                              max_keyframes=args.max_keyframes, renderer=args.renderer or "tiny", size=size,
                              progress=not args.no_progress and sys.stderr.isatty(), camera=args.camera)
    counts: dict = {}
    for q in res.questions:
        k = (q["type"], q["format"])
        counts[k] = counts.get(k, 0) + 1
    if args.json:
        print_json({"out": str(res.path), "n": len(res.questions), "ids": [q["id"] for q in res.questions],
                    "skipped": res.skipped})
        return 0
    rows = [[t, f, c] for (t, f), c in counts.items()]
    print(format_table(rows, ["type", "format", "questions"],
                       title=f"{len(res.questions)} questions → {res.path}  (images: {out.stem}_images/)"))
    for k, v in res.skipped.items():
        print(f"spatialact questions: skipped {v} {k} question{'s' * (v != 1)}: no scene could give one",
              file=sys.stderr)
    return 0


def _trajectory(args: argparse.Namespace):
    """(the trajectory of ``--trajectory``, the mesh of ``--scene``); options that a recording (asked on its own
    frames: game, DROID, EgoDex with its video) does not take are refused in one line."""
    from spatialact.questions.recorded import is_recording
    from spatialact.trajectories import load_trajectory

    from .main import CLIError
    from .tasks import scene_file

    options = {"camera": args.camera} if args.camera is not None else {}
    if args.camera is not None and (args.format or "").lower() not in ("", "droid", "lerobot"):
        raise CLIError(f"--camera goes with a DROID episode, not --format {args.format}")
    traj = load_trajectory(args.trajectory, args.format, entity=args.entity, episode=args.episode, **options)
    if args.camera is not None and traj.meta.get("source") != "droid":
        raise CLIError(f"--camera goes with a DROID episode; {args.trajectory} is a {traj.meta.get('source')} "
                       "trajectory")
    if args.episode is not None and traj.meta.get("source") != "droid":
        raise CLIError(f"--episode goes with a LeRobot (DROID) dataset; {args.trajectory} is a "
                       f"{traj.meta.get('source')} trajectory")
    if is_recording(traj):
        quality = None if args.render_quality == "default" else args.render_quality
        for opt, v in (("--scene", args.scene), ("--size", args.size), ("--renderer", args.renderer),
                       ("--render-quality", quality)):
            if v is not None:
                raise CLIError(f"{opt}: {args.trajectory} is a {traj.meta.get('source')} recording, asked on its "
                               "own frames (not re-rendered, at their recorded size)")
    return traj, scene_file(args.scene)


def question_images_problem(questions, size_only: bool = False) -> str | None:
    """The first image a question names that cannot be sent (one line naming the question, the field and the
    file), or None: a regular image file of at most ``spatialact.image_files.MAX_IMAGE_PIXELS`` whose pixels
    decode (``size_only``: the limit alone, read from the header). Without Pillow the images are not read here
    (PNGs are then sent as their bytes, after the question prompt's own structure check)."""
    import importlib.util

    if importlib.util.find_spec("PIL") is None:
        return None
    from spatialact.image_files import image_file_problem, image_size_problem

    for q in questions:
        for im in q.get("images") or ():
            problem = image_size_problem(im["path"]) if size_only else image_file_problem(im["path"])
            if problem:
                return f"question {q['id']!r}: field 'images': {im['path']}: {problem}"
    return None


def _score(args: argparse.Namespace) -> int:
    from .main import CLIError

    if args.limit is not None and args.limit < 0:
        raise CLIError(f"--limit must be 0 or more, got {args.limit}")
    if args.answers is not None:
        return _score_answers(args)
    return _score_agent(args)


def _say_notes(qf) -> None:
    """One line on stderr when the question file was read other than as written (numeric answers given as text)."""
    if qf.notes:
        more = f" (and {len(qf.notes) - 1} more)" if len(qf.notes) > 1 else ""
        print(f"spatialact questions: note: {qf.notes[0]}{more}", file=sys.stderr)


def _score_answers(args: argparse.Namespace) -> int:
    """``--answers FILE``: score a file of answers offline."""
    from spatialact.outputs import output_path
    from spatialact.questions import load_question_file, score_answers_file

    from .main import CLIError, check_out

    for opt, given in (("--agent-arg", bool(args.agent_arg)), ("--limit", args.limit is not None),
                       ("--no-circular", args.no_circular), ("--seed", args.seed is not None)):
        if given:
            raise CLIError(f"{opt} goes with --agent, not --answers (an answers file is scored as it is)")
    from spatialact.jsonline import check_input

    check_input(args.answers, "answers file", CLIError)  # a regular file: a FIFO would block, /dev/zero never end
    qf = load_question_file(args.questions)
    _say_notes(qf)
    questions = list(qf.questions)
    # the default scores file is checked as --out is: by the output rule, before any work
    option = "--out" if args.out else "scores file (default; choose with --out)"
    out = check_out(args.out or Path(args.answers).with_name(Path(args.answers).name + ".scores.jsonl"), option,
                    folder=False, stdout=True)
    if str(out) != "-" and out.resolve() in (Path(args.answers).resolve(), Path(args.questions).resolve()):
        raise CLIError(f"{option} {out} would overwrite an input file")
    with output_path(out, option, stdout=True) as scratch:
        res = dict(score_answers_file(questions, args.answers, scratch), out=str(out))
    if str(out) == "-":  # standard output holds the scores: the summary goes to stderr
        with contextlib.redirect_stdout(sys.stderr):
            _show_scores(args, questions, res)
    else:
        _show_scores(args, questions, res)
    return 0


def _show_scores(args: argparse.Namespace, questions: list, res: dict) -> None:
    """The summary of an answers file scored: a table and the counts (--json: the summary as JSON)."""
    from spatialact.questions.scoring import summary_rows

    from .table import format_table

    if args.json:
        print_json(res, ensure_ascii=False)
        return
    headers, rows = summary_rows(res["summary"])
    print(format_table(rows, headers, title=f"answers {args.answers} · {len(questions)} questions"))
    c = res["counts"]
    print(f"\nlines {c['lines']}, scored {c['scored']}; invalid_json {c['invalid_json']}, invalid_line "
          f"{c['invalid_line']}, unknown_question {c['unknown_question']}; duplicates {c['duplicates']}; "
          f"questions without an answer {c['unanswered']}\nper-answer scores: {res['out']}")


def _answerer(args: argparse.Namespace):
    """(answerer, its name, its keyword arguments) for ``--agent``: built — name, options and API key checked —
    before the question file is read."""
    from spatialact.agents import AgentConfigError
    from spatialact.questions.run import make_answerer

    from .main import CLIError
    from .runs import parse_agent_args

    kwargs = parse_agent_args(args.agent_arg)
    try:
        probe = make_answerer(args.agent, **kwargs)  # validates name and arguments before anything is written
    except AgentConfigError as e:
        raise CLIError(str(e)) from None
    name = probe.describe().get("agent") or args.agent
    if name == "openai" and "cache_dir" not in kwargs:
        # answers are cached by default (a rerun does not pay twice), inside the run, as for eval
        kwargs = dict(kwargs, cache_dir=str(Path(args.out) / "cache"))
        probe = make_answerer(args.agent, **kwargs)
    return probe, name, kwargs


def _score_agent(args: argparse.Namespace) -> int:
    """``--agent NAME``: ask an agent every question, into a run directory."""
    from spatialact.agents import recorded_agent_args
    from spatialact.questions import load_question_file
    from spatialact.questions.run import check_question_inputs

    from .main import CLIError, check_out

    if args.out is None:
        raise CLIError("--out RUN_DIR is required with --agent (the run directory the answers are written to)")
    check_out(args.out)
    seed = 0 if args.seed is None else args.seed
    probe, name, kwargs = _answerer(args)
    qf = load_question_file(args.questions)
    _say_notes(qf)
    questions = list(qf.questions)
    asked = questions[:args.limit] if args.limit is not None else questions
    problem = question_images_problem(asked, size_only=True)  # before any reader decodes a bomb
    if problem:
        raise CLIError(problem)
    check_question_inputs(asked)  # missing files, files that are no image (its own messages)
    problem = question_images_problem(asked)  # then every image's pixels
    if problem:
        raise CLIError(problem)
    config = {"command": "questions", "questions": str(args.questions), "questions_sha256": qf.sha256,
              "agent": name, "agent_args": recorded_agent_args({k: v for k, v in kwargs.items() if k != "cache_dir"}),
              "seed": seed, "circular": not args.no_circular, "limit": args.limit}
    plugin = getattr(probe, "plugin", None)  # a plug-in agent: its name and, for a file, the file's SHA-256
    if plugin is not None:
        config["agent_plugin"] = plugin.spec
        if plugin.sha256:
            config["agent_plugin_sha256"] = plugin.sha256
    from spatialact.outputs import folder_for_work

    with folder_for_work(args.out):  # by the output rule; a refusal in the run's checks removes the folder again
        return _score_run(args, questions, probe, seed, qf, config, name)


def _score_run(args, questions, probe, seed, qf, config, name: str) -> int:
    from spatialact.evaluation.results import RunStoreError
    from spatialact.evaluation.runner import EndpointUnreachable
    from spatialact.questions.run import run_questions
    from spatialact.questions.scoring import summary_rows

    from .main import CLIError
    from .table import format_table

    try:
        res = run_questions(questions, probe, args.out, seed=seed, circular=not args.no_circular,
                            question_file=args.questions, question_sha=qf.sha256, config=config,
                            progress=not args.no_progress and sys.stderr.isatty(), limit=args.limit,
                            concurrency=args.concurrency, max_rpm=args.max_rpm, max_tpm=args.max_tpm)
    except (RunStoreError, EndpointUnreachable) as e:
        raise CLIError(str(e)) from None
    except PermissionError as e:
        raise CLIError(f"{e.filename or args.out}: {e.strerror or e}") from None
    n_fail = sum(res.failures.values())
    if args.json:
        print_json({"run_dir": str(res.run_dir), "new": res.n_new, "skipped": res.n_skipped,
                    "failures": res.failures, "summary": res.summary, "concurrency": res.concurrency,
                    "figures": res.figures}, ensure_ascii=False)
    else:
        headers, rows = summary_rows(res.summary)
        print(format_table(rows, headers, title=f"{name} · questions · {args.questions}"
                                                + ("" if args.no_circular else " · CircularEval over all rotations")))
        print(f"\n{res.n_new} answers asked, {res.n_skipped} already done; results: "
              f"{res.run_dir / 'results.jsonl'}")
        if res.n_new and (res.concurrency > 1 or res.figures.get("requests")):
            from spatialact.evaluation.progress import format_figures

            print(format_figures(res.figures, unit="answers"))
    if n_fail:
        print(f"spatialact questions: {n_fail} answer{'s' * (n_fail != 1)} failed (api_error): no score recorded; "
              "rerun the same command to ask them again", file=sys.stderr)
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    return _build(args) if args.action == "build" else _score(args)
