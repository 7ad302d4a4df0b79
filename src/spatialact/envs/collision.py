"""The free camera's body: a sphere that walls, floor, ceiling and furniture stop (docs/environments.md, "Walls").

CameraNav's camera is a sphere of radius :data:`CAMERA_RADIUS` (0.10 m) centred on the optical centre — larger than
the corner of the near plane (0.026 m from the centre at the default 60° field of view), smaller than the goal
margin of the task builders (0.15 m). A step translates, then rotates (docs/conventions.md), so its sphere moves on a
straight segment from the pose it starts at to its target's position; :class:`SphereSweep` sweeps that segment in
the scene's PyBullet client and returns how far the sphere gets before it would enter a collision shape: the stop is
free of contact and within :data:`CONTACT_TOLERANCE` (1 cm) of it, measured along the segment.

How: a broad-phase query (``getOverlappingObjects`` over the box of a stretch of the segment grown by the radius)
first: a stretch no collision shape's bounding box comes near is clear at once (most steps in open space).
Otherwise probe spheres (collision shape only, mass 1 kg so that static geometry reports contacts with them, never
simulated — no ``stepSimulation`` in a free-camera world) are placed on the segment every :data:`SAMPLE_SPACING`
(5 cm), up to :data:`POOL_SIZE` at once, and one ``performCollisionDetection`` reports the bodies each one
penetrates (``contactDistance < 0``); between the last free sample and the first blocked one, five more probes in
one more call find the stop within 1 cm. Sampling every 5 cm with a 10 cm sphere sees every surface the centre
crosses; an edge or corner the sphere only grazes between two samples can be entered by at most
``r − √(r² − (h/2)²)`` = 3.2 mm. Bodies the sphere already penetrates where the segment starts (a start placed
inside furniture by a hand-made task) do not stop it, so it can leave them.

The probes are never drawn: PyBullet gives a body without a visual shape one made from its collision shape, so the
probes' is made fully transparent (the gl renderer and its scene dump skip shapes with alpha < 0.01) and the probes
are parked 10 km below the scene, beyond every camera's far plane, whenever no sweep runs (TinyRenderer and EGL).
Probe–probe contacts are filtered out (collision group 0x40, mask 0x3: PyBullet's default and static groups).

:func:`collision_problem` builds a task's scene without rendering and sweeps its ground-truth path and the straight
start→goal segment: the check the task builders drop tasks by and a run flags a task file with. Poses are C2W (4, 4)
float64, metres, world +Z up.
"""

from __future__ import annotations

import json
import math
import threading

import numpy as np

from .rendering import BulletBackend
from .replay_world import build_replay_world, is_replay_scene
from .scenes import build_scene, normalise_scene_spec

__all__ = ["CAMERA_RADIUS", "CONTACT_TOLERANCE", "SAMPLE_SPACING", "POOL_SIZE", "SphereSweep", "path_problem",
           "collision_problem", "CollisionChecker", "COLLIDES"]

#: The camera sphere's radius, metres.
CAMERA_RADIUS = 0.10
#: A blocked step stops within this distance (metres, along its segment) of the first contact, never in contact.
CONTACT_TOLERANCE = 0.01
#: Probe spacing along a swept segment, metres.
SAMPLE_SPACING = 0.05
#: Probes placed at once (one collision pass sweeps up to (POOL_SIZE − 1) × SAMPLE_SPACING = 1.95 m).
POOL_SIZE = 40
#: The reason (prefix) task builders count dropped tasks under.
COLLIDES = "the camera's path passes through the scene's geometry"
_PARK_Z = -1.0e4
_GROUP, _MASK = 0x40, 0x3
_REFINE = 5  # probes placed between the last free and the first blocked sample (spacing h / 6 ≤ 1 cm)


