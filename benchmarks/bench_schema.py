"""Checking task records against the task schema: the project's compiled checker beside the two libraries.

One run, side by side, on the same 1,000 task records: the frozen suite's tasks as the project's task generators
built them (``src/spatialact/data/suites/l4-v1.jsonl``: navigation, manipulation, hand, game and camera tracks, ~2 KB
a line), every 1.7th line so that every track is in, parsed once. Validated by

* ``spatialact``: :func:`spatialact.schema_compiler.compile_schema` (``.is_valid``, the generated predicate every
  record takes; the loader asks nothing more of a valid record);
* ``jsonschema``: ``Draft202012Validator(schema)``, made once, ``.is_valid`` (a dependency of the project already;
  it also says why a record is invalid, which is the compiler's slow path);
* ``fastjsonschema``: ``fastjsonschema.compile(schema)``, made once. Not a dependency of spatialact (``nbformat``,
  of the ``dev`` extra, brings it into a development venv); its row is left out, with a note, when it is not
  importable (for a throwaway copy: ``pip install --target /tmp/fjs fastjsonschema``, then run with
  ``PYTHONPATH=/tmp/fjs``).

Then the probes: records each wrong in one way the shipped schemas care about (a NaN, a missing field that
``dependentRequired`` asks for, a malformed id whose ``errorMessage`` says what an id is), and what each validator
says of them; and the cost of saying why, on 200 invalid records. Best of several passes, in CPU time of this
process (the machine may be shared); compare the ratios. Not part of the test suite.

Usage: python benchmarks/bench_schema.py [--n 1000] [--quick]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from importlib import resources
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import best, record  # noqa: E402

import jsonschema  # noqa: E402

from spatialact.schema_compiler import compile_schema, format_path  # noqa: E402
from spatialact.tasks import task_schema  # noqa: E402

SUITE = "data/suites/l4-v1.jsonl"


def suite_records(n: int) -> list[dict]:
    """``n`` records spread evenly over the frozen suite file (deterministic: the file is shipped)."""
    lines = resources.files("spatialact").joinpath(SUITE).read_text(encoding="utf-8").splitlines()
    if n > len(lines):
        raise SystemExit(f"bench_schema: --n {n}: the suite has {len(lines)} tasks")
    return [json.loads(lines[i * len(lines) // n]) for i in range(n)]


def probes(base: dict) -> list[tuple[str, dict]]:
    """One record per way of being wrong, each made from a valid record; every probe is checked below to be
    invalid for the reason named (jsonschema's verdict, or the JSON text for the NaN)."""
    nan = copy.deepcopy(base)
    nan["success"]["position"] = float("nan")
    dep = copy.deepcopy(base)
    dep["schema_version"] = 1  # version 2 would also require the names (a plain "required")
    del dep["gt"]["steps"][0]["actions"]  # step_nums without the actions it counts: dependentRequired
    bad_id = copy.deepcopy(base)
    bad_id["id"] = "evil\nid"
    return [("NaN in success.position", nan), ("step_nums without actions (dependentRequired)", dep),
            ("id with a newline (errorMessage)", bad_id)]


def error_message_texts() -> dict[str, int]:
    """How many ``errorMessage`` texts each shipped schema holds."""
    def count(node) -> int:
        if isinstance(node, list):
            return sum(count(x) for x in node)
        if not isinstance(node, dict):
            return 0
        em = node.get("errorMessage")
        own = 1 if isinstance(em, str) else len(em) if isinstance(em, dict) else 0
        return own + sum(count(v) for k, v in node.items() if k != "errorMessage")
    out = {}
    for f in sorted(resources.files("spatialact").joinpath("schemas").iterdir(), key=lambda p: p.name):
        if f.name.endswith(".schema.json"):
            out[f.name] = count(json.loads(f.read_text(encoding="utf-8")))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="task records (default 1000)")
    ap.add_argument("--quick", action="store_true", help="fewer passes")
    args = ap.parse_args()
    repeats = 3 if args.quick else 7

    schema = task_schema()
    recs = suite_records(args.n)
    ours = compile_schema(schema)
    reference = jsonschema.Draft202012Validator(schema)
    try:
        import fastjsonschema
        fast = fastjsonschema.compile(schema)
        fast_version = fastjsonschema.VERSION
    except ImportError:
        fast = None
    assert all(ours.is_valid(r) for r in recs) and all(reference.is_valid(r) for r in recs)

    def run_fast():
        for r in recs:
            fast(r)  # raises on an invalid record

    rows = [("spatialact compiled predicate", best(lambda: [ours.is_valid(r) for r in recs], repeats)),
            (f"jsonschema {jsonschema_version()} Draft202012Validator", best(lambda: [reference.is_valid(r)
                                                                                      for r in recs], repeats))]
    if fast is not None:
        rows.append((f"fastjsonschema {fast_version} compile()", best(run_fast, repeats)))
    t_ours = rows[0][1]
    size = sum(len(json.dumps(r)) for r in recs) / len(recs)
    print(f"{len(recs)} task records of the frozen suite l4-v1 ({size / 1e3:.1f} KB a line on average), valid; "
          f"best of {repeats} passes, CPU time")
    print(f"\n{'validator (yes/no)':44s} {f'ms, {len(recs)} tasks':>14s} {'tasks/s':>9s} {'time vs spatialact':>19s}")
    for name, t in rows:
        print(f"{name:44s} {t * 1e3:14.1f} {len(recs) / t:9,.0f} {t / t_ours:18.1f}x")
    if fast is None:
        print("fastjsonschema: not importable here, row left out (pip install --target /tmp/fjs fastjsonschema; "
              "PYTHONPATH=/tmp/fjs)")
    anchor = "jsonschema Draft202012Validator.is_valid, compiled once"
    record("bench_schema.py", "task schema check (yes/no), frozen-suite records", len(recs) / t_ours, "tasks/s",
           anchor=anchor, anchor_value=len(recs) / rows[1][1])
    if fast is not None:
        record("bench_schema.py", "task schema check (yes/no), frozen-suite records", len(recs) / t_ours, "tasks/s",
               anchor=f"fastjsonschema {fast_version} compile()", anchor_value=len(recs) / rows[2][1])
    say_probes(recs[0], ours, reference, fast)
    say_why(recs, ours, reference, repeats)


