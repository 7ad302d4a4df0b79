"""Generated questions (docs/questions.md): every answer recomputed from what the record stores — poses, intrinsics,
depth maps, marked pixels, sequences — by an independent route (numpy and scipy's Rotation, not spatialact.geometry),
from procedural rooms and from a replayed camera path; and the same seed gives the same questions and images."""

from __future__ import annotations

import importlib.util
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

if importlib.util.find_spec("pybullet") is None:
    pytest.skip("generating questions needs the sim extra (PyBullet)", allow_module_level=True)

from spatialact.questions import TYPE_FORMATS, build_questions, load_questions  # noqa: E402
from traj_helpers import smooth_poses, write_tum  # noqa: E402

LETTERS = "ABCDEFGHIJ"
# The action table of docs/conventions.md, written out here: name -> (axis, sign); axes 0-2 translate along X, Y,
# Z, 3-5 turn about X, Y, Z
NAMES = {"Truck Right": (0, 1), "Truck Left": (0, -1), "Pedestal Down": (1, 1), "Pedestal Up": (1, -1),
         "Dolly In": (2, 1), "Dolly Out": (2, -1), "Tilt Up": (3, 1), "Tilt Down": (3, -1), "Pan Right": (4, 1),
         "Pan Left": (4, -1), "Roll CCW": (5, 1), "Roll CW": (5, -1)}


# ----- independent geometry ------------------------------------------------------------------------------------------
def inv(T):
    T = np.asarray(T, dtype=np.float64)
    R, t = T[:3, :3], T[:3, 3]
    out = np.eye(4)
    out[:3, :3], out[:3, 3] = R.T, -R.T @ t
    return out


def K_of(view):
    i = view["intrinsics"]
    return i["fx"], i["fy"], i["cx"], i["cy"]


def unproject(view, x, y, z):
    fx, fy, cx, cy = K_of(view)
    T = np.asarray(view["pose"])
    p = np.array([(x - cx) / fx * z, (y - cy) / fy * z, z])
    return Rotation.from_matrix(T[:3, :3]).apply(p) + T[:3, 3]


def project(view, X):
    fx, fy, cx, cy = K_of(view)
    T = np.asarray(view["pose"])
    p = Rotation.from_matrix(T[:3, :3]).inv().apply(np.asarray(X) - T[:3, 3])
    return fx * p[0] / p[2] + cx, fy * p[1] / p[2] + cy, p[2]


def depth_at(view, x, y):
    d = np.load(view["depth"])
    assert d.dtype == np.float32 and d.shape == (view["height"], view["width"])
    return float(d[int(y), int(x)]), d


def replay_text(text, T0, u_t, u_r):
    """Replay a 'Step 1: Truck Left ×3, Dolly In ×5. Step 2: ...' description from T0: per step, translate by the
    summed units in the camera frame, then turn by R = R_y(pan) R_x(tilt) R_z(roll) (scipy's intrinsic YXZ)."""
    T = np.asarray(T0, dtype=np.float64).copy()
    steps = re.findall(r"Step \d+: ([^.]*)\.", text)
    assert steps, text
    for st in steps:
        m = np.zeros(6)
        if st != "Stay":
            for name, n in re.findall(r"([A-Za-z ]+?) ×(\d+)", st):
                axis, sign = NAMES[name.strip(", ").strip()]
                m[axis] += sign * int(n)
        D = np.eye(4)
        D[:3, :3] = Rotation.from_euler("YXZ", [m[4] * u_r, m[3] * u_r, m[5] * u_r]).as_matrix()
        D[:3, 3] = m[:3] * u_t
        T = T @ D
    return T, len(steps)


def rot_deg(A, B):
    return float(np.degrees((Rotation.from_matrix(A[:3, :3]).inv() * Rotation.from_matrix(B[:3, :3])).magnitude()))


def pose_numbers(text):
    """(x, y, z, pan, tilt, roll) written by a relative-pose option."""
    m = re.search(r"\(x, y, z\) = \(([-+.\d]+), ([-+.\d]+), ([-+.\d]+)\) m; pan ([-+.\d]+)°, tilt ([-+.\d]+)°, "
                  r"roll ([-+.\d]+)°", text)
    assert m, text
    return np.array([float(v) for v in m.groups()])


