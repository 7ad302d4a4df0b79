"""Damaged WADs are refused in one line before the game engine sees them (spatialact.envs.doom.wad.check_wad;
docs/game.md "WAD checks", docs/reliability.md).

Without the checks, a damaged copy of freedoom2.wad (a line naming a vertex that does not exist, a lump pointing
past the end of the file, random map lumps) kills the game process with a segmentation fault: `game record` and
`eval` crashed. Here every damage is refused by the library in one line naming the file, the map, the lump and
what is wrong, and by the command line (`spatialact game record`, `spatialact eval` on a game task, `spatialact
tasks from-trajectory` on a recording) with exit status 2 and one line on stderr — run in a subprocess, so a crash
would show as a negative status.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from _wads import NO_SIDE, MapData, map_lump, write_wad
from spatialact.envs.doom.wad import MAX_LUMPS, WadError, check_wad, map_level

SRC = str(Path(__file__).parents[3] / "src")


def _room() -> MapData:
    m = MapData()
    s = m.sector(0, 128)
    m.room(-128, -128, 128, 128, s)
    m.player(0, 0)
    return m


def _refused(path, *needles, maps=None) -> str:
    with pytest.raises(WadError) as e:
        check_wad(path, maps)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg, msg
    for n in needles:
        assert n in msg, msg
    return msg


def _patched(path: Path, edits) -> Path:
    """``path`` with each (offset, struct format, values) written over its bytes."""
    data = bytearray(path.read_bytes())
    for at, fmt, values in edits:
        struct.pack_into(fmt, data, at, *values)
    path.write_bytes(bytes(data))
    return path


def test_a_sound_wad_passes_and_its_map_reads_back(tmp_path):
    m = _room()
    wad = write_wad(tmp_path / "room.wad", {"MAP01": m, "MAP02": _room()})
    check_wad(wad)
    check_wad(wad, ["map02"])
    level = map_level(wad, "MAP01")
    assert level.segments.shape == (4, 4) and (level.back == -1).all() and (level.front == 0).all()
    assert level.floor.tolist() == [0.0] and level.ceiling.tolist() == [128.0] and level.things[0, 3] == 1


# (what is changed, the lump the message names, what it says)
def _bad_records(m: MapData, case: str) -> None:
    if case == "vertex":
        m.lines[1] = (77, *m.lines[1][1:])
    elif case == "front side":
        m.lines[2] = (*m.lines[2][:3], 500, m.lines[2][4])
    elif case == "back side":
        m.lines[2] = (*m.lines[2][:4], 9)
    elif case == "no front side":
        m.lines[0] = (*m.lines[0][:3], NO_SIDE, NO_SIDE)
    elif case == "sector":
        m.sides[3] = 40
    elif case == "no player":
        m.things.clear()


@pytest.mark.parametrize("case, lump, says", [
    ("vertex", "LINEDEFS", "record 1 names vertex 77, and VERTEXES holds 8"),
    ("front side", "LINEDEFS", "record 2 names front side 500, and SIDEDEFS holds 4"),
    ("back side", "LINEDEFS", "record 2 names back side 9"),
    ("no front side", "LINEDEFS", "record 0 has no front side"),
    ("sector", "SIDEDEFS", "record 3 names sector 40, and SECTORS holds 1"),
    ("no player", "THINGS", "no player 1 start"),
])
def test_an_index_out_of_range_is_refused_naming_the_map_the_lump_and_the_record(tmp_path, case, lump, says):
    m = _room()
    _bad_records(m, case)
    wad = write_wad(tmp_path / "bad.wad", {"MAP01": _room(), "MAP07": m})
    msg = _refused(wad, "damaged WAD: map MAP07", f"lump {lump}", says)
    check_wad(wad, ["MAP01"])  # the other map is sound: only the maps asked for are read
    assert _refused(wad, maps=["MAP07"]) == msg


@pytest.mark.parametrize("lump, size", [("THINGS", 10), ("LINEDEFS", 14), ("SIDEDEFS", 30), ("VERTEXES", 4),
                                        ("SECTORS", 26)])
def test_a_lump_of_broken_records_is_refused(tmp_path, lump, size):
    wad = write_wad(tmp_path / "room.wad", {"MAP01": _room()})
    off, n, at = map_lump(wad.read_bytes(), "MAP01", lump)
    _patched(wad, [(at, "<ii", (off, n - 3))])
    _refused(wad, "map MAP01", f"lump {lump}", f"{n - 3:,} bytes is not a whole number of {size}-byte records")


def test_lumps_outside_the_file_missing_or_empty_are_refused(tmp_path):
    def fresh(name):
        return write_wad(tmp_path / f"{name}.wad", {"MAP01": _room()})

    wad = fresh("past")
    off, n, at = map_lump(wad.read_bytes(), "MAP01", "LINEDEFS")
    _patched(wad, [(at, "<ii", (wad.stat().st_size - 10, n))])
    _refused(wad, "map MAP01, lump LINEDEFS", "past the end of the file")
    wad = fresh("negative")
    off, n, at = map_lump(wad.read_bytes(), "MAP01", "SECTORS")
    _patched(wad, [(at, "<ii", (off, -26))])
    _refused(wad, "map MAP01, lump SECTORS", "a negative size (-26)")
    wad = fresh("offset")
    off, n, at = map_lump(wad.read_bytes(), "MAP01", "VERTEXES")
    _patched(wad, [(at, "<ii", (-4, n))])
    _refused(wad, "map MAP01, lump VERTEXES", "a negative offset (-4)")
    wad = fresh("missing")
    off, n, at = map_lump(wad.read_bytes(), "MAP01", "SECTORS")
    _patched(wad, [(at + 8, "<8s", (b"SECTORZ",))])
    _refused(wad, "map MAP01 has no SECTORS lump")
    wad = fresh("empty")
    off, n, at = map_lump(wad.read_bytes(), "MAP01", "VERTEXES")
    _patched(wad, [(at, "<ii", (off, 0))])
    _refused(wad, "map MAP01, lump VERTEXES: empty")


def test_a_directory_over_the_limit_is_said_to_be_over_the_limit_not_damaged(tmp_path):
    wad = _patched(write_wad(tmp_path / "huge.wad", {"MAP01": _room()}), [(4, "<i", (MAX_LUMPS + 1,))])
    msg = _refused(wad, f"{MAX_LUMPS + 1:,} directory entries", f"over the directory limit of {MAX_LUMPS:,}")
    assert "damaged" not in msg
    wad = _patched(write_wad(tmp_path / "short.wad", {"MAP01": _room()}), [(4, "<i", (5000,))])
    _refused(wad, "damaged WAD (directory of 5000 lumps")


@pytest.mark.parametrize("seed", range(8))
def test_random_map_lumps_are_refused(tmp_path, seed):
    rng = np.random.default_rng(seed)
    lumps = _room().lumps()
    for lump in ("THINGS", "LINEDEFS", "SIDEDEFS", "VERTEXES", "SECTORS"):
        n = len(lumps[lump]) + int(rng.integers(-8, 40))
        lumps[lump] = rng.integers(0, 256, max(n, 0), dtype=np.uint8).tobytes()
    _refused(write_wad(tmp_path / f"random{seed}.wad", {"MAP01": lumps}), "damaged WAD: map MAP01, lump")


# ----- the real WAD, through the command line (vizdoom ships it) ---------------------------------------------


def _cli(*args, cwd=None):
    code = "import sys\nfrom spatialact.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": SRC}, timeout=300)


def _one_line(r, *needles) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr[-2000:])  # a crash is a negative status
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def _damage(src: bytes, case: str) -> bytes:
    data = bytearray(src)
    off, n, at = map_lump(src, "MAP01", "LINEDEFS")
    if case == "vertex":          # the first line's first vertex: 60000
        struct.pack_into("<H", data, off, 60000)
    elif case == "past the end":  # LINEDEFS read from 10 bytes before the end of the file
        struct.pack_into("<i", data, at, len(data) - 10)
    elif case == "negative size":
        struct.pack_into("<i", data, at + 4, -14)
    elif case == "random":        # the five data lumps filled with random bytes
        rng = np.random.default_rng(0)
        for lump in ("THINGS", "LINEDEFS", "SIDEDEFS", "VERTEXES", "SECTORS"):
            o, s, _ = map_lump(src, "MAP01", lump)
            data[o:o + s] = rng.integers(0, 256, s, dtype=np.uint8).tobytes()
    return bytes(data)


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    """Damaged copies of freedoom2.wad (MAP01), removed afterwards (28 MB each)."""
    pytest.importorskip("vizdoom")
    from spatialact.envs.doom.wad import resolve_wad

    d = tmp_path_factory.mktemp("damaged_wads")
    src = resolve_wad("freedoom2.wad").read_bytes()
    out = {}
    for case in ("vertex", "past the end", "negative size", "random"):
        out[case] = d / f"{case.replace(' ', '_')}.wad"
        out[case].write_bytes(_damage(src, case))
    yield out
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("case, says", [("vertex", "lump LINEDEFS: record 0 names vertex 60000"),
                                        ("past the end", "lump LINEDEFS (directory entry"),
                                        ("negative size", "a negative size (-14)"),
                                        ("random", "map MAP01, lump")])
def test_game_record_refuses_a_damaged_wad_in_one_line_and_starts_no_game(damaged, tmp_path, case, says):
    work = tmp_path / "work"
    work.mkdir()
    wad = damaged[case]
    r = _cli("game", "record", "--wad", str(wad), "--map", "MAP01", "--seconds", "0.2", "--out",
             str(tmp_path / "rec"), cwd=work)
    _one_line(r, "--wad/--map", str(wad), "MAP01", says)
    assert not (tmp_path / "rec").exists() and list(work.iterdir()) == []  # no crash files, no partial folder


def test_eval_and_gamenav_refuse_a_task_in_a_damaged_wad(damaged, tmp_path):
    pytest.importorskip("pybullet")
    from spatialact.envs.doom.wad import wad_sha256
    from spatialact.envs.registry import make_env
    from spatialact.taskgen.game_suite import game_suite_tasks
    from spatialact.tasks import save_tasks

    wad = damaged["vertex"]
    t = game_suite_tasks(1)[0]
    t = replace(t, scene={**t.scene, "wad": str(wad), "wad_sha256": wad_sha256(wad)})
    tasks = save_tasks([t], tmp_path / "tasks.jsonl")
    r = _cli("eval", "--tasks", str(tasks), "--agent", "oracle", "--mode", "closed-loop", "--out",
             str(tmp_path / "run"), "--no-progress")
    _one_line(r, t.id, "scene.wad", str(wad), "damaged WAD: map MAP01, lump LINEDEFS")
    with pytest.raises(ValueError) as e:
        make_env("nav", backend="game", wad=wad, map="MAP01", width=160, height=120)
    assert "\n" not in str(e.value) and str(e.value).startswith("wad: ") and "lump LINEDEFS" in str(e.value)
    env = make_env("nav", backend="game", width=160, height=120, wrap=False)
    try:
        with pytest.raises(ValueError, match="scene.wad: .*damaged WAD"):
            env.reset(options={"task": t})
    finally:
        env.close()


def test_tasks_from_a_recording_refuse_a_damaged_wad(damaged, tmp_path):
    from spatialact.envs.doom.record import record_level
    from spatialact.envs.doom.wad import wad_sha256

    rec = record_level(tmp_path / "rec", map="MAP01", seconds=0.3, seed=0, resolution=(160, 120))
    wad = damaged["random"]
    meta = json.loads((rec / "meta.json").read_text())
    meta["wad"]["sha256"] = wad_sha256(wad)  # a recording said to be made in the damaged copy
    (rec / "meta.json").write_text(json.dumps(meta))
    r = _cli("tasks", "from-trajectory", str(rec), "--wad", str(wad), "--n", "2", "--out", str(tmp_path / "t.jsonl"))
    _one_line(r, str(wad), "damaged WAD: map MAP01, lump")
    assert not (tmp_path / "t.jsonl").exists()
