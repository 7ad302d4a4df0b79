"""Task tags are categories (docs/tasks.md): continuous quantities are binned, exact values go to meta."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spatialact import geometry
from spatialact.tasks import pairs_from_trajectory
from spatialact.tasks.tags import bin_label, motion_tags, steps_tag
from spatialact.trajectories import Trajectory
from traj_helpers import smooth_poses


@pytest.mark.parametrize("value, label", [(0.0, "0-0.5 m"), (0.4999, "0-0.5 m"), (0.5, "0.5-1 m"), (1.99, "1-2 m"),
                                          (2.0, "2+ m"), (40.0, "2+ m")])
def test_bin_edges_go_up(value, label):
    assert bin_label(value, (0.5, 1.0, 2.0), "m") == label


def test_labels_sort_in_order():
    labels = [bin_label(v, (0.5, 1.0, 2.0), "m") for v in (0.1, 0.7, 1.5, 3.0)]
    assert sorted(labels) == labels
    turns = [bin_label(v, (10.0, 30.0, 90.0), "deg") for v in (5, 20, 45, 120)]
    assert turns == ["0-10 deg", "10-30 deg", "30-90 deg", "90+ deg"] == sorted(turns)
    assert [steps_tag(n) for n in (0, 1, 2, 3, 4, 7, 8, 30)] == ["0", "1", "2-3", "2-3", "4-7", "4-7", "8+", "8+"]
    with pytest.raises(ValueError):
        bin_label(math.nan, (1.0,))


def test_motion_tags_hand_computed():
    S = np.eye(4)
    G = geometry.make_pose(geometry.rot_y(math.radians(45.0)), [0.3, 0.0, 0.4])  # 0.5 m, a 45° pan
    tags, exact = motion_tags("nav", S, G)
    assert tags == {"distance": "0.5-1 m", "turn": "30-90 deg"}
    assert exact == {"distance_m": 0.5, "rotation_deg": 45.0}
    assert motion_tags("manip", S, G)[0]["distance"] == "0.4+ m"


def test_trajectory_tasks_have_category_tags():
    P, t = smooth_poses(300, 30.0, seed=9, scale=1.0)
    tasks = pairs_from_trajectory(Trajectory(P, t, 30.0), n=12, seed=3)
    assert tasks
    for task in tasks:
        assert set(task.tags) == {"distance", "turn", "steps", "metric"}
        d = np.linalg.norm(task.goal_pose[:3, 3] - task.start_pose[:3, 3])
        assert task.meta["distance_m"] == round(d, 4)
        assert task.tags["distance"] == bin_label(d, (0.5, 1.0, 2.0), "m")
        assert task.tags["steps"] == steps_tag(task.n_steps)
        assert all(isinstance(v, (str, bool)) for v in task.tags.values())  # categories, not measurements
    # a handful of categories, not one per task
    assert len({t.tags["distance"] for t in tasks}) <= 4 < len({t.meta["distance_m"] for t in tasks})
