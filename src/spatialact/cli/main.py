"""The ``spatialact`` command. Subcommands load lazily, so ``spatialact parse`` never imports a simulator.

Each subcommand is a module ``spatialact.cli.<name>`` with ``add_arguments(parser)`` and ``run(args) -> int``;
those modules import their heavy dependencies inside ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

# name -> (module, one-line help). Order is the order of `spatialact --help`.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("spatialact.cli.demo", "run the main job on the built-in default and write a report"),
    "eval": ("spatialact.cli.eval", "run tasks x agent x environment (one-shot or closed-loop); resumable"),
    "score": ("spatialact.cli.score", "score a JSONL of model answers against a JSONL of tasks, offline"),
    "report": ("spatialact.cli.report", "write a Markdown + HTML report for one or more run directories"),
    "leaderboard": ("spatialact.cli.leaderboard", "rank runs of one suite by skill: Markdown, HTML and CSV from rows"),
    "prompt": ("spatialact.cli.prompt", "print the exact prompt (and write the images) an agent receives"),
    "tasks": ("spatialact.cli.tasks", "build task files: from a trajectory, or procedural scenes"),
    "extract": ("spatialact.cli.extract", "turn a trajectory file into the paper's action sequence"),
    "replay": ("spatialact.cli.replay", "replay a trajectory in its simulated scene: recorded | simulated video"),
    "parse": ("spatialact.cli.parse", "show what a model answer parses to: steps, rigid motions, repairs"),
    "agents": ("spatialact.cli.agents", "list the agents and the options each takes (--agent-arg)"),
    "questions": ("spatialact.cli.questions", "generated questions with exact answers: build a question file, score "
                                              "answers (CircularEval)"),
    "export": ("spatialact.cli.export", "write tasks for another tool: an lmms-eval task folder (one task per track)"),
    "game": ("spatialact.cli.game", "Doom levels: record a deterministic walk as a game trajectory (needs the game "
                                    "extra)"),
}

DESCRIPTION = """\
spatialact: simulate and score the agentic competence of multimodal LLMs (SpatialTree L4).

A model sees a start view and a goal view and answers with a JSON list of camera moves (truck, dolly,
pedestal, pan, tilt, roll), gripper states and hand gestures; spatialact turns the words into rigid
motions, runs them in Gymnasium environments and scores each step against ground truth.

Frames: world +Z up; camera +X right, +Y down, +Z forward; poses camera-to-world; metres and radians.
"""


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


MAX_SEED = 2 ** 32 - 1


def count_arg(lo: int, hi: int, name: str = "count", hi_text: str | None = None):
    """argparse type of a whole-number option (``--n``, ``--seed``): from ``lo`` to ``hi`` (shown as ``hi_text``,
    default with thousands separators); argparse names the option in the error."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{text[:40]} is not between {lo} and {hi_text or f'{hi:,}'}")
        return v

    parse.__name__ = name
    return parse


#: argparse type of every ``--seed``: a whole number from 0 to 2^32 − 1.
seed_arg = count_arg(0, MAX_SEED, "seed", str(MAX_SEED))


def printable(text) -> str:
    """``text`` for a terminal: every character that is not printable (C0 and C1 controls such as ESC, newlines,
    DEL, bidirectional overrides, other format characters) shown as its Python escape (``\\x1b``, ``\\n``,
    ``\\u202e``), so untrusted text (an instruction read from a file) cannot move the cursor, recolour the terminal
    or split a line. One pass, linear in the length. ``--json`` output keeps the text exact instead."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def print_json(obj, **kwargs) -> None:
    """Print ``obj`` as strict JSON (NaN and ±inf as null: :func:`spatialact.jsonline.strict_json`), the one way
    every ``--json`` output is written."""
    import json

    from spatialact.jsonline import strict_json

    print(json.dumps(strict_json(obj), allow_nan=False, **kwargs))


def check_out(path, option: str = "--out", folder: bool = True, stdout: bool = False) -> Path:
    """``path`` as a Path, or CLIError (one line naming ``option``) when the output rule of
    :mod:`spatialact.outputs` refuses it as a folder (``folder``) or a file: a FIFO, a socket, a block device, a
    file where a folder is wanted or the reverse, a path under a file, a read-only file or folder, a folder that
    cannot be written in. ``stdout``: ``-`` names standard output (a command that writes a single file). Checked
    before any work; nothing is created."""
    from spatialact.outputs import OutputError, check_output

    try:
        return check_output(path, option, "folder" if folder else "file", stdout=stdout)
    except OutputError as e:
        raise CLIError(str(e)) from None


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors in one line (exit 2), as every other refusal, pointing at --help instead of
    printing the usage block. Subparsers are of this class too (argparse makes them of the parent's class)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"spatialact: warning: {' '.join(str(message).split())}\n"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = _Parser(prog="spatialact", description=DESCRIPTION,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    from spatialact import __version__

    parser.add_argument("--version", action="version", version=f"spatialact {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if name == only:
            mod = importlib.import_module(module)
            if mod.__doc__:
                p.description = mod.__doc__
            mod.add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    import warnings

    warnings.formatwarning = _one_line_warning  # a notice such as a cut-off last line of a run: one line
    name = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(only=name if name in SUBCOMMANDS else None)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    mod = importlib.import_module(SUBCOMMANDS[args.command][0])
    try:
        return int(mod.run(args) or 0)
    except (CLIError, FileNotFoundError, ValueError, KeyError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else e.__class__.__name__
        print(f"spatialact {args.command}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"spatialact {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `spatialact ... | head`: the reader left; not an error of ours
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy: subcommands raise spatialact.cli.main.CLIError,
    # which is a different class from __main__.CLIError.
    from spatialact.cli.main import main as _main

    sys.exit(_main())
