"""The tabletop world both manipulation environments share (GripperManip, HandManip): a table with task objects,
an agent (a Panda arm, a hand) that grasps them, goal views, object-state success tests and random reach /
pick-and-place / push tasks.

Frames: world +Z up, metres; the controlled frame (end-effector or hand) is a (4, 4) C2W pose in its own axes.
A commanded pose ``T_cmd`` is composed exactly (``T_cmd ← T_cmd @ Δ``); the agent is driven there through
interpolated waypoints (linear position, slerp rotation; ≤ 2 cm apart, 5 mm near a free object, and ≤ 5°), with
a few physics substeps after each so that objects react. A grasp carries the object rigidly with the gripper
(its relative pose frozen at the moment of closing) and releasing drops it back to physics — the usual
"grasp assist" of kinematic benchmarks, chosen so that a correct answer always succeeds and scores do not depend
on contact-solver noise. The observing camera is the scene's exterior camera (an EgoDex replay: the recorded head
camera at keyframe min(k, K) after k steps); ``wrist_camera=True`` adds a ``wrist_rgb`` observation.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial.transform import Rotation, Slerp

from .. import geometry
from ..action_space import ActionSequence, StepSizes
from .pybullet_world import PyBulletWorld
from .sampling import sample_signed_counts

__all__ = ["TabletopWorld"]

_SUBSTEPS_PER_WAYPOINT = 4
_SETTLE_STEPS = 48


class TabletopWorld(PyBulletWorld):
    """Base of :class:`~spatialact.envs.panda_world.PandaWorld` and :class:`~spatialact.envs.hand_world.HandWorld`.
    Subclasses provide the agent: ``_load_agent``, ``_home``, ``_drive_to(T)`` (put the controlled frame at T),
    ``_measured_pose()``, ``_set_fingers(closed, width)``, ``agent_body``, and the geometry ``GRASP_POINT``
    (controlled-frame coordinates of the grasp centre), ``DOWN_AXIS`` / ``LATERAL_AXES`` (body axes that point down
    / sideways in the start orientation) and ``_start_rotation(yaw)``."""

    has_gripper = True
    default_generator = "tabletop"
    #: What the agent moves, as a reach task's instruction names it ("Move the <EFFECTOR> from ...").
    EFFECTOR = "gripper"
    GRASP_POINT = np.zeros(3)
    DOWN_AXIS = 2
    LATERAL_AXES = (0, 1)
    _AXIS_WEIGHTS = (1.0, 1.0, 1.0, 0.4, 0.4, 0.5)
    _MAX_COUNTS = (8, 8, 8, 5, 5, 6)

    def __init__(self, camera, renderer: str = "tiny", wrist_camera: bool = False):
        self.wrist_camera = bool(wrist_camera)
        super().__init__(camera, renderer)
        self._cmd = np.eye(4)
        self._held = None  # (object name, relative pose object-in-frame)
        self._object_init = {}
        self._gripper = 0

    # ----- scene --------------------------------------------------------------------------------------
    def extra_observation_spaces(self) -> dict:
        from gymnasium import spaces

        if not self.wrist_camera:
            return {}
        return {"wrist_rgb": spaces.Box(0, 255, (self.base_camera.height, self.base_camera.width, 3), np.uint8)}

    def extra_observations(self) -> dict:
        if not self.wrist_camera:
            return {}
        return {"wrist_rgb": self.render(self.wrist_pose(), self.camera, depth=False)[0]}

    def wrist_pose(self, T: np.ndarray | None = None) -> np.ndarray:
        """C2W pose of the wrist camera: beside the gripper, looking along the controlled frame's +Z — of the
        controlled frame as it is now, or at C2W pose ``T`` when given."""
        T = self.pose if T is None else np.asarray(T, dtype=np.float64)
        return T @ geometry.make_pose(geometry.rot_y(-0.35), [0.08, 0.0, -0.10])

    def populate_scene(self) -> None:
        p, cid = self.p, self.client
        self._load_agent()
        self._object_init = {n: p.getBasePositionAndOrientation(b, physicsClientId=cid)
                             for n, b in self.scene.objects.items()}
        self._held = None

    def reset_scene_state(self) -> None:
        p, cid = self.p, self.client
        self._release()
        for n, (pos, orn) in self._object_init.items():
            b = self.scene.objects[n]
            p.resetBasePositionAndOrientation(b, pos, orn, physicsClientId=cid)
            p.resetBaseVelocity(b, [0, 0, 0], [0, 0, 0], physicsClientId=cid)
        self._home()

    def object_pose(self, name: str) -> np.ndarray:
        """World pose (4, 4) of a task object."""
        p, cid = self.p, self.client
        pos, orn = p.getBasePositionAndOrientation(self.scene.objects[name], physicsClientId=cid)
        return geometry.pose_from_quat_trans(orn, pos)

    # ----- state --------------------------------------------------------------------------------------
    @property
    def pose(self) -> np.ndarray:
        """The measured pose of the controlled frame (C2W)."""
        return self._measured_pose()

    @property
    def commanded_pose(self) -> np.ndarray:
        """The commanded pose of the controlled frame (C2W): the start pose composed with every step's Δ, exactly."""
        return self._cmd.copy()

    @property
    def gripper(self) -> int:
        return self._gripper

    def set_start(self, task) -> None:
        self._gripper = 0
        self.step_count = 0
        self._release()
        self._home()
        self._set_fingers(False)
        self._cmd = task.start_pose.copy()
        self._drive_to(self._cmd)
        self._carry()

    def move(self, delta: np.ndarray) -> bool:
        start, end = self._cmd, self._cmd @ delta
        self._cmd = end
        dist = float(np.linalg.norm(end[:3, 3] - start[:3, 3]))
        ang = float(geometry.rotation_error(start, end))
        # near a free object the waypoints are 5 mm apart, so a kinematically placed agent pushes it instead of
        # jumping into it; elsewhere 2 cm
        spacing = 0.005 if self._object_near(start, end) else 0.02
        n = max(1, int(math.ceil(max(dist / spacing, ang / math.radians(5.0)))))
        rots = Rotation.from_matrix(np.stack([start[:3, :3], end[:3, :3]]))
        slerp = Slerp([0.0, 1.0], rots)
        p, cid = self.p, self.client
        for i in range(1, n + 1):
            s = i / n
            T = np.eye(4)
            T[:3, :3] = end[:3, :3] if i == n else slerp([s]).as_matrix()[0]
            T[:3, 3] = end[:3, 3] if i == n else (1 - s) * start[:3, 3] + s * end[:3, 3]
            self._drive_to(T, final=(i == n))
            for _ in range(_SUBSTEPS_PER_WAYPOINT):
                self._carry()
                p.stepSimulation(physicsClientId=cid)
            self._carry()
        self.step_count += 1
        return False

    def _object_near(self, start, end, radius: float = 0.12) -> bool:
        """Whether a task object that is not held lies within ``radius`` of the segment the grasp point sweeps."""
        a = (start @ np.append(self.GRASP_POINT, 1.0))[:3]
        b = (end @ np.append(self.GRASP_POINT, 1.0))[:3]
        ab = b - a
        for name in self.scene.objects:
            if self.held_object == name:
                continue
            x = self.object_pose(name)[:3, 3]
            t = 0.0 if ab @ ab < 1e-12 else float(np.clip((x - a) @ ab / (ab @ ab), 0.0, 1.0))
            if np.linalg.norm(a + t * ab - x) < radius:
                return True
        return False

    def set_gripper(self, g: int) -> None:
        p, cid = self.p, self.client
        if g == 1:
            name = self._graspable()
            if name is not None and self._held is None:
                rel = geometry.invert_pose(self.pose) @ self.object_pose(name)
                self._held = (name, rel)
                for link in range(-1, p.getNumJoints(self.agent_body, physicsClientId=cid)):
                    p.setCollisionFilterPair(self.agent_body, self.scene.objects[name], link, -1, 0,
                                             physicsClientId=cid)
            self._set_fingers(True, self._held_width())
        else:
            self._release()
            self._set_fingers(False)
        for _ in range(_SETTLE_STEPS):
            self._carry()
            p.stepSimulation(physicsClientId=cid)
        self._gripper = int(g)

    def _held_width(self) -> float | None:
        if self._held is None:
            return None
        p, cid = self.p, self.client
        lo, hi = p.getAABB(self.scene.objects[self._held[0]], physicsClientId=cid)
        return float(min(np.subtract(hi, lo)[:2]))

    def _graspable(self) -> str | None:
        """The task object whose centre lies in the grasp region (controlled-frame box around GRASP_POINT)."""
        Tinv = geometry.invert_pose(self.pose)
        best, best_d = None, np.inf
        for name in self.scene.objects:
            x = (Tinv @ self.object_pose(name)[:, 3])[:3] - self.GRASP_POINT
            if np.all(np.abs(x) <= self.GRASP_REGION) and np.linalg.norm(x) < best_d:
                best, best_d = name, float(np.linalg.norm(x))
        return best

    GRASP_REGION = np.array([0.03, 0.03, 0.03])

    def _carry(self) -> None:
        if self._held is None:
            return
        p, cid = self.p, self.client
        name, rel = self._held
        quat, pos = geometry.pose_to_quat_trans(self.pose @ rel)
        b = self.scene.objects[name]
        p.resetBasePositionAndOrientation(b, pos, quat, physicsClientId=cid)
        p.resetBaseVelocity(b, [0, 0, 0], [0, 0, 0], physicsClientId=cid)

    def _release(self) -> None:
        if self._held is None:
            return
        p, cid = self.p, self.client
        b = self.scene.objects[self._held[0]]
        for link in range(-1, p.getNumJoints(self.agent_body, physicsClientId=cid)):
            p.setCollisionFilterPair(self.agent_body, b, link, -1, 1, physicsClientId=cid)
        self._held = None

    @property
    def held_object(self) -> str | None:
        return None if self._held is None else self._held[0]

    # ----- success ------------------------------------------------------------------------------------
    def object_success(self, test: dict) -> bool:
        """``{"type": "object_at", "object": name, "position": [x, y, z], "tolerance": m, "released": bool}``:
        the object's centre within ``tolerance`` of ``position`` (and not held when ``released``)."""
        if test.get("type") != "object_at":
            raise ValueError(f"task {self.task.id!r}: success.object_state.type must be 'object_at', "
                             f"got {test.get('type')!r}")
        name = test.get("object")
        if name not in self.scene.objects:
            raise ValueError(f"task {self.task.id!r}: success.object_state.object {name!r} is not in the scene "
                             f"(objects: {sorted(self.scene.objects)})")
        d = np.linalg.norm(self.object_pose(name)[:3, 3] - np.asarray(test["position"], dtype=np.float64))
        ok = d <= float(test.get("tolerance", 0.03))
        if test.get("released", True):
            ok = ok and self.held_object != name
        return bool(ok)

    def extra_info(self) -> dict:
        """``commanded_pose`` (C2W), ``held_object`` (name or None), ``objects`` (name → centre, metres)."""
        return {"commanded_pose": self._cmd.copy(), "held_object": self.held_object,
                "objects": {n: self.object_pose(n)[:3, 3].copy() for n in self.scene.objects} if self.scene else {}}

    # ----- views --------------------------------------------------------------------------------------
    @property
    def camera_pose(self) -> np.ndarray:
        """The observing camera (C2W): ``rgb`` and ``depth`` are rendered from it — the exterior camera, or in an
        EgoDex replay the recorded head camera at keyframe min(k, K) after k steps."""
        return self.observing_camera()

    @property
    def goal_camera_pose(self) -> np.ndarray:
        """The observing camera of the goal view (an EgoDex replay: the head camera at the last keyframe)."""
        return self.observing_camera(final=True)

    def observing_camera(self, final: bool = False) -> np.ndarray:
        """C2W pose of the observing camera now (``final``: at the goal): the replay's recorded camera when it has
        one, else the scene's exterior camera."""
        if self.replay is not None:
            step = len(self.keyframes) - 1 if final else self.step_count
            T = self.replay.observing_camera(self.keyframes, step)
            if T is not None:
                return T
        return np.asarray(self.scene.exterior_camera, dtype=np.float64).copy()

    def snapshot(self):
        """The state :meth:`restore` puts back: the agent's joints and base, the task objects, the grasp, the
        commanded pose."""
        p, cid = self.p, self.client
        joints = [p.getJointState(self.agent_body, j, physicsClientId=cid)[0]
                  for j in range(p.getNumJoints(self.agent_body, physicsClientId=cid))]
        base = p.getBasePositionAndOrientation(self.agent_body, physicsClientId=cid)
        objs = {n: p.getBasePositionAndOrientation(b, physicsClientId=cid) for n, b in self.scene.objects.items()}
        return joints, base, objs, self._held, self._cmd.copy()

    def restore(self, snap) -> None:
        """Put back a :meth:`snapshot` (velocities zeroed)."""
        p, cid = self.p, self.client
        joints, base, objs, held, cmd = snap
        p.resetBasePositionAndOrientation(self.agent_body, *base, physicsClientId=cid)
        for j, q in enumerate(joints):
            p.resetJointState(self.agent_body, j, q, physicsClientId=cid)
        self._hold_joints()
        for n, (pos, orn) in objs.items():
            p.resetBasePositionAndOrientation(self.scene.objects[n], pos, orn, physicsClientId=cid)
            p.resetBaseVelocity(self.scene.objects[n], [0, 0, 0], [0, 0, 0], physicsClientId=cid)
        self._held, self._cmd = held, cmd

    # ----- the agent: hooks a subclass fills --------------------------------------------------------------------
    def _load_agent(self) -> None:
        """Load the agent into a freshly built scene, set ``agent_body`` and put it at its home posture."""
        raise NotImplementedError

    def _home(self) -> None:
        """Put the agent at its home posture, the gripper open."""
        raise NotImplementedError

    def _drive_to(self, T: np.ndarray, final: bool = True) -> None:
        """Put the controlled frame at C2W pose ``T`` (``final``: the pose a step ends at, reached precisely;
        otherwise a waypoint on the way)."""
        raise NotImplementedError

    def _measured_pose(self) -> np.ndarray:
        """The controlled frame's C2W pose as the simulator measures it."""
        raise NotImplementedError

    def _set_fingers(self, closed: bool, width: float | None = None) -> None:
        """Open or close the fingers (``width``: of the object held, metres)."""
        raise NotImplementedError

    def _hold_joints(self) -> None:
        """Hold the agent's joints where they were put while physics runs (motors); nothing by default."""

    def goal_view(self) -> np.ndarray:
        """The exterior view with the agent at the goal pose and task objects where the success test wants them."""
        p, cid = self.p, self.client
        snap = self.snapshot()
        try:
            test = self.task.success.get("object_state") or {}
            final_grip = self.task.gt.steps[-1].gripper if len(self.task.gt) else None
            if test.get("type") == "object_at" and test.get("object") in self.scene.objects:
                b = self.scene.objects[test["object"]]
                orn = p.getBasePositionAndOrientation(b, physicsClientId=cid)[1]
                p.resetBasePositionAndOrientation(b, list(map(float, test["position"])), orn, physicsClientId=cid)
            self._home_for_goal()
            self._drive_to(self.task.goal_pose)
            self._set_fingers(final_grip == 1)
            return self.render(self.goal_camera_pose, self.camera, depth=False)[0]
        finally:
            self.restore(snap)

    # ----- random tasks -------------------------------------------------------------------------------
    def _start_rotation(self, yaw: float) -> np.ndarray:
        """The controlled frame's rotation (3, 3) at a random task start, turned by ``yaw`` (rad) about world +Z."""
        raise NotImplementedError

    def pose_ok(self, T) -> bool:
        """Whether C2W pose ``T`` of the controlled frame may be part of a task: its grasp point inside the workspace
        box and the frame above the table top (subclasses add clearance and reachability)."""
        box = self.scene.workspace
        x = (T @ np.append(self.GRASP_POINT, 1.0))[:3]
        return bool(np.all(x >= box[:, 0]) and np.all(x <= box[:, 1]) and T[2, 3] >= box[2, 0])

    def sample_task(self, rng, *, sizes: StepSizes, cap: int = 10, n_steps=(1, 3), variant: str = "reach",
                    max_tries: int = 300):
        """A random task in the loaded tabletop: ``reach`` (1–3 random steps, 30% of them also setting the gripper),
        ``pick_place`` / ``grab_move`` (five steps carrying a cube onto a marker) or ``push`` (four steps pushing a
        cube, where the world has ``PUSH_AXES``). Object tasks rebuild the scene with their cube and marker."""
        if variant == "reach":
            return self._sample_reach(rng, n_steps, sizes, cap, max_tries)
        if variant in ("pick_place", "grab_move"):
            return self._sample_pick_place(rng, sizes, cap, variant, max_tries)
        if variant == "push" and self.PUSH_AXES:
            return self._sample_push(rng, sizes, cap, min(max_tries, 40))
        raise ValueError(f"unknown task variant {variant!r} for {self.kind!r} tasks")

    PUSH_AXES: tuple = ()  # body axes the agent may push along (GripperManip: its lateral axes)

    def _sample_push(self, rng, sizes, cap, max_tries):
        """Four steps: close the gripper and move beside the cube, descend, push it along one lateral axis, lift.

        The cube's resting place after the push is found by simulating the ground truth once (PyBullet is
        deterministic), and becomes the object-state target; the push must move it at least 4 cm.
        """
        base_spec = dict(self.scene.spec)
        params = {k: v for k, v in base_spec.get("params", {}).items() if k not in ("objects", "markers")}
        u = sizes.translation
        la, lb, dn = self.LATERAL_AXES[0], self.LATERAL_AXES[1], self.DOWN_AXIS
        size = 0.04
        table_z = self.scene.table_z
        box = self.scene.workspace
        for _ in range(max_tries):
            start = self.random_start(rng)
            axis = int(rng.choice(self.PUSH_AXES))
            sgn = int(rng.choice([-1, 1]))
            signed = np.zeros((4, 6), dtype=np.int64)
            signed[0, la], signed[0, lb] = rng.integers(-6, 7, size=2)
            n = int(rng.integers(5, 9))
            signed[1, dn] = n
            signed[2, axis] = sgn * int(rng.integers(4, 8))
            signed[3, dn] = -int(rng.integers(3, n + 1))
            gt = ActionSequence.from_signed_counts(signed, sizes, gripper=[1, 1, 1, 1], cap=cap)
            poses = gt.to_poses(start)
            contact = (poses[2] @ np.append(self.GRASP_POINT, 1.0))[:3]
            start = start.copy()
            start[2, 3] += table_z + size / 2 - contact[2]
            poses = gt.to_poses(start)
            # the cube stands 3 units ahead of the closed fingers along the push direction
            direction = sgn * start[:3, axis]
            cube = (poses[2] @ np.append(self.GRASP_POINT, 1.0))[:3] + 3 * u * direction
            if not (np.all(cube[:2] >= box[:2, 0]) and np.all(cube[:2] <= box[:2, 1])):
                continue
            if not self._path_ok(poses, at_object=(2, 3)):
                continue
            colour = [float(c) for c in (rng.uniform(0.0, 0.3), rng.uniform(0.3, 0.6), rng.uniform(0.7, 1.0))]
            objects = [{"name": "target", "shape": "cube", "size": size, "color": colour,
                        "position": [float(x) for x in cube], "mass": 0.1}]
            self.load_scene({**base_spec, "params": {**params, "objects": objects}})
            # simulate the ground truth once to find where the cube comes to rest
            provisional = self.make_task(start, poses[-1], gt, {}, scene=self.scene.spec)
            self._start_probe(provisional)
            for step in gt.steps:
                self.move(step.as_delta(sizes))
                if step.gripper is not None:
                    self.set_gripper(int(step.gripper))
            rest = self.object_pose("target")[:3, 3].copy()
            self.reset_scene_state()
            if np.linalg.norm(rest[:2] - cube[:2]) < 0.04 or abs(rest[2] - cube[2]) > 0.01:
                continue  # not pushed far enough, or knocked over / off the table
            markers = [{"position": [float(rest[0]), float(rest[1])], "size": size * 1.6, "color": [0.1, 0.75, 0.25]}]
            self.load_scene({**base_spec, "params": {**params, "objects": objects, "markers": markers}})
            success = {"position": 0.05, "rotation": math.radians(10.0),
                       "object_state": {"type": "object_at", "object": "target",
                                        "position": [float(x) for x in rest], "tolerance": 0.03,
                                        "released": False}}
            return self.make_task(start, poses[-1], gt, {"variant": "push", "n_steps": 4}, success=success,
                                   scene=self.scene.spec, instruction="Push the cube onto the square marker.")
        raise RuntimeError(f"no push layout found in scene {self.scene.spec} after {max_tries} tries")

    def _home_for_goal(self) -> None:
        """The posture the goal view is solved from (subclasses seed it from a recording)."""
        self._home()

    def _start_probe(self, task) -> None:
        """Put the agent at a task's start without rendering (used to simulate ground truths while sampling)."""
        self.task = task
        self.set_start(task)

    def random_start(self, rng, z_range=None) -> np.ndarray:
        """A random start pose (C2W) of the controlled frame: the start rotation at a yaw of ±45°, the grasp point
        uniform in the workspace box (5 cm in from its sides; height ``z_range``, default 10 cm in from its
        ends). Not checked: see :meth:`pose_ok`."""
        box = self.scene.workspace
        T = np.eye(4)
        T[:3, :3] = self._start_rotation(float(rng.uniform(-np.pi / 4, np.pi / 4)))
        g = np.array([rng.uniform(box[0, 0] + 0.05, box[0, 1] - 0.05), rng.uniform(box[1, 0] + 0.05, box[1, 1] - 0.05),
                      rng.uniform(*(z_range or (box[2, 0] + 0.1, box[2, 1] - 0.1)))])
        T[:3, 3] = g - T[:3, :3] @ self.GRASP_POINT
        return T

    def _sample_reach(self, rng, n_steps, sizes, cap, max_tries):
        for _ in range(max_tries):
            start = self.random_start(rng)
            if not self.pose_ok(start):
                continue
            k = int(rng.integers(n_steps[0], n_steps[1] + 1))
            signed = sample_signed_counts(rng, k, self._AXIS_WEIGHTS, self._MAX_COUNTS, cap)
            grip = [int(rng.integers(2)) if rng.random() < 0.3 else None for _ in range(k)]
            gt = ActionSequence.from_signed_counts(signed, sizes, gripper=[-1 if g is None else g for g in grip],
                                                   cap=cap)
            poses = gt.to_poses(start)
            if np.linalg.norm(poses[-1][:3, 3] - start[:3, 3]) < 2 * sizes.translation:
                continue
            if not all(self.pose_ok(T) for T in poses):
                continue
            tags = {"variant": "reach", "n_steps": k}
            return self.make_task(start, poses[-1], gt, tags,
                                   instruction=f"Move the {self.EFFECTOR} from its start pose to the goal pose.")
        raise RuntimeError(f"no reachable goal found in scene {self.scene.spec} after {max_tries} tries")

    def _sample_pick_place(self, rng, sizes, cap, variant, max_tries):
        """Five steps: move above the object (open), descend and close, lift, carry, lower and release."""
        base_spec = dict(self.scene.spec)
        params = {k: v for k, v in base_spec.get("params", {}).items() if k not in ("objects", "markers")}
        la, lb, dn = self.LATERAL_AXES[0], self.LATERAL_AXES[1], self.DOWN_AXIS
        size = 0.04
        table_z = self.scene.table_z
        for _ in range(max_tries):
            start = self.random_start(rng)
            signed = np.zeros((5, 6), dtype=np.int64)
            signed[0, la], signed[0, lb] = rng.integers(-8, 9, size=2)
            n = int(rng.integers(5, 10))
            m = int(rng.integers(3, n + 1))
            signed[1, dn] = n
            signed[2, dn] = -m
            signed[3, la], signed[3, lb] = rng.integers(-8, 9, size=2)
            signed[4, dn] = m
            if not signed[0].any() or abs(signed[3, la]) + abs(signed[3, lb]) < 4:
                continue
            gt = ActionSequence.from_signed_counts(signed, sizes, gripper=[0, 1, 1, 1, 0], cap=cap)
            poses = gt.to_poses(start)
            grasp = (poses[2] @ np.append(self.GRASP_POINT, 1.0))[:3]
            # lift the whole task so that the grasp point at the bottom is the object's centre on the table
            shift = table_z + size / 2 - grasp[2]
            start = start.copy()
            start[2, 3] += shift
            poses = gt.to_poses(start)
            obj = (poses[2] @ np.append(self.GRASP_POINT, 1.0))[:3]
            target = (poses[5] @ np.append(self.GRASP_POINT, 1.0))[:3]
            box = self.scene.workspace
            if np.linalg.norm(target[:2] - obj[:2]) < 0.08 or np.linalg.norm(target - obj) > 0.3:
                continue
            if not all(np.all(x[:2] >= box[:2, 0]) and np.all(x[:2] <= box[:2, 1]) for x in (obj, target)):
                continue
            if not self._path_ok(poses, at_object=(2, 5)):
                continue
            colour = [float(c) for c in (rng.uniform(0.6, 1.0), rng.uniform(0.0, 0.4), rng.uniform(0.0, 0.6))]
            objects = [{"name": "target", "shape": "cube", "size": size, "color": colour,
                        "position": [float(x) for x in obj], "mass": 0.1}]
            markers = [{"position": [float(target[0]), float(target[1])], "size": size * 1.6,
                        "color": [0.1, 0.75, 0.25]}]
            spec = {**base_spec, "params": {**params, "objects": objects, "markers": markers}}
            self.load_scene(spec)
            success = {"position": 0.05, "rotation": math.radians(10.0),
                       "object_state": {"type": "object_at", "object": "target",
                                        "position": [float(x) for x in target], "tolerance": 0.03,
                                        "released": True}}
            word = "Pick up" if variant == "pick_place" else "Grab"
            return self.make_task(start, poses[-1], gt, {"variant": variant, "n_steps": 5}, success=success,
                                   scene=self.scene.spec,
                                   instruction=f"{word} the cube and put it down on the square marker.")
        raise RuntimeError(f"no pick-and-place layout found in scene {self.scene.spec} after {max_tries} tries")

    def _path_ok(self, poses, at_object=()) -> bool:
        """Every pose reachable, and clear of the table except those in ``at_object`` (the poses touching the
        object, which may come closer)."""
        return (all(self.pose_ok(T) or k in at_object for k, T in enumerate(poses))
                and all(self._reachable(T) for T in poses))

    def _reachable(self, T) -> bool:
        return True
