"""Reports from fabricated run directories: files, escaping, inlined images, tables; a headless-browser look."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from _fabricate import fabricate_run
from spatialact.cli.main import main
from spatialact.report import make_report
from spatialact.evaluation.stats import summary_of

EVIL = '<script>alert("pwned")</script> {"actions": ["W"], "step_nums": [1]} <img src=x onerror=alert(1)>'


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    fabricate_run(d / "oracle", agent="oracle", n=9, scores=[1.0] * 9)
    fabricate_run(d / "api", agent="openai", model="vlm-7b", n=9, responses=[EVIL, '{"actions": ["S"]}'],
                  scores=np.linspace(0.0, 0.9, 9))
    return d


def test_report_files_tables_and_escaping(runs, tmp_path):
    md, page = make_report([runs / "oracle", runs / "api"], tmp_path / "rep")
    assert md == tmp_path / "rep" / "report.md" and page.exists()
    h = page.read_text()
    # model text appears escaped, never as markup
    assert "<script>alert" not in h and "<img src=x" not in h
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in h
    assert "<script" not in h.lower()
    # self-contained: every image is a data URL, nothing is fetched
    srcs = re.findall(r"src='([^']*)'", h)
    assert len(srcs) >= 2 + 2 + 6  # 2 shared plots, 2 path plots, frames of examples
    assert all(s.startswith("data:image/png;base64,") for s in srcs)
    assert "http://" not in h and "https://" not in h
    for s in srcs[:3]:
        im = Image.open(io.BytesIO(base64.b64decode(s.split(",", 1)[1])))
        assert im.size[0] > 10
    # side-by-side comparison and per-kind / per-tag tables
    assert "oracle" in h and "openai (vlm-7b)" in h
    assert "Per kind" in h and "Per tag" in h and "difficulty=easy" in h and "API usage" in h
    assert "1.000 [1.000, 1.000]" in h  # the oracle's constant score
    assert "0.450 [" in h  # the API run's mean of linspace(0, 0.9, 9)
    assert "9,000" in h  # prompt tokens of the API run: 9 × 1000
    m = md.read_text()
    assert "| run |" in m and "openai (vlm-7b)" in m
    # in Markdown the answer sits verbatim inside a fenced code block (rendered as text, never as HTML)
    blocks = re.findall(r"^(`{3,})text\n(.*?)\n\1$", m, flags=re.S | re.M)
    assert any(EVIL in body for _, body in blocks)
    outside = re.sub(r"^(`{3,})text\n.*?\n\1$", "", m, flags=re.S | re.M)
    assert "<script" not in outside
    # figure and frame files that the Markdown refers to exist
    for ref in re.findall(r"\]\(([^)]+\.png)\)", m):
        assert (tmp_path / "rep" / ref).is_file(), ref


def test_report_ignores_frame_paths_outside_the_run(runs, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(runs / "oracle", bad)
    secret = tmp_path / "secret.png"
    Image.fromarray(np.full((8, 8, 3), 7, np.uint8)).save(secret)
    lines = (bad / "results.jsonl").read_text().splitlines()
    recs = [json.loads(l) for l in lines]
    for r in recs:
        r["frames"] = {"start": "../secret.png", "goal": str(secret), "final": "frames/../../secret.png"}
    (bad / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    _, page = make_report([bad], tmp_path / "rep")
    secret_b64 = base64.b64encode(secret.read_bytes()).decode()
    assert secret_b64 not in page.read_text()


def test_cli_report(runs, tmp_path, capsys):
    assert main(["report", str(runs / "oracle"), str(runs / "api"), "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "openai (vlm-7b)" in out and "report.html" in out
    assert main(["report", str(runs / "api"), "--json", "--out", str(tmp_path / "j")]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["runs"][0]["episodes"] == 9 and js["runs"][0]["prompt_tokens"] == 9000
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "no such run directory" in capsys.readouterr().err


def test_bootstrap_known_answers():
    s = summary_of([0.0, 1.0], n_boot=4000)
    assert s.mean == 0.5 and s.ci_low == 0.0 and s.ci_high == 1.0 and s.n == 2
    c = summary_of([0.3] * 7)
    assert (c.mean, c.ci_low, c.ci_high) == pytest.approx((0.3, 0.3, 0.3))
    assert summary_of([None, float("nan"), 2.0]).n == 1
    assert summary_of([]).n == 0
    x = np.random.default_rng(3).normal(0.5, 0.1, 400)
    s = summary_of(x)
    se = x.std(ddof=1) / np.sqrt(len(x))
    assert s.ci_low < s.mean < s.ci_high
    assert s.ci_high - s.ci_low == pytest.approx(2 * 1.96 * se, rel=0.15)
    assert summary_of(x) == s  # seeded


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


@pytest.mark.slow
def test_report_renders_in_headless_browser(runs, tmp_path):
    exe = _chromium()
    if exe is None:
        pytest.skip("no chromium found (Debian: apt-get install -y chromium); the HTML report was not looked at")
    _, page = make_report([runs / "oracle", runs / "api"], tmp_path / "rep")
    shot = tmp_path / "shot.png"
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,6000",
           f"--screenshot={shot}", page.resolve().as_uri()]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, HOME=str(tmp_path)))
    assert shot.exists(), out.stderr[-2000:]
    img = np.asarray(Image.open(shot).convert("RGB"), dtype=np.float64)
    assert img.std() > 10, "the screenshot is blank"
    # not only text: some coloured pixels from the plots and frames
    sat = img.max(axis=2) - img.min(axis=2)
    assert (sat > 60).mean() > 0.005
    keep = os.environ.get("SPATIALACT_KEEP_SCREENSHOT")
    if keep:
        shutil.copyfile(shot, keep)
