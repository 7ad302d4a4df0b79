"""docs/reliability.md cannot drift from the code and the tests it describes.

* Every row of its limits table names where the limit lives: a constant (``module.NAME``, imported here and
  compared with the number the row states) or a function whose bound is a literal in the code (checked here by
  calling it just inside and just past the documented bound). A row that names neither fails.
* Its table of hostile tests counts pytest items: :data:`CATEGORIES` says which test files (or which tests of a
  file) make each category (:data:`INPUT_CATEGORIES` those of the section on nodes, nesting and the cache); ``pytest --collect-only`` must find at least the doc's count in each (so a removed or
  renamed hostile test, or a file that no longer exists, fails here; a test added to one of these files keeps the
  doc true, as "at least"). ``python tests/docs/test_reliability_doc.py`` prints the table's rows to paste.
"""

from __future__ import annotations

import importlib
import inspect
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reliability.md"

#: The categories of the doc's table, in its order: (name, [(test file, node-name substring or None)]). A pytest
#: item belongs to the first category with a matching entry (a substring of its name after ``::``).
CATEGORIES = [
    ("Outputs and nodes", [("core/test_outputs.py", None), ("cli/test_outputs_commands.py", None),
                           ("cli/test_out_paths.py", None)]),
    ("Hostile server", [("agents/test_hostile_server.py", None)]),
    ("Failing server, secrets, run integrity", [("evaluation/test_run_integrity.py", None),
                                                ("agents/test_openai_agent.py", "error"),
                                                ("agents/test_openai_agent.py", "retried"),
                                                ("agents/test_openai_agent.py", "timeout"),
                                                ("agents/test_openai_agent.py", "scrubbed"),
                                                ("agents/test_openai_agent.py", "refused"),
                                                ("questions/test_scoring.py", "api_errors"),
                                                ("questions/test_scoring.py", "unreachable")]),
    ("Kill and resume", [("evaluation/test_runner.py", "killed"), ("evaluation/test_results.py", "killed"),
                         ("evaluation/test_results.py", "truncated_last_line"), ("evaluation/test_results.py", "second_writer"),
                         ("envs/doom/test_worker_crash.py", None)]),
    ("Foreign records", [("evaluation/test_run_identity.py", None), ("evaluation/test_results.py", "foreign")]),
    ("Limits, counted", [("cli/test_score_limits.py", None), ("cli/test_prompt_matches_eval.py", "bounded")]),
    ("Hostile answers", [("action_space/test_parsing_worst_case.py", None), ("action_space/test_parsing_fuzz.py", None),
                         ("questions/test_minus.py", None), ("questions/test_scoring.py", "adversarial")]),
    ("Corrupt inputs", [("evaluation/test_run_inputs.py", None), ("trajectories/test_errors.py", None),
                        ("envs/test_scene_errors.py", None), ("cli/test_prompt_matches_eval.py", "bad_task_images"),
                        ("cli/test_score.py", "bad_inputs"), ("cli/test_score.py", "not_a_file"),
                        ("cli/test_score.py", "name_no_task"), ("evaluation/test_results.py", "corrupt"),
                        ("envs/doom/test_wad.py", None)]),
    ("Nodes, nesting, the cache", [("cli/test_inputs_checked.py", None)]),
    ("Hostile options", [("cli/test_refusals.py", None), ("cli/test_extract.py", "unit_steps"),
                         ("agents/test_options.py", None), ("scorers/test_offline.py", "bad_parameters")]),
    ("Half-built outputs", [("cli/test_extract.py", "leaves_nothing")]),
    ("Markup injection", [("report/test_report.py", "escaping"), ("cli/test_extract.py", "escapes_control"),
                          ("report/test_document.py", "agree"), ("scorers/test_offline.py", "strict_json"),
                          ("cli/test_score.py", "strict_json")]),
]

#: The categories of the table of "Hostile inputs: nodes, nesting, the cache" (the items of cli/test_inputs_checked.py,
#: the main table's row "Nodes, nesting, the cache"), in its order, matched as :data:`CATEGORIES` are.
INPUT_CATEGORIES = [
    ("Nodes as inputs", [("cli/test_inputs_checked.py", "score_refuses_answers_and_tasks"),
                         ("cli/test_inputs_checked.py", "hierarchy_file_that_is_no_regular_file"),
                         ("cli/test_inputs_checked.py", "eval_refuses_a_task_file"),
                         ("cli/test_inputs_checked.py", "questions_score_refuses"),
                         ("cli/test_inputs_checked.py", "parse_refuses_a_file"),
                         ("cli/test_inputs_checked.py", "recording_file_that_is_no_regular_file"),
                         ("cli/test_inputs_checked.py", "made_a_fifo_after_loading"),
                         ("cli/test_inputs_checked.py", "run_lock_that_is_no_regular_file")]),
    ("Nesting", [("cli/test_inputs_checked.py", "nested"), ("cli/test_inputs_checked.py", "json_depth"),
                 ("cli/test_inputs_checked.py", "check_depth")]),
    ("The cache", [("cli/test_inputs_checked.py", "read_entry"), ("cli/test_inputs_checked.py", "task_verdict"),
                   ("cli/test_inputs_checked.py", "response_cache_entries"),
                   ("cli/test_inputs_checked.py", "texture_or_mesh_cache")]),
    ("Messages and leftovers", [("cli/test_inputs_checked.py", "written_as_a_float"),
                                ("cli/test_inputs_checked.py", "written_as_text"),
                                ("cli/test_inputs_checked.py", "partial_folder"),
                                ("cli/test_inputs_checked.py", "small_recording_reads_back")]),
]


