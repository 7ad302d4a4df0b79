"""benchmarks/run_all.py rewrites only its own part of docs/performance.md: the sections that benchmarks run by hand
write after it (each with what it printed) survive a rerun byte for byte."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"

_spec = importlib.util.spec_from_file_location("bench_run_all", BENCH / "run_all.py")
run_all = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_all)

OLD_TOP = "# Performance\n\nold intro\n\n| benchmark | figure |\n| --- | --- |\n| `bench_x.py` | old row |\n\nold note\n"
HAND = ("## Many requests in flight (`benchmarks/bench_concurrency.py`)\n\nprinted:\n\n```\nmode  N\none-shot 64\n```\n\n"
        "## Batched hf answers (`benchmarks/bench_hf_batch.py`)\n\n- 3.1× at batch 8\n")


def test_a_page_without_marks_keeps_everything_from_its_first_section_on():
    new = run_all.splice(OLD_TOP + "\n" + HAND, "# Performance\n\nnew table")
    assert new == f"{run_all.BEGIN}\n# Performance\n\nnew table\n{run_all.END}\n\n{HAND}"
    assert "old row" not in new and "old note" not in new


def test_a_page_with_marks_has_only_the_text_between_them_replaced():
    before = "A line someone put above.\n\n"
    page = run_all.splice(OLD_TOP + "\n" + HAND, "first table")
    page = before + page
    again = run_all.splice(page, "second table")
    assert again == f"{before}{run_all.BEGIN}\nsecond table\n{run_all.END}\n\n{HAND}"
    # a third run changes nothing but the table, and twice the same block is a fixed point
    assert run_all.splice(again, "second table") == again
    assert again.endswith(HAND) and again.count(run_all.BEGIN) == 1 == again.count(run_all.END)


def test_no_page_yet_and_a_page_with_no_sections():
    assert run_all.splice(None, "t") == f"{run_all.BEGIN}\nt\n{run_all.END}\n"
    assert run_all.splice(OLD_TOP, "t") == f"{run_all.BEGIN}\nt\n{run_all.END}\n"


@pytest.mark.parametrize("page", [f"{run_all.BEGIN}\nx\n", f"x\n{run_all.END}\n",
                                  f"{run_all.END}\nx\n{run_all.BEGIN}\n",
                                  f"{run_all.BEGIN}\n{run_all.END}\n{run_all.BEGIN}\n{run_all.END}\n"])
def test_broken_marks_are_refused(page):
    with pytest.raises(ValueError):
        run_all.splice(page, "t")


def test_write_doc_keeps_the_hand_written_sections(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text(OLD_TOP + "\n" + HAND, encoding="utf-8")
    rows = [{"bench": "bench_y.py", "figure": "things a second", "value": 1234.5, "unit": "things/s",
             "anchor": "a loop", "anchor_value": 100.0, "ratio": 12.345, "aim": None}]
    run_all.write_doc(doc, rows, quick=True, seconds=60.0)
    text = doc.read_text(encoding="utf-8")
    assert text.startswith(run_all.BEGIN + "\n# Performance\n") and text.endswith(HAND)
    assert "| `bench_y.py` | things a second | 1,234 things/s | a loop | 100 things/s | 12.35× |  |" in text
    assert "old row" not in text


def test_a_page_with_broken_marks_is_refused_before_any_benchmark_runs(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text(f"{run_all.BEGIN}\nno end mark\n", encoding="utf-8")
    out = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--doc", str(doc), "parse"],
                         capture_output=True, text=True, timeout=120)
    err = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(err) == 1 and str(doc) in err[0] and "marks" in err[0]
    assert "===" not in out.stdout  # no benchmark started
    assert doc.read_text(encoding="utf-8") == f"{run_all.BEGIN}\nno end mark\n"