def check_pose_text(text, rel):
    got = pose_numbers(text)
    pan, tilt, roll = Rotation.from_matrix(rel[:3, :3]).as_euler("YXZ", degrees=True)
    assert np.allclose(got[:3], rel[:3, 3], atol=0.0051)
    assert np.allclose(got[3:], [pan, tilt, roll], atol=0.051)


# ----- the checks, one per type -------------------------------------------------------------------------------------
def answer_index(q):
    return LETTERS.index(q["answer"])


def check_images(q):
    from PIL import Image

    for im in q["images"]:
        v = q["views"][im["view"]]
        with Image.open(im["path"]) as f:
            assert f.size == (v["width"], v["height"]) and f.mode == "RGB"


def check_relative_pose(q):
    A, B = (np.asarray(v["pose"]) for v in q["views"][:2])
    rel = inv(A) @ B
    if q["format"] == "multiple_choice":
        vals = [np.asarray(v) for v in q["option_values"]]
        k = answer_index(q)
        assert np.allclose(vals[k], rel, atol=1e-9)
        for i, (text, V) in enumerate(zip(q["options"], vals)):
            check_pose_text(text, V)  # every option says what its value is
            if i != k:  # a distractor is another motion: ≥ 0.15 m or ≥ 8° away from the truth
                assert np.linalg.norm(V[:3, 3] - rel[:3, 3]) >= 0.15 - 1e-9 or rot_deg(V, rel) >= 8 - 1e-9
    else:
        assert q["options"] == ["Yes", "No"]
        shown = np.asarray(q["meta"]["shown_pose"])
        check_pose_text(q["question"][q["question"].rindex("position (x, y, z)"):], shown)
        if q["answer"] == "A":
            assert np.allclose(shown, rel, atol=1e-9)
        else:
            assert np.linalg.norm(shown[:3, 3] - rel[:3, 3]) >= 0.15 - 1e-9 or rot_deg(shown, rel) >= 8 - 1e-9


def check_primitive(q):
    A, B = (np.asarray(v["pose"]) for v in q["views"][:2])
    rel = inv(A) @ B
    sizes = q["sequence"]["sizes"]
    rv = Rotation.from_matrix(rel[:3, :3]).as_rotvec()
    if np.linalg.norm(rv) < 1e-9:  # a translation along one axis
        t = rel[:3, 3]
        axis = int(np.argmax(np.abs(t)))
        assert np.allclose(np.delete(t, axis), 0, atol=1e-9)
        sign, n = int(np.sign(t[axis])), abs(t[axis]) / sizes["translation"]
    else:  # a turn about one axis of the camera, no translation
        assert np.allclose(rel[:3, 3], 0, atol=1e-9)
        axis = int(np.argmax(np.abs(rv)))
        assert np.allclose(np.delete(rv, axis), 0, atol=1e-9)
        sign, n = int(np.sign(rv[axis])), abs(rv[axis]) / sizes["rotation"]
        axis += 3
    assert abs(n - round(n)) < 1e-6 and round(n) == q["meta"]["count"]
    name = next(k for k, v in NAMES.items() if v == (axis, sign))
    k = answer_index(q)
    assert q["option_values"][k] == name and q["options"][k].startswith(name + ":")
    assert sum(o.startswith(name + ":") for o in q["options"]) == 1
    opposite = next(k for k, v in NAMES.items() if v == (axis, -sign))
    assert opposite in q["option_values"]  # the reversed motion is always a distractor


def check_fov(q):
    v = q["views"][0]
    fx, fy, cx, cy = K_of(v)
    assert fx == pytest.approx(fy) and cx == pytest.approx((v["width"] - 1) / 2) and cy == pytest.approx(
        (v["height"] - 1) / 2)
    hfov = math.degrees(2 * math.atan(v["width"] / (2 * fx)))
    assert f"{v['width']} x {v['height']} pixels" in q["question"]
    if q["format"] == "numeric":
        assert q["answer"] == pytest.approx(hfov, abs=1e-9) and q["unit"] == "deg"
    else:
        k = answer_index(q)
        assert q["option_values"][k] == pytest.approx(hfov, abs=1e-9)
        assert q["options"][k] == f"{hfov:.1f}°"
        others = [x for i, x in enumerate(q["option_values"]) if i != k]
        assert all(max(x / hfov, hfov / x) >= 1.12 - 1e-9 for x in others)


