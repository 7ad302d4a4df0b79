"""The report's error-against-distance plot stays readable with outliers: from real runs (run_eval on built-in
procedural tasks), a closed-loop random walk whose final errors are many times the largest start–goal distance gets
symmetric-log axes and a note in the report; a one-shot run without outliers keeps linear axes and no note."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("pybullet")
pytest.importorskip("matplotlib")

from spatialact.evaluation.episode import EpisodeConfig  # noqa: E402
from spatialact.report import DECADES_FOR_LOG, SPREAD_FOR_LOG, error_distance_layout, make_report  # noqa: E402
from spatialact.evaluation.runner import AgentSpec, run_eval  # noqa: E402
from spatialact.taskgen.suites import builtin_suite  # noqa: E402


def _points(run_dir):
    recs = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    pts = [(r.get("d0"), r.get("final_position_error")) for r in recs]
    return np.array([(a, b) for a, b in pts if a is not None and b is not None], dtype=np.float64)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    tasks = builtin_suite("default:2", seed=0)
    # A random walk of 40 closed-loop steps of up to 10 units a step: it ends metres from goals ~0.1–0.5 m away.
    # Walls would stop it in the room (CameraNav's camera sphere): the walk runs without them, as a kinematic camera.
    walk = EpisodeConfig(mode="closed-loop", renderer="tiny", width=32, height=32, max_steps=40, collisions=False)
    run_eval(tasks, AgentSpec("random", {"p_move": 1.0, "max_count": 10}), walk, d / "walk",
             task_source="suite:default:2", progress=False)
    run_eval(tasks, AgentSpec("oracle"), walk, d / "oracle", task_source="suite:default:2", progress=False)
    one = EpisodeConfig(mode="one-shot", renderer="tiny", width=32, height=32)
    run_eval(tasks, AgentSpec("random", {"p_move": 0.5, "max_count": 3}), one, d / "oneshot",
             task_source="suite:default:2", progress=False)
    return d


def test_outliers_from_a_real_run_get_log_axes_and_a_note(runs, tmp_path):
    walk, oracle = _points(runs / "walk"), _points(runs / "oracle")
    assert len(walk) == 6 and len(oracle) == 6
    # The outlier is real: the walk's largest error is many times the largest distance; the oracle's are ~0.
    ratio = walk[:, 1].max() / walk[:, 0].max()
    assert ratio > SPREAD_FOR_LOG
    assert oracle[:, 1].max() < 0.01
    both = np.concatenate([walk, oracle])
    lay = error_distance_layout(both[:, 0], both[:, 1])
    assert lay["scale"] == "symlog" and lay["limit"] >= walk[:, 1].max()
    assert lay["note"] == (f"log axes (linear below 1 cm): the largest error, {walk[:, 1].max():.3g} m, is "
                           f"{ratio:.1f}× the largest distance ({walk[:, 0].max():.3g} m)")
    md, page = make_report([runs / "oracle", runs / "walk"], tmp_path / "rep")
    text = md.read_text()
    assert f"Error against distance: {lay['note']}." in text and lay["note"] in page.read_text()
    png = tmp_path / "rep" / "figures" / "error_vs_distance.png"
    im = np.asarray(Image.open(png).convert("RGB"))
    assert im.shape[0] > 200 and im.shape[1] > 300


def test_no_outlier_keeps_linear_axes(runs, tmp_path):
    pts = _points(runs / "oneshot")
    assert pts[:, 1].max() <= SPREAD_FOR_LOG * pts[:, 0].max()
    lay = error_distance_layout(pts[:, 0], pts[:, 1])
    assert lay == {"scale": "linear", "linthresh": 0.01, "limit": pytest.approx(1.05 * pts.max()), "note": None}
    md, _ = make_report([runs / "oneshot"], tmp_path / "rep")
    assert "Error against distance:" not in md.read_text()
    assert (tmp_path / "rep" / "figures" / "error_vs_distance.png").exists()


def test_layout_rule_by_hand():
    # 3 m error against distances up to 0.5 m: 6.0× → log.
    lay = error_distance_layout([0.1, 0.5], [0.0, 3.0])
    assert lay["scale"] == "symlog" and lay["limit"] == pytest.approx(4.5)
    assert lay["note"] == "log axes (linear below 1 cm): the largest error, 3 m, is 6.0× the largest distance (0.5 m)"
    # Exactly 5×: still linear (the rule is "beyond").
    assert error_distance_layout([0.1, 0.5], [0.0, 2.5])["scale"] == "linear"
    # Centimetre and metre distances in one run, errors small: > 2 decades above 1 cm → log, with the span.
    d0 = [0.02, 0.03, 0.05, 4.0, 5.0]
    err = [0.0, 0.01, 0.02, 0.5, 0.8]
    lay = error_distance_layout(d0, err)
    decades = math.log10(5.0 / np.percentile([x for x in d0 + err if x >= 0.01], 10))
    assert decades > DECADES_FOR_LOG and lay["scale"] == "symlog"
    assert lay["note"] == f"log axes (linear below 1 cm): values span {decades:.1f} decades, up to 5 m"
    # Nothing but zeros (an oracle on zero-distance tasks): linear.
    assert error_distance_layout([0.0], [0.0])["scale"] == "linear"
