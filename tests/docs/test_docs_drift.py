"""Figures in the README and docs/game.md that come from somewhere, checked against where they come from.

- The README's speed table is written by scripts/make_readme_speed.py from docs/performance.md (which
  benchmarks/run_all.py writes from what the benchmarks record): the README's block must be exactly what the script
  makes from the committed page, every number in its measured rows must be one the page prints, and the Speed
  section holds no table outside the block.
- docs/game.md's figures that are the game code's constants (the camera, the look limits, the stop tolerances, the
  depth levels, the tics) must read as the constants give them; its table of tics per primitive is pasted from
  ``benchmarks/bench_envs.py --game-only``, and the tic counts (the same at any load) are replayed here through the
  benchmark's own functions and must equal the pasted ones.
"""

from __future__ import annotations

import importlib.util
import math
import re
import sys

import numpy as np
import pytest

from _doc_commands import ROOT

NUMBER = re.compile(r"[0-9][0-9,.]*[0-9]|[0-9]")


def _module(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


speed = _module("scripts/make_readme_speed.py", "make_readme_speed")


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def _perf() -> str:
    return (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")


# --- the README's speed table ------------------------------------------------------------------------------------

def test_readme_speed_table_is_what_performance_md_gives():
    assert speed.block_of(_readme()) == speed.render(_perf()), (
        "README.md's speed table differs from docs/performance.md: run .venv/bin/python scripts/make_readme_speed.py")


def test_every_number_of_the_readme_speed_table_is_printed_in_performance_md():
    printed = set(NUMBER.findall(_perf()))
    block = speed.block_of(_readme())
    rows = [line for line in block.splitlines() if line.startswith("| ") and "not measured" not in line]
    assert len(rows) > 10
    missing = {(n, line[:60]) for line in rows + block.splitlines()[:1] for n in NUMBER.findall(line)
               if n not in printed}
    assert not missing, f"README speed figures not in docs/performance.md: {sorted(missing)}"


def test_readme_speed_section_has_no_table_outside_the_block():
    text = _readme()
    start = text.index("\n## Speed\n")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end > 0 else len(text)]
    outside = section[:section.index(speed.BEGIN)] + section[section.index(speed.END):]
    assert not [line for line in outside.splitlines() if line.startswith("|")]


PAGE = """# Performance

- date: 2026-01-02 03:04 UTC
- machine: test box
- commit: abc1234
- mode: --quick (small sizes)

| benchmark | figure | measured | anchor | anchor measured | ratio | aim |
| --- | --- | --- | --- | --- | --- | --- |
| `bench_a.py` | rate of a | 1,234 steps/s | the loop | 12.5 steps/s | 98.72× | ≥ 1,000 steps/s |
| `bench_a.py` | rate of b | 900 steps/s | the loop | 300 steps/s | 3.00× | ≥ 5× the loop |
| `bench_b.py` | worst time | 0.61 s |  |  |  | < 0.5 s |
| `bench_b.py` | other | 7 items |  |  |  | all, none twice |

GPU note.

## By hand (`benchmarks/bench_c.py`)
"""


def test_render_copies_cells_and_judges_plain_aims():
    block = speed.render(PAGE)
    lines = block.splitlines()
    assert lines[0].startswith("From [`docs/performance.md`]") and "date 2026-01-02 03:04 UTC" in lines[0]
    assert ("| `bench_a.py` — rate of a, vs the loop | 1,234 vs 12.5 steps/s | 98.72× | ≥ 1,000 steps/s: met |"
            in lines)
    assert "| ″ — rate of b, vs the loop | 900 vs 300 steps/s | 3.00× | ≥ 5× the loop: not met |" in lines
    assert "| `bench_b.py` — worst time | 0.61 s |  | < 0.5 s: not met |" in lines
    assert "| ″ — other | 7 items |  | all, none twice |" in lines  # not a bound: no verdict
    assert sum("not measured (no row in docs/performance.md)" in x for x in lines) == len(speed.NOT_MEASURED)
    assert lines[-1].startswith("Benchmarks run by hand")
    assert not speed.render(PAGE.split("## By hand")[0]).splitlines()[-1].startswith("Benchmarks run by hand")


def test_not_measured_rows_leave_when_the_page_holds_the_figure():
    page = PAGE.replace("| `bench_b.py` | other |", "| `render` | gl RGB+depth, 128², K = 64 |")
    assert "K = 64 views per call" in speed.render(PAGE)
    assert "K = 64 views per call" not in speed.render(page)


def test_the_script_refuses_in_one_line_and_checks(tmp_path, capsys):
    perf, readme = tmp_path / "perf.md", tmp_path / "README.md"
    perf.write_text(PAGE, encoding="utf-8")
    readme.write_text(f"# x\n\n{speed.BEGIN}\nold\n{speed.END}\n\nafter\n", encoding="utf-8")
    args = ["--perf", str(perf), "--readme", str(readme)]
    assert speed.main(["--check", *args]) == 1
    assert speed.main(args) == 0
    assert readme.read_text(encoding="utf-8").endswith(f"{speed.END}\n\nafter\n")
    assert speed.main(["--check", *args]) == 0
    readme.write_text(readme.read_text(encoding="utf-8").replace("1,234 vs", "1,300 vs"), encoding="utf-8")
    assert speed.main(["--check", *args]) == 1   # a figure typed by hand
    capsys.readouterr()
    readme.write_text("# no marks\n", encoding="utf-8")
    assert speed.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "README.md" in err and "mark" in err
    perf.write_text("# Performance\n\nno table\n", encoding="utf-8")
    assert speed.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "perf.md" in err and "no table headed" in err
    assert speed.main(["--bogus"]) == 2


# --- docs/game.md: the constants -----------------------------------------------------------------------------------

def _game_md() -> str:
    return (ROOT / "docs" / "game.md").read_text(encoding="utf-8")


def _g(x: float) -> str:
    """A figure as the page writes it: no trailing zeros."""
    return f"{x:.6g}"


def test_game_md_constants_read_as_the_code_gives_them():
    from spatialact.action_space import StepSizes
    from spatialact.envs.doom import engine, explorer, geodesic

    k = engine.camera_intrinsics(np.zeros(13), 320, 240)   # game variables: no CAMERA_FOV reported, the look level
    mm = lambda units: f"{units * engine.UNIT_M * 1000:.1f} mm"   # noqa: E731
    cm = lambda units: f"{units * engine.UNIT_M * 100:.1f} cm"    # noqa: E731
    depth = engine.DEPTH_CALIBRATION
    expected = [
        f"fy = {_g(engine.PIXEL_ASPECT)}·fx",
        f"320×240: fx = {_g(k[0, 0])}, fy = {_g(k[1, 1])}",
        "Resolutions: " + ", ".join(f"{w}×{h}" + (" (default)" if (w, h) == (320, 240) else "")
                                    for w, h in engine.RESOLUTIONS),
        f"[{_g(engine.DEPTH_STEP_UNITS)}·k + c, {_g(engine.DEPTH_STEP_UNITS)}·(k+1) + c) map units with c = "
        + ", ".join(f"{_g(depth[h])} ({w}×{h})" for w, h in engine.RESOLUTIONS),
        f"quantisation {_g(engine.DEPTH_STEP_UNITS)} units = {engine.DEPTH_STEP_UNITS * engine.UNIT_M:.3f} m",
        f"within {_g(engine.TILT_UP_LIMIT_DEG)}° up and {_g(engine.TILT_DOWN_LIMIT_DEG)}° down",
        f"no progress for {engine.STALL_TICS} tics",
        f"a step higher than {_g(geodesic.STEP_UP_UNITS)} units",
        f"the stop criterion is {_g(engine.POSITION_TOL_UNITS)} units = {mm(engine.POSITION_TOL_UNITS)}",
        f"| vertical tolerance (flown) | {_g(engine.HEIGHT_TOL_UNITS)} units ({cm(engine.HEIGHT_TOL_UNITS)})",
        f"exact to the game's 360/{engine.ANGLE_UNITS}°",
        f"ends {_g(engine.PLAYER_RADIUS_UNITS)} units (the player's radius)",
        f"keeps the camera {_g(engine.PLAYER_RADIUS_UNITS)} units ({_g(engine.PLAYER_RADIUS_UNITS * engine.UNIT_M)} m)",
        f"waits {engine.SETTLE_TICS} tics",
        f"one frame a game tic ({engine.TICRATE} fps)",
        f"multiplied by the friction ({hex(round(engine.FRICTION * 0x10000)).upper().replace('0X', '0x')};",
        f"turns at most {_g(explorer.TURN_RATE_DEG)}° a tic",
        f"closes ({_g(explorer.NEAR_UNITS * engine.UNIT_M)} m)",
        f"a unit step ({_g(StepSizes.navigation().translation * 100)} cm)",
    ]
    text = re.sub(r"\s+", " ", _game_md())
    missing = [e for e in expected if e not in text]
    assert not missing, f"docs/game.md does not read as the code's constants give: {missing}"
    assert math.isclose(k[1, 1], engine.PIXEL_ASPECT * k[0, 0])


# --- docs/game.md: the tics per primitive, pasted from the benchmark ----------------------------------------------

TABLE_HEAD = re.compile(r"primitive +tics/step +drawn +ms/step")
ROW = re.compile(r" *([A-Za-z]+) +([0-9.]+) +([0-9.]+) +([0-9.]+)")


def pasted_tics(text: str) -> dict[str, tuple[float, float]]:
    """{primitive: (tics a step, drawn a step)} of the table ``bench_envs.py --game-only`` printed, as pasted in
    docs/game.md (the block after the command)."""
    at = text.index("$ .venv/bin/python benchmarks/bench_envs.py --game-only")
    lines = text[at:text.index("```", at)].splitlines()
    head = next(i for i, line in enumerate(lines) if TABLE_HEAD.search(line))
    out = {}
    for line in lines[head + 1:]:
        m = ROW.fullmatch(line)
        if not m:
            break
        out[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return out


def test_pasted_table_is_read():
    text = ("$ .venv/bin/python benchmarks/bench_envs.py --game-only\nx\nprimitive tics/step  drawn  ms/step\n"
            "    Truck       5.0   1.00     3.03\n     Roll       0.0   0.00     1.49\n```\n")
    assert pasted_tics(text) == {"Truck": (5.0, 1.0), "Roll": (0.0, 0.0)}


def test_game_md_pasted_table_has_every_primitive_and_the_printed_header():
    bench = _module("benchmarks/bench_envs.py", "bench_envs")
    assert set(pasted_tics(_game_md())) == set(bench.PRIMITIVES)


def test_game_md_tics_per_primitive_are_what_the_benchmark_counts():
    pytest.importorskip("vizdoom")
    pytest.importorskip("pybullet")
    bench = _module("benchmarks/bench_envs.py", "bench_envs")
    task = bench.game_start_task()
    acts, ax = bench.game_actions(200)
    env = bench.game_env(task)
    try:
        per = bench.tics_per_primitive(env, task, acts, ax)
    finally:
        env.close()
    counted = {p: (round(v["tics"], 1), round(v["drawn"], 2)) for p, v in per.items()}
    assert counted == pasted_tics(_game_md()), "docs/game.md's tics per primitive: rerun bench_envs.py --game-only"


def test_game_md_speed_rows_quote_the_pasted_run_or_performance_md():
    text = _game_md()
    at = text.index("$ .venv/bin/python benchmarks/bench_envs.py --game-only")
    printed = set(NUMBER.findall(text[at:text.index("```", at)])) | set(NUMBER.findall(_perf()))
    rows = [line for line in text.splitlines()
            if line.startswith(("| GameNav, one unit", "| a tic not drawn", "| game speed"))]
    assert len(rows) == 3
    missing = {n for line in rows for n in NUMBER.findall(line.split(" | ", 1)[1]) if n not in printed}
    assert not missing, f"docs/game.md speed figures not printed by the pasted run or docs/performance.md: {missing}"