def check_depth(q):
    v = q["views"][0]
    p = q["points"][0]
    x, y = p["pixel"]
    z, _ = depth_at(v, x, y)
    assert q["answer"] == z and p["depth"] == z and q["unit"] == "m"
    X = unproject(v, x, y, z)
    assert np.allclose(X, p["world"], atol=1e-9)
    u, w, zc = project(v, p["world"])  # the stored world point is the marked pixel at the answered depth
    assert (u, w) == pytest.approx((x, y), abs=1e-6) and zc == pytest.approx(z, abs=1e-9)
    assert f"({x}, {y})" in q["question"]


def check_relative_depth(q):
    v = q["views"][0]
    z = []
    for i, p in enumerate(q["points"]):
        assert p["label"] == str(i + 1)
        zi, _ = depth_at(v, *p["pixel"])
        assert np.allclose(unproject(v, *p["pixel"], zi), p["world"], atol=1e-9)
        z.append(zi)
    asks = q["meta"]["asks"]
    assert ("closest to" if asks == "closest" else "farthest from") in q["question"]
    want = int(np.argmin(z) if asks == "closest" else np.argmax(z))
    assert q["options"][answer_index(q)] == f"Point {want + 1}"
    s = sorted(z)
    assert all(b / a >= 1.12 - 1e-9 for a, b in zip(s, s[1:]))  # no near-ties


def check_distance(q):
    v = q["views"][0]
    pa, pb = q["points"][:2]
    assert pa["object"] != pb["object"]
    Xa = unproject(v, *pa["pixel"], depth_at(v, *pa["pixel"])[0])
    Xb = unproject(v, *pb["pixel"], depth_at(v, *pb["pixel"])[0])
    dist = float(np.linalg.norm(Xa - Xb))
    if q["format"] == "numeric":
        assert q["answer"] == pytest.approx(dist, rel=1e-12) and q["unit"] == "m"
    else:
        k = answer_index(q)
        assert q["option_values"][k] == pytest.approx(dist, rel=1e-12) and q["options"][k] == f"{dist:.2f} m"
        assert all(max(x / dist, dist / x) >= 1.15 - 1e-9 for i, x in enumerate(q["option_values"]) if i != k)


def check_tracking(q):
    v1, v2 = q["views"][:2]
    p = q["points"][0]
    z, _ = depth_at(v1, *p["pixel"])
    X = unproject(v1, *p["pixel"], z)
    u, w, z2 = project(v2, X)
    cands = q["points"][1:]
    k = answer_index(q)
    assert q["options"][k] == f"Point {k + 1}" and cands[k]["label"] == str(k + 1)
    assert cands[k]["pixel"] == pytest.approx([u, w], abs=1e-6)
    assert q["option_values"][k] == pytest.approx([u, w], abs=1e-6)
    # visible in view 2: its depth map there is the point's own depth (not something in front of it)
    d2, _ = depth_at(v2, round(u), round(w))
    assert abs(d2 - z2) <= 0.03 * z2 + 0.01
    for i, c in enumerate(cands):
        if i != k:
            assert math.dist(c["pixel"], (u, w)) >= 16 - 1e-9


def check_task_flow(q):
    T0, T1 = (np.asarray(v["pose"]) for v in q["views"][:2])
    sz = q["sequence"]["sizes"]
    u_t, u_r = sz["translation"], sz["rotation"]
    assert f"{u_t:g} m" in q["question"] and f"{math.degrees(u_r):.2f}°" in q["question"]
    k = answer_index(q)
    finals = []
    for text in q["options"]:
        F, n = replay_text(text, T0, u_t, u_r)
        assert n == len(q["sequence"]["steps"])
        finals.append(F)
    assert np.allclose(finals[k], T1, atol=1e-9)  # the true description replays to the end view
    for i, F in enumerate(finals):
        if i != k:
            assert (np.linalg.norm(F[:3, 3] - T1[:3, 3]) >= 1.5 * u_t - 1e-9
                    or rot_deg(F, T1) >= math.degrees(1.5 * u_r) - 1e-9)
    true_steps = re.findall(r"Step \d+: ([^.]*)\.", q["options"][k])
    for i, text in enumerate(q["options"]):
        if i != k:  # a single-step corruption: exactly one step differs
            steps = re.findall(r"Step \d+: ([^.]*)\.", text)
            assert sum(a != b for a, b in zip(steps, true_steps)) == 1