def collected_counts(categories=None) -> dict[str, int]:
    """Per category (of :data:`CATEGORIES`, or ``categories``), the pytest items of its files and names, as
    ``pytest --collect-only`` finds them."""
    categories = CATEGORIES if categories is None else categories
    files = sorted({f for _, entries in categories for f, _ in entries})
    missing = [f for f in files if not (ROOT / "tests" / f).is_file()]
    assert not missing, f"docs/reliability.md counts tests in files that do not exist: {missing}"
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        *[f"tests/{f}" for f in files]], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    counts = {name: 0 for name, _ in categories}
    for line in r.stdout.splitlines():
        if "::" not in line:
            continue
        path, _, name = line.partition("::")
        fname = Path(path).relative_to("tests").as_posix()
        for cat, entries in categories:
            if any(f == fname and (sub is None or sub in name) for f, sub in entries):
                counts[cat] += 1
                break
    return counts


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _table(title: str) -> list[list[str]]:
    """The rows (cells, stripped) of the first Markdown table after the heading ``title``."""
    text = _doc()
    start = text.index(title)
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif rows:
            break
    return rows[1:]  # without the header row


# ----- the hostile tests ----------------------------------------------------------------------------------------

def test_the_table_counts_the_tests_it_names():
    rows = _table("## The hostile tests")
    doc = {r[0]: r for r in rows}
    assert list(doc)[:len(CATEGORIES)] == [name for name, _ in CATEGORIES], "categories and their order"
    counts = collected_counts()
    for name, entries in CATEGORIES:
        cells = doc[name]
        assert int(cells[1]) <= counts[name], f"{name}: the doc says {cells[1]} cases, pytest collects only " \
                                              f"{counts[name]} (python tests/docs/test_reliability_doc.py)"
        for f, _ in entries:
            assert f"`{f[:-3]}`" in cells[2], f"{name}: the doc does not name {f}"
    total = doc["All"]
    assert int(total[1]) == sum(int(doc[name][1]) for name, _ in CATEGORIES)


def test_the_hostile_inputs_table_counts_its_tests():
    """The section on nodes, nesting and the cache: each category's count is collected at least, and they add up
    to the main table's row for the same file."""
    rows = {r[0]: r for r in _table("## Hostile inputs: nodes, nesting, the cache")}
    assert list(rows) == [name for name, _ in INPUT_CATEGORIES], "categories and their order"
    counts = collected_counts(INPUT_CATEGORIES)
    for name, _ in INPUT_CATEGORIES:
        assert int(rows[name][1]) <= counts[name], f"{name}: the doc says {rows[name][1]} cases, pytest collects " \
                                                   f"only {counts[name]} (python tests/docs/test_reliability_doc.py)"
    main = {r[0]: r for r in _table("## The hostile tests")}
    assert int(main["Nodes, nesting, the cache"][1]) == sum(int(rows[name][1]) for name, _ in INPUT_CATEGORIES)


# ----- the limits -----------------------------------------------------------------------------------------------

_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")
_UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
_NUMBER = re.compile(r"(10[⁰¹²³⁴⁵⁶⁷⁸⁹]+|π|\d[\d ,_]*(?:\.\d+)?)\s*(KiB|MiB|GiB)?")


def numbers(cell: str) -> list[float]:
    """The numbers a Value cell states, in order: ``16 MiB``, ``64 000 000``, ``10⁸``, ``π``, ``1,000``."""
    out = []
    for m in _NUMBER.finditer(cell):
        tok, unit = m.group(1), m.group(2)
        if tok == "π":
            v = math.pi
        elif tok.startswith("10") and tok[2:3] and tok[2] in "⁰¹²³⁴⁵⁶⁷⁸⁹":
            v = 10.0 ** int(tok[2:].translate(_SUPERSCRIPT))
        else:
            v = float(re.sub(r"[ ,_]", "", tok))
        out.append(v * _UNITS.get(unit, 1))
    return out


