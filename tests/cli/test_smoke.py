"""End-to-end smoke checks of the command line (the detailed tests live beside each module's tests)."""

import subprocess
import sys


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "spatialact.cli.main", *args], capture_output=True, text=True)


def test_help_lists_subcommands():
    r = _cli("--help")
    assert r.returncode == 0
    assert "parse" in r.stdout and "demo" in r.stdout


def test_parse_prints_motion_and_repairs():
    r = _cli("parse", '{"actions": ["A", "Q"], "step_nums": [2, -1]}')
    assert r.returncode == 0, r.stderr
    assert "Truck Left×2" in r.stdout and "Pedestal Up×1" in r.stdout
    assert "-0.1252" in r.stdout  # 2 × 0.0626 m to the left
    assert "negative count" in r.stdout


def test_parse_unusable_answer_exits_1():
    r = _cli("parse", "no json at all")
    assert r.returncode == 1
    assert "no usable step" in r.stdout


def test_every_subcommand_explains_itself():
    from spatialact.cli.main import SUBCOMMANDS

    for name in SUBCOMMANDS:
        r = _cli(name, "--help")
        assert r.returncode == 0, (name, r.stderr)
        assert "usage: spatialact " + name in r.stdout


def test_demo_prints_the_score_table_and_writes_the_report(tmp_path):
    import json

    r = _cli("demo", "--agents", "oracle,stay", "--out", str(tmp_path / "demo"), "--no-progress", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    rows = {row["agent"]: row for row in out["table"]}
    assert rows["oracle"]["score"] == 1.0 and rows["oracle"]["success"] == 1.0
    assert rows["stay"]["score"] < 0.5 and rows["stay"]["success"] == 0.0
    html = open(out["report_html"], encoding="utf-8").read()
    assert "oracle" in html and "stay" in html and "data:image/png;base64," in html
    # the report's Overall has the printed table's numbers too: its second table leaves the diagnostic suites out
    md = open(out["report_md"], encoding="utf-8").read().split("## Overall", 1)[1].split("\n## ", 1)[0]
    assert "the table `spatialact demo` prints" in md
    second = md.split("the table `spatialact demo` prints", 1)[1]
    stay = next(line for line in second.splitlines() if line.startswith("| stay |")).split(" | ")
    assert int(stay[1]) == rows["stay"]["episodes"] == 10
    assert float(stay[2].split()[0]) == 0.0  # skill leads: doing nothing is exactly 0
    assert float(stay[3].split()[0]) == round(rows["stay"]["score"], 3)  # the paper's step score beside it
    full = open(out["report_md"], encoding="utf-8").read()
    import re

    # distance bins differ per kind (metres for nav, centimetres for manip): each row names its kind
    tags = full.split("## Per tag", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"^\| distance=[^|]* \(nav\) \|", tags, re.M) and re.search(r"^\| distance=[^|]* \(manip\) \|",
                                                                                 tags, re.M)
    assert not re.search(r"^\| distance=[^|(]*\|", tags, re.M)
    # one viewpoint pair per kind has no interval; the two pairs of "all" have one
    vp = full.split("### Viewpoint robustness", 1)[1].split("\n### ", 1)[0]
    rows_vp = [line.split(" | ") for line in vp.splitlines() if line.startswith("| oracle |")]
    assert {r[1]: r[-1] for r in rows_vp} == {"nav": "– |", "manip": "– |", "all": rows_vp[-1][-1]}
    assert rows_vp[-1][-1].startswith("[")
