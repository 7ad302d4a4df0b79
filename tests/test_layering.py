"""SPEC §1 layering: the trajectory readers import only `geometry`; extraction and task building live in `tasks`
and stay importable from `spatialact.trajectories` (SPEC §10) as deprecated aliases, without the readers importing
them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from traj_helpers import smooth_poses, write_tum

SRC = str(Path(__file__).parents[1] / "src")


def test_importing_and_using_the_readers_imports_no_task_code(tmp_path):
    P, t = smooth_poses(30, 30.0, 0)
    write_tum(tmp_path / "cam.txt", t, P)
    code = ("import sys, json\n"
            "from spatialact.trajectories import load_trajectory\n"
            f"traj = load_trajectory({str(tmp_path / 'cam.txt')!r})\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('spatialact'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
    mods = json.loads(out.stdout)
    assert "spatialact.trajectories.generic" in mods  # the TUM reader ran
    above = [m for m in mods if m.count(".") and m.split(".")[1] in ("tasks", "action_space", "envs", "agents", "scorers",
                                                    "evaluation", "cli")]
    assert above == []


def test_extraction_and_building_names_stay_importable_from_trajectories():
    """The old names are deprecated aliases: the same objects, each with a DeprecationWarning naming its new path."""
    import spatialact.tasks.extraction as ex
    import spatialact.tasks.from_trajectory as ft

    with pytest.warns(DeprecationWarning, match=r"spatialact\.tasks\.extract_actions"):
        from spatialact.trajectories import extract_actions
    with pytest.warns(DeprecationWarning, match=r"use spatialact\.tasks\.extraction\.keyframe_indices"):
        from spatialact.trajectories import keyframe_indices
    with pytest.warns(DeprecationWarning, match=r"use spatialact\.tasks\.tasks_from_trajectory"):
        from spatialact.trajectories import tasks_from_trajectory
    with pytest.warns(DeprecationWarning):
        from spatialact.trajectories import Extraction, quantisation_bound, replay

    assert extract_actions is ex.extract_actions and replay is ex.replay and Extraction is ex.Extraction
    assert keyframe_indices is ex.keyframe_indices and quantisation_bound is ex.quantisation_bound
    assert tasks_from_trajectory is ft.tasks_from_trajectory
    assert np.isclose(quantisation_bound(ex.StepSizes(0.02, 0.1))[0], np.sqrt(3) / 2 * 0.02)