def _resolve(dotted: str):
    """``module.NAME`` under ``spatialact`` (the longest importable module prefix), and the attribute."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            mod = importlib.import_module("spatialact." + ".".join(parts[:i]))
        except ImportError:
            continue
        obj = mod
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(dotted)


def _refused(fn, *args, **kwargs) -> bool:
    try:
        fn(*args, **kwargs)
    except (ValueError, SystemExit):
        return True
    return False


def _cli(argv, capsys) -> tuple[int, str]:
    from spatialact.cli.main import main

    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    return rc, capsys.readouterr().err


def _header_bounds(names, values, capsys, tmp_path):
    from spatialact.agents.openai_agent import check_extra_headers

    name_max, value_max = values
    assert not _refused(check_extra_headers, {"X" * int(name_max): "v"})
    assert _refused(check_extra_headers, {"X" * int(name_max + 1): "v"})
    assert not _refused(check_extra_headers, {"X-Org": "v" * int(value_max)})
    assert _refused(check_extra_headers, {"X-Org": "v" * int(value_max + 1)})


def _agent_defaults(names, values, capsys, tmp_path):
    from spatialact.agents.openai_agent import OpenAIAgent

    params = inspect.signature(OpenAIAgent).parameters
    assert len(names) - 1 == len(values)  # the class, then one argument per value
    for arg, v in zip(names[1:], values):
        assert params[arg].default == v, f"OpenAIAgent's {arg} defaults to {params[arg].default}, the doc says {v}"


def _questions_size(names, values, capsys, tmp_path):
    lo, hi = values
    for size, ok in ((lo - 1, False), (hi + 1, False)):
        rc, err = _cli(["questions", "build", "--size", str(int(size)), "--out", str(tmp_path / "q.jsonl")], capsys)
        assert rc == 2 and f"between {int(lo)} and {int(hi)}" in err, err


def _replay_height(names, values, capsys, tmp_path):
    lo, hi = values
    for h in (lo - 1, hi + 1):
        rc, err = _cli(["replay", str(tmp_path / "none.npz"), "--height", str(int(h)), "--out",
                        str(tmp_path / "r")], capsys)
        assert rc == 2 and f"{int(lo)}..{int(hi)}" in err, err


#: Limits that are literals in a function, not constants: checked by behaviour at the documented bound.
BEHAVIOUR = {
    "agents.openai_agent.check_extra_headers": _header_bounds,
    "agents.openai_agent.OpenAIAgent": _agent_defaults,
    "cli.questions": _questions_size,
    "cli.replay": _replay_height,
}


def _limit_rows():
    rows = _table("## Limits")
    assert len(rows) >= 20
    return rows


def test_every_limit_row_names_where_it_lives():
    for limit, value, where, *_ in _limit_rows():
        names = re.findall(r"`([\w.]+)`", where)
        assert names, f"{limit}: no constant or function named"
        assert numbers(value), f"{limit}: no number in {value!r}"


@pytest.mark.parametrize("row", _limit_rows() if DOC.exists() else [], ids=lambda r: r[0][:40])
def test_the_documented_limit_is_the_codes(row, capsys, tmp_path):
    limit, value, where = row[:3]
    names = re.findall(r"`([\w.]+)`", where)
    stated = numbers(value)
    if names[0] in BEHAVIOUR:
        BEHAVIOUR[names[0]](names, stated, capsys, tmp_path)
        return
    consts = [_resolve(n) for n in names]
    if len(consts) == len(stated):  # one number per constant: a bound, or both ends of a range
        for n, c, v in zip(names, consts, stated):
            assert math.isclose(float(c), v, rel_tol=1e-9), f"{limit}: the doc says {v:g}, {n} is {c}"
    else:  # the same limit kept in several modules (the CLI's copy beside the library's): all equal the one value
        assert len(stated) == 1, f"{limit}: {len(stated)} numbers for {len(consts)} constants"
        for n, c in zip(names, consts):
            assert math.isclose(float(c), stated[0], rel_tol=1e-9), f"{limit}: the doc says {stated[0]:g}, " \
                                                                     f"{n} is {c}"


def test_numbers_reads_what_the_doc_writes():
    assert numbers("16 MiB") == [16 << 20]
    assert numbers("64 000 000 pixels") == [64e6]
    assert numbers("10⁸ tokens") == [1e8]
    assert numbers("8 to 4096") == [8, 4096]
    assert numbers("π") == [math.pi]
    assert numbers("1,000,000 tokens") == [1e6]
    assert numbers("60 s") == [60]


def test_killed_requests_are_said_to_be_left_out_of_cost():
    text = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    assert "in flight when the run is killed" in text and "is in no total" in text


if __name__ == "__main__":  # the table's rows, to paste into docs/reliability.md
    c = collected_counts()
    for name, entries in CATEGORIES:
        print(f"| {name} | {c[name]} | " + ", ".join(f"`{f[:-3]}`" for f in dict.fromkeys(f for f, _ in entries))
              + " |")
    print(f"| All | {sum(c.values())} |")
    c = collected_counts(INPUT_CATEGORIES)
    print("\nHostile inputs: nodes, nesting, the cache")
    for name, _ in INPUT_CATEGORIES:
        print(f"| {name} | {c[name]} |")