class SphereSweep:
    """:data:`POOL_SIZE` probe spheres of radius ``radius`` (metres) in PyBullet client ``client`` (module ``p``);
    see the module docstring. Made after the scene is built (and again after every rebuild: removing the bodies
    removes the probes)."""

    def __init__(self, p, client: int, radius: float = CAMERA_RADIUS):
        self.p, self.client, self.radius = p, int(client), float(radius)
        col = p.createCollisionShape(p.GEOM_SPHERE, radius=self.radius, physicsClientId=self.client)
        self.probes: list[int] = []
        for i in range(POOL_SIZE):
            b = p.createMultiBody(1.0, col, -1, basePosition=self._park_xyz(i), physicsClientId=self.client)
            p.changeVisualShape(b, -1, rgbaColor=[1, 1, 1, 0], physicsClientId=self.client)
            p.setCollisionFilterGroupMask(b, -1, _GROUP, _MASK, physicsClientId=self.client)
            self.probes.append(b)
        self._index = {b: i for i, b in enumerate(self.probes)}
        self.calls = 0  # collision passes run (for measurements)

    @staticmethod
    def _park_xyz(i: int) -> list[float]:
        return [10.0 * i, 0.0, _PARK_Z]

    def overlaps(self, points) -> list[set]:
        """The body ids each sphere centred at ``points`` (n ≤ :data:`POOL_SIZE`, 3; metres) penetrates."""
        p, cid = self.p, self.client
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if len(points) > POOL_SIZE:
            raise ValueError(f"at most {POOL_SIZE} points per pass, got {len(points)}")
        quat = (0.0, 0.0, 0.0, 1.0)
        for b, x in zip(self.probes, points):
            p.resetBasePositionAndOrientation(b, x.tolist(), quat, physicsClientId=cid)
        try:
            p.performCollisionDetection(physicsClientId=cid)
            contacts = p.getContactPoints(physicsClientId=cid)
        finally:
            for i, b in enumerate(self.probes[:len(points)]):
                p.resetBasePositionAndOrientation(b, self._park_xyz(i), quat, physicsClientId=cid)
                # setting the filter re-adds the probe to the collision world, which drops its contact manifolds:
                # no cached contact point of this placement is reported for the next one (under 1 µs a probe)
                p.setCollisionFilterGroupMask(b, -1, _GROUP, _MASK, physicsClientId=cid)
        self.calls += 1
        out: list[set] = [set() for _ in range(len(points))]
        for c in contacts:
            if c[8] >= 0.0:  # contactDistance: ≥ 0 is a near miss, not a penetration
                continue
            a, b = c[1], c[2]
            i = self._index.get(a)
            if i is not None and i < len(points):
                out[i].add(b)
            i = self._index.get(b)
            if i is not None and i < len(points):
                out[i].add(a)
        return out

    def near(self, a, b) -> bool:
        """Whether any collision shape's bounding box comes within the sphere's reach of the segment ``a``–``b``
        (a broad-phase query, a few µs): when none does, the segment is clear without placing a probe."""
        lo = np.minimum(a, b) - (self.radius + 0.01)
        hi = np.maximum(a, b) + (self.radius + 0.01)
        found = self.p.getOverlappingObjects(lo.tolist(), hi.tolist(), physicsClientId=self.client)
        return any(body not in self._index for body, _ in (found or ()))

    def sweep(self, a, b) -> tuple[float, int | None]:
        """How far a sphere moving straight from ``a`` to ``b`` (world, metres) gets: ``(t, body)`` with ``t`` in
        [0, 1] the fraction of the segment it reaches free of contact and ``body`` the id of the body that stops
        it, or ``(1.0, None)`` when the whole segment is clear. Bodies penetrated at ``a`` are ignored."""
        a = np.asarray(a, dtype=np.float64).reshape(3)
        b = np.asarray(b, dtype=np.float64).reshape(3)
        length = float(np.linalg.norm(b - a))
        n = max(1, math.ceil(length / SAMPLE_SPACING))
        ts = np.linspace(0.0, 1.0, n + 1)
        ignore: set | None = None
        free = 0.0
        for k in range(0, len(ts), POOL_SIZE):
            chunk = ts[k:k + POOL_SIZE]
            if not self.near(a + chunk[0] * (b - a), a + chunk[-1] * (b - a)):  # nothing within reach: clear
                ignore = set() if ignore is None else ignore
                free = float(chunk[-1])
                continue
            hits = self.overlaps(a + chunk[:, None] * (b - a))
            if ignore is None:
                ignore = hits[0]
            for t, h in zip(chunk, hits):
                h = h - ignore
                if h:
                    return self._refine(a, b, free, float(t), h, ignore)
                free = float(t)
        return 1.0, None

    def _refine(self, a, b, lo: float, hi: float, hit: set, ignore: set) -> tuple[float, int]:
        """The last free fraction in [lo, hi] (lo free, hi blocked by ``hit``) to within 1 cm of the segment."""
        length = float(np.linalg.norm(b - a))
        while (hi - lo) * length > CONTACT_TOLERANCE:
            ts = np.linspace(lo, hi, _REFINE + 2)[1:-1]
            hits = self.overlaps(a + ts[:, None] * (b - a))
            for t, h in zip(ts, hits):
                h = h - ignore
                if h:
                    hi, hit = float(t), h
                    break
                lo = float(t)
        return lo, min(hit)

    def penetrated(self, x) -> set:
        """The bodies a sphere centred at ``x`` (world, metres) penetrates."""
        x = np.asarray(x, dtype=np.float64).reshape(3)
        return self.overlaps([x])[0] if self.near(x, x) else set()