def jsonschema_version() -> str:
    from importlib.metadata import version
    return version("jsonschema")


def say_probes(base: dict, ours, reference, fast) -> None:
    """What each validator says of each probe: caught (and its first message) or accepted."""
    print("\nprobes (each record wrong in one way):")
    for name, rec in probes(base):
        print(f"  {name}")
        problems = ours.problems(rec)
        print(f"    {'spatialact':15s} " + (f"caught: field '{format_path(problems[0][0])}': {problems[0][1]}"
                                               if problems else "ACCEPTED"))
        errors = list(reference.iter_errors(rec))
        print(f"    {'jsonschema':15s} " + (f"caught: {errors[0].message}" if errors else "ACCEPTED"))
        if fast is None:
            continue
        try:
            fast(rec)
            said = "ACCEPTED"
        except Exception as e:  # fastjsonschema.JsonSchemaValueException
            said = f"caught: {e}"
        print(f"    {'fastjsonschema':15s} {said}")
    texts = error_message_texts()
    print(f"  errorMessage texts in the shipped schemas: {sum(texts.values())} "
          f"({', '.join(f'{k} {v}' for k, v in texts.items())}); said by spatialact only (the libraries print "
          f"their own sentences, as above)")


def say_why(recs: list[dict], ours, reference, repeats: int) -> None:
    """The cost of saying why: 200 records each with one bound broken, every problem listed."""
    bad = []
    for i, r in enumerate(recs[:200]):
        b = copy.deepcopy(r)
        b["success"]["position"] = -1.0 - i
        bad.append(b)
    t_ours = best(lambda: [ours.problems(b) for b in bad], repeats)
    t_ref = best(lambda: [list(reference.iter_errors(b)) for b in bad], repeats)
    print(f"\nsaying why (once per refused file), {len(bad)} invalid records (success.position < 0), every problem:")
    print(f"  spatialact problems() (predicate, then jsonschema, then one line each) {t_ours / len(bad) * 1e6:8.0f} "
          f"µs/record")
    print(f"  jsonschema iter_errors()                                              {t_ref / len(bad) * 1e6:8.0f} "
          f"µs/record")


if __name__ == "__main__":
    main()