CHECKS = {"relative_pose": check_relative_pose, "primitive": check_primitive, "fov": check_fov,
          "depth": check_depth, "relative_depth": check_relative_depth, "distance": check_distance,
          "tracking": check_tracking, "task_flow": check_task_flow}


# ----- fixtures -----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def procedural(tmp_path_factory):
    d = tmp_path_factory.mktemp("proc")
    return build_questions(d / "q.jsonl", n=2, seed=0, size=96)


@pytest.fixture(scope="module")
def camera_path(tmp_path_factory):
    d = tmp_path_factory.mktemp("traj")
    P, t = smooth_poses(300, 30.0, 0)
    write_tum(d / "cam.txt", t, P)
    from spatialact.trajectories import load_trajectory

    traj = load_trajectory(d / "cam.txt")
    return build_questions(d / "q.jsonl", n=2, seed=1, size=80, trajectory=traj), P


# ----- tests ----------------------------------------------------------------------------------------------------
def test_procedural_questions_every_type_and_format(procedural):
    qs = procedural.questions
    assert procedural.skipped == {}
    want = {(t, f) for t, fs in TYPE_FORMATS.items() for f in fs}
    got = {(q["type"], q["format"]) for q in qs}
    assert got == want and len(qs) == 2 * len(want)
    assert {q["source"] for q in qs} == {"procedural"}
    assert all(q["scene"]["generator"] == "room" for q in qs)


@pytest.mark.parametrize("typ", sorted(CHECKS))
def test_procedural_answers_recomputed_independently(procedural, typ):
    qs = [q for q in procedural.questions if q["type"] == typ]
    assert qs
    for q in qs:
        check_images(q)
        CHECKS[typ](q)


def test_replayed_camera_path_answers_recomputed(camera_path):
    res, P = camera_path
    qs = res.questions
    assert {q["source"] for q in qs} == {"tum"}
    assert all(q["scene"]["type"] == "replay" and q["scene"]["source"] == "camera_path" for q in qs)
    # the replay room holds no objects: no distance questions, said so; every other type is there
    assert set(res.skipped) == {"distance/numeric", "distance/multiple_choice"}
    assert {q["type"] for q in qs} == set(CHECKS) - {"distance"}
    u_t = 0.0626
    for q in qs:
        check_images(q)
        CHECKS[q["type"]](q)
        # the views are poses the replayed ground truth reaches: at keyframes within the extraction's bound of the
        # recorded pose, between them (a step split at the cap) on the straight line between two keyframes; so
        # every first view lies within a few unit steps of the recorded path
        T = np.asarray(q["views"][0]["pose"])
        assert np.min(np.linalg.norm(P[:, :3, 3] - T[:3, 3], axis=1)) <= 4 * u_t


def test_answer_letters_are_spread(procedural):
    letters = [q["answer"] for q in procedural.questions if q["format"] == "multiple_choice"]
    assert len(set(letters)) >= 3  # options are shuffled: not always the same letter


def test_same_seed_same_questions_and_images(tmp_path, procedural):
    again = build_questions(tmp_path / "q.jsonl", n=2, seed=0, size=96)

    def canonical(q):
        q = json.loads(json.dumps(q))
        for im in q["images"]:
            im["path"] = Path(im["path"]).name
        for v in q["views"]:
            if v["depth"]:
                v["depth"] = Path(v["depth"]).name
        return q

    assert [canonical(q) for q in again.questions] == [canonical(q) for q in procedural.questions]
    for a, b in zip(again.questions, procedural.questions):
        for ia, ib in zip(a["images"], b["images"]):
            assert Path(ia["path"]).read_bytes() == Path(ib["path"]).read_bytes()
        for va, vb in zip(a["views"], b["views"]):
            if va["depth"]:
                assert np.array_equal(np.load(va["depth"]), np.load(vb["depth"]))
    other = build_questions(tmp_path / "other" / "q.jsonl", n=1, seed=5, size=96, types=["depth"])
    assert other.questions[0]["answer"] != procedural.questions[0]["answer"]


def test_file_is_relative_and_loads_back(procedural):
    path = procedural.path
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert all(not Path(im["path"]).is_absolute() for r in lines for im in r["images"])
    assert all(im["path"].startswith("q_images/") for r in lines for im in r["images"])
    assert load_questions(path) == procedural.questions