def path_problem(sweep: SphereSweep, poses, names: dict | None = None, goal=None) -> str | None:
    """Why a camera path (C2W poses (K+1, 4, 4), start first; each step a straight segment between consecutive
    positions) is not clear for the camera sphere, or None: the start inside geometry, a step whose segment
    enters geometry, or the straight segment from the start to ``goal`` (a C2W pose; default the path's end) doing
    so. ``names``: body id → name, for the reason."""
    poses = np.asarray(poses, dtype=np.float64)
    x = poses[:, :3, 3]
    end = x[-1] if goal is None else np.asarray(goal, dtype=np.float64)[:3, 3]

    def name(body: int) -> str:
        return (names or {}).get(body) or f"body {body}"

    inside = sweep.penetrated(x[0])
    if inside:
        return f"{COLLIDES}: the start is inside {name(min(inside))}"
    for i in range(len(x) - 1):
        t, body = sweep.sweep(x[i], x[i + 1])
        if body is not None:
            return (f"{COLLIDES}: ground-truth step {i + 1} hits {name(body)} after "
                    f"{t * float(np.linalg.norm(x[i + 1] - x[i])):.2f} m")
    t, body = sweep.sweep(x[0], end)
    if body is not None:
        return (f"{COLLIDES}: the straight start→goal segment hits {name(body)} after "
                f"{t * float(np.linalg.norm(end - x[0])):.2f} m")
    return None


class CollisionChecker:
    """Builds task scenes (without rendering) and sweeps their paths: :meth:`problem` per task, the scene reused
    while consecutive tasks share it. Close it (or use it as a context manager) to release the PyBullet client."""

    def __init__(self):
        self.world = BulletBackend("tiny")
        self._key = None
        self._sweep: SphereSweep | None = None
        self._names: dict = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        if self.world is not None:
            self.world.close()
            self.world = None

    def _load(self, spec: dict, where: str) -> None:
        replay = is_replay_scene(spec)
        if replay:
            key = json.dumps({k: v for k, v in spec.items() if k != "keyframes"}, sort_keys=True, default=str)
        else:
            spec = normalise_scene_spec(spec)
            key = json.dumps(spec, sort_keys=True)
        if key == self._key:
            return
        self.world.reset_world()
        self._key = None
        info = build_replay_world(self.world, spec, "nav", where)[0] if replay else build_scene(self.world, spec)
        self._names = {b: n for n, b in info.bodies.items()}
        self._sweep = SphereSweep(self.world.p, self.world.client)
        self._key = key

    def problem(self, task) -> str | None:
        """:func:`collision_problem` for ``task``, in this checker's world."""
        if task.kind != "nav" or task.scene is None or task.scene.is_game:
            return None
        self._load(task.scene, f"task {task.id}")
        return path_problem(self._sweep, task.gt.to_poses(task.start_pose), self._names, goal=task.goal_pose)


_LOCAL = threading.local()


def collision_problem(task) -> str | None:
    """Why a navigation task's camera would hit its scene, or None when it is clear: builds the task's scene
    (procedural room, mesh, camera-path replay room; without rendering) and sweeps the camera sphere
    (:data:`CAMERA_RADIUS`) along the ground-truth path (``task.gt`` from ``task.start_pose``, one straight segment
    per step) and the straight start→goal segment. The reason is one line naming the step or segment and the body
    hit. Tasks that run in no free-camera world (manipulation, hand, game tasks, no scene) give None. A scene that
    cannot be built raises its one-line ValueError. One checker per thread keeps the last scene, so consecutive
    tasks of one scene build it once."""
    checker = getattr(_LOCAL, "checker", None)
    if checker is None:
        checker = _LOCAL.checker = CollisionChecker()
    return checker.problem(task)
