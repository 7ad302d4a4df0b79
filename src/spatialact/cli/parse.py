"""Show what a model answer parses to: its steps, the rigid motion of each step and the repairs made.

ANSWER is a file path, '-' for standard input, or the answer text itself. Exit status 0 when the answer has a
usable step, 1 when it has none (lenient) or is rejected (--strict), 2 on bad arguments or an unreadable file
(a folder, a FIFO, a device — only a regular file is read —, not UTF-8, no permission, or a path-like ANSWER that
names no file).
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from ..vocab import KINDS
from .main import print_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("answer", metavar="ANSWER", help="answer file, '-' for stdin, or the answer text")
    p.add_argument("--strict", action="store_true", help="reject anything that would need a repair")
    p.add_argument("--kind", choices=KINDS, default="nav",
                   help="task kind: picks the default unit step sizes (default: nav)")
    p.add_argument("--translation", type=float, default=None, metavar="M",
                   help="unit translation step in metres (default: the kind's)")
    p.add_argument("--rotation", type=float, default=None, metavar="RAD",
                   help="unit rotation step in radians (default: the kind's)")
    p.add_argument("--cap", type=int, default=10, help="largest count of one primitive in one step (default 10)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")


def _bounded_text(f, label: str) -> str:
    """At most :data:`spatialact.jsonline.MAX_LINE_BYTES` (16 MiB, the longest answer line a file may hold) of a
    binary stream as UTF-8 text with universal newlines (as a text-mode read gives); a longer stream
    (``/dev/zero``, a runaway pipe) is refused in one line without being held in memory."""
    from spatialact.jsonline import MAX_LINE_BYTES

    data = f.read(MAX_LINE_BYTES + 1)
    if len(data) > MAX_LINE_BYTES:
        raise ValueError(f"{label}: longer than {MAX_LINE_BYTES >> 20} MiB, the longest answer parse reads "
                         f"(jsonline.MAX_LINE_BYTES)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{label}: not UTF-8 text (byte {e.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_answer(arg: str) -> str:
    """The answer text: standard input for '-', a file's contents when ARG names one, else ARG itself.

    Raises ValueError (exit 2, one line naming the file) for a file that cannot be read or is not UTF-8 text,
    and for an ARG that looks like a path (no space or JSON bracket; a '/' or a file extension) but names nothing:
    such text could never parse, so a typo in a file name should not pass for an unusable answer.
    (ValueError rather than CLIError: under ``python -m spatialact.cli.main`` the CLIError that main() catches
    is ``__main__.CLIError``, a different class from the one this module could import.)
    """
    from spatialact.jsonline import open_input

    if arg == "-":
        return _bounded_text(sys.stdin.buffer, "standard input")
    if os.path.lexists(arg):  # a regular file only: a FIFO, a device, a socket or a folder is refused unopened
        if os.path.isdir(arg):
            raise ValueError(f"{arg}: is a directory, not an answer file")
        with open_input(arg, "answer file", ValueError) as f:
            return _bounded_text(f, arg)
    looks_like_path = (re.search(r"[\s{\[]", arg) is None
                       and ("/" in arg or os.sep in arg or re.search(r"\.[A-Za-z]\w{0,4}$", arg) is not None))
    if looks_like_path:
        raise ValueError(f"{arg}: no such answer file")
    return arg


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from spatialact.action_space import ParseError, StepSizes, parse_response

    from .table import format_table

    if args.cap < 0:
        raise ValueError(f"--cap must be a non-negative integer, got {args.cap}")
    base = StepSizes.for_kind(args.kind)
    sizes = StepSizes(base.translation if args.translation is None else args.translation,
                      base.rotation if args.rotation is None else args.rotation)
    text = read_answer(args.answer)
    try:
        res = parse_response(text, strict=args.strict, sizes=sizes, cap=args.cap)
    except ParseError as e:
        if args.json:
            print_json({"ok": False, "error": str(e)})
        else:
            print(f"rejected (strict): {e}")
        return 1
    seq = res.sequence
    deltas = seq.to_deltas()
    if args.json:
        out = res.to_dict()
        # readable per-step view beside the lossless record: motion is (tx, ty, tz, tilt, pan, roll), m and rad
        out["steps"] = [{"step": k + 1,
                         "actions": None if st.is_vector else {p.value: n for p, n in st.as_actions()},
                         "motion": [float(x) for x in m], "gripper": st.gripper}
                        for k, (st, m) in enumerate(zip(seq.steps, seq.as_motions()))]
        out["deltas"] = deltas.tolist()
        print_json(out, ensure_ascii=False, indent=1)
        return 0 if res.ok else 1
    if not res.ok:
        print(f"no usable step: {res.error}")
    else:
        print(f"format: {res.format}   steps: {len(seq)}   sizes: {sizes.translation:g} m, "
              f"{sizes.rotation:g} rad   cap: {args.cap}")
        rows = []
        for k, (step, m) in enumerate(zip(seq.steps, seq.as_motions())):
            acts = ("vector" if step.is_vector else
                    ", ".join(f"{p.value}×{n}" for p, n in step.as_actions()) or "Stay")
            rows.append([k + 1, acts, *[float(x) for x in m], "" if step.gripper is None else step.gripper])
        print(format_table(rows, ["step", "actions", "tx m", "ty m", "tz m", "tilt", "pan", "roll", "grip"]))
        with np.printoptions(precision=4, suppress=True):
            for k, d in enumerate(deltas):
                print(f"\nΔ step {k + 1} (body frame: +X right, +Y down, +Z forward):\n{d}")
    if res.repairs:
        print("\nrepairs:")
        for r in res.repairs:
            print(f"  - {r}")
    return 0 if res.ok else 1
