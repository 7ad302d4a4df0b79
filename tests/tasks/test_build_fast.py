"""Task building's fast paths give what the plain ones gave (benchmarks/bench_tasks_build.py measures the speed).

- ``Trajectory.select`` does not validate rows of a validated trajectory again, and gives the same fields, read-only;
- the pairs ``pairs_from_trajectory`` samples are the distinct (i, j) of the plain reference (``np.unique`` over
  rows), in the same seeded order, for short trajectories (every pair) and long ones (random draws);
- the candidate in-context examples exclude the task's own segment as before.
"""

import numpy as np
import pytest

import spatialact.trajectories.trajectory as trajectory_module
from spatialact.geometry import ptr_to_matrix
from spatialact.tasks import pairs_from_trajectory
from spatialact.trajectories import Trajectory


def _walk(n, seed=0, gripper=False):
    rng = np.random.default_rng(seed)
    heading = np.cumsum(rng.normal(0, 0.02, n))
    P = np.tile(np.eye(4), (n, 1, 1))
    base = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])
    P[:, :3, :3] = np.einsum("ij,njk->nik", base, ptr_to_matrix(heading, np.zeros(n), np.zeros(n)))
    P[:, :3, 3] = np.cumsum(np.stack([np.cos(heading), np.sin(heading), np.zeros(n)], 1) * 0.01, axis=0)
    g = (np.arange(n) // 50) % 2 if gripper else None
    return Trajectory(poses=P, timestamps=np.arange(n) / 30.0, fps=30.0, gripper=g,
                      camera_poses=P.copy(), confidence=np.linspace(0, 1, n), meta={"source": "walk", "path": "w"})


def test_select_equals_a_validated_trajectory_of_the_same_rows():
    t = _walk(300, gripper=True)
    idx = np.array([5, 9, 40, 41, 200])
    fast = t.select(idx)
    ref = Trajectory(poses=t.poses[idx], timestamps=t.timestamps[idx], fps=t.fps, gripper=t.gripper[idx],
                     camera_poses=t.camera_poses[idx], confidence=t.confidence[idx],
                     meta=dict(t.meta, frames=[5, 200]))
    for name in ("poses", "timestamps", "gripper", "camera_poses", "confidence"):
        a, b = getattr(fast, name), getattr(ref, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
        assert not a.flags.writeable, name
    assert fast.fps == ref.fps and fast.meta == ref.meta
    # reversed order: time re-based at the source rate, as before
    back = t.select([10, 9, 8])
    assert np.allclose(np.diff(back.timestamps), 1 / 30.0)
    nog = t.without_gripper()
    assert nog.gripper is None and np.array_equal(nog.poses, t.poses) and t.gripper is not None


def test_select_does_not_validate_again(monkeypatch):
    t = _walk(200)
    calls = []
    real = trajectory_module.check_poses
    monkeypatch.setattr(trajectory_module, "check_poses", lambda *a, **k: calls.append(1) or real(*a, **k))
    for k in range(50):
        t.select(np.arange(k, k + 20))
    t.without_gripper()
    assert calls == []
    Trajectory(poses=t.poses, timestamps=t.timestamps, fps=30.0)  # a new trajectory is still validated
    assert len(calls) == 1


def _reference_pairs(P, lo, hi, want, seed):
    """The plain sampler: every pair (short) or 400 000 random draws (long), np.unique over rows, a permutation."""
    rng = np.random.default_rng([int(seed), 4])
    n = len(P)
    if n <= 2000:
        i, j = np.triu_indices(n, k=1)
    else:
        i, j = rng.integers(0, n, 400_000), rng.integers(0, n, 400_000)
        i, j = np.minimum(i, j), np.maximum(i, j)
        keep = j - i >= 1
        i, j = i[keep], j[keep]
    d = np.linalg.norm(P[j] - P[i], axis=1)
    ok = (d >= lo) & (d <= hi)
    pairs = np.unique(np.stack([i[ok], j[ok]], axis=1), axis=0)
    order = rng.permutation(len(pairs))
    return [(int(a), int(b)) for a, b in pairs[order[: max(want * 4, want + 16)]]]


@pytest.mark.parametrize("frames", [600, 5000])
def test_pairs_are_the_reference_pairs_in_order(frames):
    t = _walk(frames, seed=1)
    tasks = pairs_from_trajectory(t, n=30, seed=7, example=False, min_motion=0.3, max_motion=1.2)
    assert len(tasks) == 30
    ref = _reference_pairs(t.positions, 0.3, 1.2, 30, 7)
    got = [(tk.meta["start_frame"], tk.meta["goal_frame"]) for tk in tasks]
    assert got == [p for p in ref if p in set(got)]  # the tasks keep the reference order (some pairs give none)
    assert got[0] == ref[0]


def test_examples_lie_outside_the_task_segment_within_the_motion_range():
    t = _walk(900, seed=2)
    for tk in pairs_from_trajectory(t, n=40, seed=3, min_motion=0.3, max_motion=1.2):
        i, j, e = tk.meta["start_frame"], tk.meta["goal_frame"], tk.meta["example_frame"]
        assert e is not None and not (i <= e <= j)
        assert 0.3 <= np.linalg.norm(t.positions[e] - t.positions[i]) <= 1.2
