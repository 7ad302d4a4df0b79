"""Seeded scenes in a :class:`~spatialact.envs.rendering.BulletBackend`: procedural rooms, tabletops, mesh files.

A scene is described by a JSON-able spec, the ``scene`` field of a task::

    {"generator": "room" | "tabletop" | "mesh", "seed": int, "mesh": path (mesh only), "params": {...}}

and :func:`build_scene` rebuilds exactly the same scene from it (same bodies, textures and light). World frame
+Z up, metres. Everything in a room is static (the navigation camera is kinematic and passes through it);
tabletop task objects listed in ``params["objects"]`` are dynamic so the robot and hand can move them.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, field

import numpy as np

from .camera import look_at
from .gl.meshes import box_faces
from .rendering import BulletBackend
from .textures import texture_path

__all__ = ["SceneInfo", "SceneBuilder", "build_scene", "normalise_scene_spec", "load_scene_meshes", "ROOM_LAYOUTS",
           "GENERATORS", "MESH_FORMATS", "light_for"]

ROOM_LAYOUTS = ("living", "kitchen", "office", "playroom")
GENERATORS = ("room", "tabletop", "mesh")
# Mesh files a scene may name: Habitat's scene formats (.glb/.gltf, .obj, .ply) and the two other triangle formats
# trimesh reads without extra packages. Anything else (.fbx, .usd, .blend, ...) is refused by name.
MESH_FORMATS = (".glb", ".gltf", ".obj", ".ply", ".stl", ".off")

# Wall colours with clearly different hues, so each wall is a landmark of its own.
_WALL_COLOURS = [(0.85, 0.80, 0.65), (0.62, 0.75, 0.85), (0.78, 0.62, 0.60), (0.66, 0.80, 0.62),
                 (0.85, 0.72, 0.50), (0.74, 0.68, 0.84), (0.90, 0.90, 0.88), (0.55, 0.70, 0.70)]
_WOOD = [(0.55, 0.37, 0.20), (0.70, 0.52, 0.33), (0.42, 0.28, 0.16), (0.78, 0.64, 0.45)]
_FABRIC = [(0.25, 0.35, 0.60), (0.60, 0.20, 0.20), (0.30, 0.50, 0.30), (0.45, 0.45, 0.48), (0.70, 0.55, 0.25)]
# Small objects from pybullet_data: (urdf, global scale).
_CLUTTER = [("objects/mug.urdf", 1.0), ("duck_vhacd.urdf", 1.0), ("lego/lego.urdf", 1.5),
            ("jenga/jenga.urdf", 1.0), ("teddy_vhacd.urdf", 1.0), ("sphere_small.urdf", 1.5),
            ("cube_small.urdf", 1.5), ("soccerball.urdf", 0.12)] + [
    (f"random_urdfs/{i:03d}/{i:03d}.urdf", 1.0) for i in range(0, 60, 3)]
_FLOOR_TOYS = [("teddy_large.urdf", 0.25), ("r2d2.urdf", 0.6), ("soccerball.urdf", 0.25),
               ("sphere2red.urdf", 0.35), ("duck_vhacd.urdf", 4.0)]


@dataclass
class SceneInfo:
    """What was built: the spec, body ids by name, and the regions tasks may use (world frame, metres).

    ``nav_box`` (3, 2): min/max of x, y, z where a navigation camera may be; ``obstacles``: AABBs (lo, hi) of
    furniture a camera must not start inside; ``table_z``: the tabletop height (tabletop scenes);
    ``workspace`` (3, 2): the box end-effector goals are drawn from; ``exterior_camera``: a C2W pose looking at
    the workspace.
    """

    spec: dict
    bodies: dict = field(default_factory=dict)
    nav_box: np.ndarray | None = None
    obstacles: list = field(default_factory=list)
    table_z: float | None = None
    workspace: np.ndarray | None = None
    exterior_camera: np.ndarray | None = None
    light: dict = field(default_factory=dict)
    objects: dict = field(default_factory=dict)  # dynamic task objects: name -> body id
    robot_base: np.ndarray | None = None  # C2W pose of the robot base (replay scenes); None: on the table

    def inside_obstacle(self, x: np.ndarray, margin: float = 0.1) -> bool:
        return any(np.all(x >= lo - margin) and np.all(x <= hi + margin) for lo, hi in self.obstacles)


def normalise_scene_spec(spec) -> dict:
    """Check a scene spec and fill defaults; a clear error names the bad field."""
    if isinstance(spec, str):
        spec = {"generator": spec, "seed": 0}
    if not isinstance(spec, dict):
        raise ValueError(f"scene must be a dict like {{'generator': 'room', 'seed': 0}}, got {spec!r}")
    gen = spec.get("generator") or ("mesh" if spec.get("mesh") else None)
    if gen not in GENERATORS:
        raise ValueError(f"scene.generator must be one of {GENERATORS}, got {spec.get('generator')!r}")
    seed = spec.get("seed", 0) or 0
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"scene.seed must be an integer, got {seed!r}")
    out = {"generator": gen, "seed": int(seed)}
    if gen == "mesh":
        mesh = spec.get("mesh")
        if not mesh or not isinstance(mesh, (str, os.PathLike)):
            raise ValueError("scene.mesh: a mesh scene needs the path of a "
                             f"{'/'.join(MESH_FORMATS)} file, got {mesh!r}")
        ext = os.path.splitext(str(mesh))[1].lower()
        if ext not in MESH_FORMATS:
            raise ValueError(f"scene.mesh: {str(mesh)!r}: format {ext or '(no extension)'} is not supported (use "
                             f"{', '.join(MESH_FORMATS)}; convert other formats, e.g. with Blender)")
        out["mesh"] = str(mesh)
    if spec.get("params"):
        if not isinstance(spec["params"], dict):
            raise ValueError(f"scene.params must be an object, got {type(spec['params']).__name__}")
        out["params"] = dict(spec["params"])
        if out["params"].get("distractors") is not None:
            _distractors_param(out["params"]["distractors"])
        if out["params"].get("camera") is not None:
            _camera_param(out["params"]["camera"])
    return out


def build_scene(world: BulletBackend, spec) -> SceneInfo:
    """Build the scene a spec describes into an empty world."""
    spec = normalise_scene_spec(spec)
    builder = {"room": _build_room, "tabletop": _build_tabletop, "mesh": _build_mesh}[spec["generator"]]
    info = builder(world, spec)
    world.light = info.light
    return info


# ----- primitives --------------------------------------------------------------------------------------

def _quat_yaw(yaw: float):
    return (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))


def _box_mesh(half, tile: float):
    """Vertices, indices, uvs and normals of a box with texture coordinates tiled every ``tile`` metres."""
    verts, idx, uvs, normals = [], [], [], []
    for corners, cuv, (a, b), normal, triangles in box_faces(half):
        base = len(verts)
        verts += corners
        uvs += [[(ua + 1) * half[a] / tile, (ub + 1) * half[b] / tile] for ua, ub in cuv]
        normals += [list(normal) for _ in corners]
        idx += [base + i for t in triangles for i in t]
    return verts, idx, uvs, normals


def _box_obj(half, tile: float) -> str:
    """Path of a cached Wavefront .obj of a box with these half extents and UVs tiled every ``tile`` metres."""
    from .textures import texture_cache_dir

    key = "_".join(f"{x:.4f}" for x in (*half, tile))
    path = os.path.join(texture_cache_dir(), f"box_{key}.obj")
    if not os.path.exists(path):
        v, idx, uv, n = _box_mesh(half, tile)
        lines = [f"v {a:.6f} {b:.6f} {c:.6f}" for a, b, c in v]
        lines += [f"vt {a:.6f} {b:.6f}" for a, b in uv]
        lines += [f"vn {a:.1f} {b:.1f} {c:.1f}" for a, b, c in n]
        for k in range(0, len(idx), 3):
            a, b, c = (i + 1 for i in idx[k:k + 3])
            lines.append(f"f {a}/{a}/{a} {b}/{b}/{b} {c}/{c}/{c}")
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, path)
    return path


class _Builder:
    def __init__(self, world: BulletBackend, rng: np.random.Generator):
        self.w = world
        self.p = world.p
        self.cid = world.client
        self.rng = rng

    def box(self, half, pos, yaw=0.0, color=(0.7, 0.7, 0.7), texture=None, tile=1.0, mass=0.0,
            collide=True, orientation=None) -> int:
        """A box of half extents ``half`` centred at ``pos`` (world), turned by ``yaw`` about +Z or by the
        quaternion ``orientation`` (xyzw) when given; textured (tiled every ``tile`` m) or plain ``color``."""
        p = self.p
        half = [float(h) for h in half]
        if texture is not None:
            # a textured box is an .obj file with tiled UVs: PyBullet's EGL renderer crashes on meshes passed as
            # vertex arrays, so both renderers read the same file
            vis = p.createVisualShape(p.GEOM_MESH, fileName=_box_obj(half, tile), rgbaColor=[1, 1, 1, 1],
                                      physicsClientId=self.cid)
        else:
            vis = p.createVisualShape(p.GEOM_BOX, halfExtents=half, rgbaColor=list(color) + [1],
                                      physicsClientId=self.cid)
        col = p.createCollisionShape(p.GEOM_BOX, halfExtents=half, physicsClientId=self.cid) if collide else -1
        orn = _quat_yaw(yaw) if orientation is None else [float(q) for q in orientation]
        body = p.createMultiBody(mass, col, vis, basePosition=list(map(float, pos)),
                                 baseOrientation=orn, physicsClientId=self.cid)
        if texture is not None:
            self.w.set_texture(body, -1, texture)  # recorded, so the gl renderer can draw it too
        return body

    def cylinder(self, radius, length, pos, color, mass=0.0) -> int:
        p = self.p
        vis = p.createVisualShape(p.GEOM_CYLINDER, radius=radius, length=length, rgbaColor=list(color) + [1],
                                  physicsClientId=self.cid)
        col = p.createCollisionShape(p.GEOM_CYLINDER, radius=radius, height=length, physicsClientId=self.cid)
        return p.createMultiBody(mass, col, vis, basePosition=list(map(float, pos)), physicsClientId=self.cid)

    def sphere(self, radius, pos, color, mass=0.0) -> int:
        p = self.p
        vis = p.createVisualShape(p.GEOM_SPHERE, radius=radius, rgbaColor=list(color) + [1], physicsClientId=self.cid)
        col = p.createCollisionShape(p.GEOM_SPHERE, radius=radius, physicsClientId=self.cid)
        return p.createMultiBody(mass, col, vis, basePosition=list(map(float, pos)), physicsClientId=self.cid)

    def urdf(self, name, pos, yaw=0.0, scale=1.0, fixed=True) -> int:
        return self.p.loadURDF(name, list(map(float, pos)), _quat_yaw(yaw), useFixedBase=fixed,
                               globalScaling=float(scale), physicsClientId=self.cid)

    def aabb(self, body):
        lo, hi = self.p.getAABB(body, -1, physicsClientId=self.cid)
        n = self.p.getNumJoints(body, physicsClientId=self.cid)
        lo, hi = np.array(lo), np.array(hi)
        for j in range(n):
            a, b = self.p.getAABB(body, j, physicsClientId=self.cid)
            lo, hi = np.minimum(lo, a), np.maximum(hi, b)
        return lo, hi

    def set_on(self, body, z_surface, xy=None, yaw=None):
        """Move a body so its lowest point rests on height ``z_surface`` (at ``xy`` if given)."""
        p = self.p
        pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=self.cid)
        lo, _ = self.aabb(body)
        new = np.array(pos, dtype=float)
        new[2] += z_surface - lo[2] + 1e-3
        if xy is not None:
            new[:2] = xy
        if yaw is not None:
            orn = _quat_yaw(yaw)
        p.resetBasePositionAndOrientation(body, new.tolist(), orn, physicsClientId=self.cid)

    def clutter(self, surface_lo, surface_hi, z, n, fixed=True) -> list[int]:
        """``n`` random small pybullet_data objects on a rectangle at height ``z``, spaced apart."""
        out, placed = [], []
        for _ in range(n):
            for _try in range(20):
                xy = self.rng.uniform(surface_lo, surface_hi)
                if all(np.linalg.norm(xy - q) > 0.16 for q in placed):
                    break
            else:
                continue
            name, scale = _CLUTTER[int(self.rng.integers(len(_CLUTTER)))]
            b = self.urdf(name, [xy[0], xy[1], z + 0.3], yaw=float(self.rng.uniform(-np.pi, np.pi)),
                          scale=scale, fixed=fixed)
            self.set_on(b, z, xy)
            placed.append(xy)
            out.append(b)
        return out


SceneBuilder = _Builder  # public name: bodies (boxes, textured boxes, URDFs) in a BulletBackend, seeded


def light_for(seed: int) -> dict:
    """The TinyRenderer light of a seed (the direction drawn as in procedural scenes)."""
    return _light(np.random.default_rng([int(seed), 9]))


# ----- rooms -------------------------------------------------------------------------------------------

class _Floorplan:
    """Axis-aligned footprints already taken in the room, for rejection sampling of furniture."""

    def __init__(self, Lx, Ly):
        self.Lx, self.Ly = Lx, Ly
        self.rects = []

    def free(self, cx, cy, hx, hy, gap=0.25) -> bool:
        if abs(cx) + hx > self.Lx / 2 - 0.05 or abs(cy) + hy > self.Ly / 2 - 0.05:
            return False
        return all(abs(cx - x) >= hx + w + gap or abs(cy - y) >= hy + h + gap for x, y, w, h in self.rects)

    def take(self, cx, cy, hx, hy):
        self.rects.append((cx, cy, hx, hy))


def _wall_slot(rng, Lx, Ly, depth, width):
    """A spot with its back against a random wall: centre (x, y), yaw facing into the room, footprint half-sizes."""
    wall = int(rng.integers(4))
    if wall in (0, 1):  # walls at y = ±Ly/2, furniture faces −/+y
        s = 1 if wall == 0 else -1
        x = rng.uniform(-Lx / 2 + width / 2 + 0.1, Lx / 2 - width / 2 - 0.1)
        return x, s * (Ly / 2 - depth / 2 - 0.06), (-np.pi / 2 if s > 0 else np.pi / 2), width / 2, depth / 2
    s = 1 if wall == 2 else -1
    y = rng.uniform(-Ly / 2 + width / 2 + 0.1, Ly / 2 - width / 2 - 0.1)
    return s * (Lx / 2 - depth / 2 - 0.06), y, (np.pi if s > 0 else 0.0), depth / 2, width / 2


def _place(b: _Builder, plan: _Floorplan, depth, width, against_wall: bool, tries=40):
    rng = b.rng
    for _ in range(tries):
        if against_wall:
            x, y, yaw, hx, hy = _wall_slot(rng, plan.Lx, plan.Ly, depth, width)
        else:
            yaw = float(rng.choice([0.0, np.pi / 2]))
            hx, hy = (width / 2, depth / 2) if yaw == 0.0 else (depth / 2, width / 2)
            x = rng.uniform(-plan.Lx / 2 + hx + 0.6, plan.Lx / 2 - hx - 0.6)
            y = rng.uniform(-plan.Ly / 2 + hy + 0.6, plan.Ly / 2 - hy - 0.6)
        if plan.free(x, y, hx, hy):
            plan.take(x, y, hx, hy)
            return float(x), float(y), float(yaw)
    return None


def _local(x, y, yaw, dx, dy):
    """A point (dx, dy) in a piece's frame (x along its width, y toward its front) to world x, y."""
    c, s = math.cos(yaw), math.sin(yaw)
    return x + c * dx - s * dy, y + s * dx + c * dy


def _bookshelf(b: _Builder, x, y, yaw, wood):
    # width 0.9 (local x), depth 0.35 (local y), height 1.8; books of random colours on 4 shelves.
    W, D, H = 0.9, 0.35, 1.8
    wood_tex = texture_path("wood", wood, 1)
    ids = []
    for dx in (-W / 2 + 0.02, W / 2 - 0.02):
        px, py = _local(x, y, yaw, dx, 0)
        ids.append(b.box([0.02, D / 2, H / 2], [px, py, H / 2], yaw, texture=wood_tex, tile=0.5))
    px, py = _local(x, y, yaw, 0, -D / 2 + 0.01)
    ids.append(b.box([W / 2, 0.01, H / 2], [px, py, H / 2], yaw, color=np.array(wood) * 0.7))
    for k in range(5):
        z = 0.04 + k * (H - 0.08) / 4
        ids.append(b.box([W / 2, D / 2, 0.015], [x, y, z], yaw, texture=wood_tex, tile=0.5))
        if k == 4:
            break
        dx = -W / 2 + 0.05
        while dx < W / 2 - 0.08:
            t = b.rng.uniform(0.02, 0.05)
            h = b.rng.uniform(0.18, 0.3)
            c = b.rng.random(3) * 0.8 + 0.1
            px, py = _local(x, y, yaw, dx + t, 0.02)
            ids.append(b.box([t, 0.12, h / 2], [px, py, z + 0.015 + h / 2], yaw, color=c, collide=False))
            dx += 2 * t + 0.005
    return ids


def _sofa(b: _Builder, x, y, yaw, colour):
    tex = texture_path("fabric", colour, 2)
    ids = [b.box([0.9, 0.4, 0.2], [*_local(x, y, yaw, 0, 0.05), 0.22], yaw, texture=tex, tile=0.5)]
    ids.append(b.box([0.9, 0.1, 0.35], [*_local(x, y, yaw, 0, -0.35), 0.45], yaw, texture=tex, tile=0.5))
    for s in (-1, 1):
        ids.append(b.box([0.1, 0.45, 0.3], [*_local(x, y, yaw, s * 0.95, 0), 0.3], yaw, texture=tex, tile=0.5))
    cushion = b.rng.random(3) * 0.6 + 0.3
    ids.append(b.box([0.18, 0.06, 0.16], [*_local(x, y, yaw, -0.55, -0.2), 0.56], yaw, color=cushion))
    return ids


def _counter(b: _Builder, x, y, yaw, wood):
    ids = [b.box([0.8, 0.3, 0.45], [x, y, 0.45], yaw, texture=texture_path("stripes", wood, 3), tile=0.4)]
    ids.append(b.box([0.82, 0.32, 0.02], [x, y, 0.92], yaw, texture=texture_path("tiles", (0.85, 0.85, 0.8), 4),
                     tile=0.3))
    lo, hi = np.array(_local(x, y, yaw, -0.7, -0.2)), np.array(_local(x, y, yaw, 0.7, 0.2))
    ids += b.clutter(np.minimum(lo, hi), np.maximum(lo, hi), 0.94, 3)
    return ids


def _plant(b: _Builder, x, y):
    ids = [b.cylinder(0.15, 0.35, [x, y, 0.175], (0.65, 0.35, 0.2))]
    for k in range(4):
        off = b.rng.uniform(-0.12, 0.12, 2)
        ids.append(b.sphere(b.rng.uniform(0.13, 0.2), [x + off[0], y + off[1], 0.5 + 0.15 * k],
                            (0.15 + 0.1 * b.rng.random(), 0.45 + 0.2 * b.rng.random(), 0.15)))
    return ids


def _lamp(b: _Builder, x, y):
    return [b.cylinder(0.15, 0.03, [x, y, 0.015], (0.2, 0.2, 0.2)),
            b.cylinder(0.02, 1.5, [x, y, 0.75], (0.3, 0.3, 0.3)),
            b.cylinder(0.2, 0.3, [x, y, 1.55], (0.95, 0.9, 0.7))]


def _table_with_clutter(b: _Builder, x, y, yaw, square: bool):
    if square:
        t = b.urdf("table_square/table_square.urdf", [x, y, 0], yaw)
        half = (0.25, 0.25)
    else:
        t = b.urdf("table/table.urdf", [x, y, 0], yaw, scale=0.8)
        half = (0.55, 0.35)
    _, hi = b.aabb(t)
    if yaw != 0.0 and not square:
        half = (half[1], half[0])
    lo2 = np.array([x - half[0], y - half[1]])
    hi2 = np.array([x + half[0], y + half[1]])
    return [t] + b.clutter(lo2, hi2, float(hi[2]), int(b.rng.integers(2, 5)))


def _build_room(world: BulletBackend, spec: dict) -> SceneInfo:
    """A furnished room of a layout (living, kitchen, office, playroom), seeded: the shell (floor, ceiling, four
    walls), what hangs on the walls (a door, a window, paintings), the furniture of the layout and the distractors
    of ``params["distractors"]``. Every part draws from one random stream in a fixed order, so a seed always gives
    the same room."""
    params = spec.get("params", {})
    rng = np.random.default_rng([spec["seed"], 1])
    b = _Builder(world, rng)
    drawn = ROOM_LAYOUTS[int(rng.integers(len(ROOM_LAYOUTS)))]  # always drawn, so the stream never shifts
    layout = params.get("layout") or drawn
    if layout not in ROOM_LAYOUTS:
        raise ValueError(f"scene.params.layout must be one of {ROOM_LAYOUTS}, got {layout!r}")
    room = _Room(float(rng.uniform(4.5, 6.5)), float(rng.uniform(4.0, 6.0)), 2.7)
    bodies: dict = {}
    _room_shell(b, room, layout, spec["seed"], bodies)
    plan = _Floorplan(room.Lx, room.Ly)
    _wall_items(b, room, plan, bodies)
    obstacles = _furnish(b, plan, layout, bodies)
    n_distractors = _distractors_param(params.get("distractors", 0) or 0)
    for i, (body, lo, hi) in enumerate(_distractors(world, plan, spec["seed"], n_distractors)):
        bodies[f"distractor{i}"] = body
        obstacles.append((lo, hi))
    Lx, Ly = room.Lx, room.Ly
    nav_box = np.array([[-Lx / 2 + 0.5, Lx / 2 - 0.5], [-Ly / 2 + 0.5, Ly / 2 - 0.5], [0.6, 2.0]])
    light = _light(rng)
    spec_params = dict(params)
    spec_params.setdefault("layout", layout)
    return SceneInfo(spec={**spec, "params": spec_params}, bodies=bodies, nav_box=nav_box, obstacles=obstacles,
                     light=light)


@dataclass(frozen=True)
class _Room:
    """A room's inner size in metres: ``Lx`` along x, ``Ly`` along y (centred on the origin), height ``H``."""

    Lx: float
    Ly: float
    H: float

    def on_wall(self, k, u, z, hw, hh, depth=0.02):
        """(half extents, centre) of a flat item on wall k (0 at +y, 1 at −y, 2 at +x, 3 at −x) at position u along
        it, centre height z."""
        if k < 2:
            s = 1 if k == 0 else -1
            return [hw, depth, hh], [u, s * (self.Ly / 2 - depth), z]
        s = 1 if k == 2 else -1
        return [depth, hw, hh], [s * (self.Lx / 2 - depth), u, z]


def _room_shell(b: _Builder, room: _Room, layout: str, seed: int, bodies: dict) -> None:
    """The floor (wood, tiles or carpet by layout), the tiled ceiling and four walls of different colours and
    patterns, each with a dark skirting board."""
    rng = b.rng
    Lx, Ly, H = room.Lx, room.Ly, room.H
    floor_kind = "wood" if layout in ("living", "office") else ("tiles" if layout == "kitchen" else "carpet")
    floor_col = _WOOD[int(rng.integers(len(_WOOD)))] if floor_kind == "wood" else tuple(rng.uniform(0.4, 0.8, 3))
    bodies["floor"] = b.box([Lx / 2 + 0.1, Ly / 2 + 0.1, 0.05], [0, 0, -0.05],
                            texture=texture_path(floor_kind, floor_col, seed % 7), tile=1.0)
    bodies["ceiling"] = b.box([Lx / 2 + 0.1, Ly / 2 + 0.1, 0.05], [0, 0, H + 0.05],
                              texture=texture_path("tiles", (0.82, 0.82, 0.78), 0), tile=2.4)
    wall_cols = rng.permutation(len(_WALL_COLOURS))[:4]
    kinds = ["wallpaper", "stripes", "plain", "wallpaper"]
    rng.shuffle(kinds)
    # walls: 0 at +y, 1 at −y, 2 at +x, 3 at −x
    walls = [([Lx / 2 + 0.1, 0.05, H / 2], [0, Ly / 2 + 0.05, H / 2]),
             ([Lx / 2 + 0.1, 0.05, H / 2], [0, -Ly / 2 - 0.05, H / 2]),
             ([0.05, Ly / 2 + 0.1, H / 2], [Lx / 2 + 0.05, 0, H / 2]),
             ([0.05, Ly / 2 + 0.1, H / 2], [-Lx / 2 - 0.05, 0, H / 2])]
    for k, (half, pos) in enumerate(walls):
        bodies[f"wall{k}"] = b.box(half, pos, texture=texture_path(kinds[k], _WALL_COLOURS[wall_cols[k]], k),
                                   tile=0.8)
        # a dark skirting board along the bottom of each wall, 1.5 cm thick, standing just inside it
        along_y = k < 2  # walls 0 and 1 run along x and face ±y
        axis = 1 if along_y else 0
        sk_half = [half[0], 0.015, 0.05] if along_y else [0.015, half[1], 0.05]
        sk_pos = [pos[0], pos[1], 0.05]
        sk_pos[axis] -= np.sign(pos[axis]) * 0.06
        b.box(sk_half, sk_pos, color=(0.25, 0.2, 0.18), collide=False)


def _wall_items(b: _Builder, room: _Room, plan: _Floorplan, bodies: dict) -> None:
    """A door on one wall (its footprint kept free in ``plan``), a window on another, 2–4 framed paintings on the
    other two."""
    rng = b.rng
    Lx, Ly = room.Lx, room.Ly
    wall_order = rng.permutation(4)
    dk = int(wall_order[0])
    span = (Lx if dk < 2 else Ly) / 2 - 0.7
    du = float(rng.uniform(-span, span))
    half, pos = room.on_wall(dk, du, 1.0, 0.45, 1.0, 0.03)
    bodies["door"] = b.box(half, pos, texture=texture_path("wood", _WOOD[2], 5), tile=0.6)
    kh, kp = room.on_wall(dk, du + 0.33, 1.0, 0.03, 0.03, 0.07)
    b.box(kh, kp, color=(0.85, 0.75, 0.3), collide=False)
    if dk < 2:
        plan.take(du, np.sign(pos[1]) * (Ly / 2 - 0.4), 0.55, 0.45)
    else:
        plan.take(np.sign(pos[0]) * (Lx / 2 - 0.4), du, 0.45, 0.55)
    wk = int(wall_order[1])
    span = (Lx if wk < 2 else Ly) / 2 - 1.0
    wu = float(rng.uniform(-span, span))
    fh, fp = room.on_wall(wk, wu, 1.5, 0.65, 0.55, 0.03)
    b.box(fh, fp, color=(0.95, 0.95, 0.95))
    ph, pp = room.on_wall(wk, wu, 1.5, 0.58, 0.48, 0.04)
    bodies["window"] = b.box(ph, pp, color=(0.55, 0.75, 0.95), collide=False)
    n_paint = int(rng.integers(2, 5))
    for i in range(n_paint):
        k = int(wall_order[2 + (i % 2)])
        span = (Lx if k < 2 else Ly) / 2 - 0.6
        u = float(rng.uniform(-span, span))
        hw, hh = float(rng.uniform(0.2, 0.45)), float(rng.uniform(0.18, 0.35))
        z = float(rng.uniform(1.4, 1.8))
        fh, fp = room.on_wall(k, u, z, hw + 0.03, hh + 0.03, 0.025)
        b.box(fh, fp, color=(0.15, 0.1, 0.05), collide=False)
        ph, pp = room.on_wall(k, u, z, hw, hh, 0.035)
        bodies[f"painting{i}"] = b.box(ph, pp, texture=texture_path("painting", (0, 0, 0), int(rng.integers(1 << 30))),
                                       tile=2 * max(hw, hh), collide=False)


# The furniture of each layout, placed in this order.
_LAYOUT_PIECES = {
    "living": ["sofa", "table", "bookshelf", "plant", "lamp", "rug", "toy"],
    "kitchen": ["counter", "counter", "table", "square", "plant", "toy"],
    "office": ["bookshelf", "bookshelf", "table", "square", "plant", "lamp"],
    "playroom": ["square", "toy", "toy", "toy", "bookshelf", "rug", "sofa"],
}
# A piece's footprint: (depth, width, against a wall).
_PIECE_SIZES = {"sofa": (0.95, 2.1, True), "table": (0.8, 1.2, False), "square": (0.6, 0.6, False),
                "bookshelf": (0.4, 0.95, True), "plant": (0.45, 0.45, True), "lamp": (0.45, 0.45, True),
                "counter": (0.65, 1.65, True), "toy": (0.5, 0.5, False)}


def _furnish(b: _Builder, plan: _Floorplan, layout: str, bodies: dict) -> list:
    """The layout's furniture, each piece on a free spot of ``plan`` (a piece with no free spot is left out);
    returns the obstacles (AABB lo, hi of each piece placed; a rug is no obstacle)."""
    rng = b.rng
    wood = _WOOD[int(rng.integers(len(_WOOD)))]
    fab = _FABRIC[int(rng.integers(len(_FABRIC)))]
    obstacles = []
    for name in _LAYOUT_PIECES[layout]:
        if name == "rug":
            bodies.setdefault("rug", _rug(b))
            continue
        depth, width, against_wall = _PIECE_SIZES[name]
        spot = _place(b, plan, depth, width, against_wall)
        if spot is None:
            continue
        ids = _piece(b, name, *spot, wood, fab)
        for i, body in enumerate(ids):
            bodies[f"{name}{len(obstacles)}_{i}"] = body
        if ids:
            los, his = zip(*(b.aabb(i) for i in ids))
            obstacles.append((np.min(los, axis=0), np.max(his, axis=0)))
    return obstacles


def _rug(b: _Builder) -> int:
    rng = b.rng
    w, d = float(rng.uniform(1.4, 2.2)), float(rng.uniform(1.0, 1.6))
    return b.box([w / 2, d / 2, 0.005], [float(rng.uniform(-0.5, 0.5)), float(rng.uniform(-0.5, 0.5)), 0.005],
                 texture=texture_path("carpet", tuple(rng.uniform(0.3, 0.8, 3)), 6), tile=max(w, d), collide=False)


def _piece(b: _Builder, name: str, x: float, y: float, yaw: float, wood, fab) -> list[int]:
    """The bodies of one piece of furniture ``name`` at (x, y) turned by ``yaw`` (world frame, metres, radians)."""
    if name == "sofa":
        return _sofa(b, x, y, yaw, fab)
    if name in ("table", "square"):
        return _table_with_clutter(b, x, y, yaw, square=(name == "square"))
    if name == "bookshelf":
        return _bookshelf(b, x, y, yaw, wood)
    if name == "plant":
        return _plant(b, x, y)
    if name == "lamp":
        return _lamp(b, x, y)
    if name == "counter":
        return _counter(b, x, y, yaw, wood)
    if name == "toy":
        urdf, scale = _FLOOR_TOYS[int(b.rng.integers(len(_FLOOR_TOYS)))]
        t = b.urdf(urdf, [x, y, 0.5], float(b.rng.uniform(-np.pi, np.pi)), scale)
        b.set_on(t, 0.0, (x, y))
        return [t]
    return []


def _distractors_param(value) -> int:
    """``scene.params.distractors``: a whole number 0–20, or a one-line ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value <= 20:
        raise ValueError(f"scene.params.distractors must be a whole number from 0 to 20, got {value!r}")
    return int(value)


def _distractors(world: BulletBackend, plan: _Floorplan, seed: int, n: int) -> list:
    """``n`` look-alike objects on free floor spots of a room — copies of one floor toy or of one coloured shape,
    so that what the start view shows can be mistaken for another of them (the difficulty ladder's distractors,
    ``scene.params.distractors``). Drawn from their own random stream: the rest of the room is the same with or
    without them. Returns (body, aabb lo, aabb hi) of each."""
    if n <= 0:
        return []
    b = _Builder(world, np.random.default_rng([int(seed), 3]))
    rng = b.rng
    toy = _FLOOR_TOYS[int(rng.integers(len(_FLOOR_TOYS)))]
    use_toy = bool(rng.random() < 0.5)
    colour = tuple(float(c) for c in rng.uniform(0.15, 0.95, 3))
    shape = ("box", "cylinder", "sphere")[int(rng.integers(3))]
    size = float(rng.uniform(0.3, 0.5))
    out = []
    for _ in range(n):
        spot = _place(b, plan, size + 0.2, size + 0.2, False)
        if spot is None:
            break
        x, y, yaw = spot
        if use_toy:
            body = b.urdf(toy[0], [x, y, 0.5], float(rng.uniform(-np.pi, np.pi)), toy[1])
            b.set_on(body, 0.0, (x, y))
        elif shape == "box":
            body = b.box([size / 2] * 3, [x, y, size / 2], yaw=float(rng.uniform(-np.pi, np.pi)), color=colour)
        elif shape == "cylinder":
            body = b.cylinder(size / 2, size, [x, y, size / 2], colour)
        else:
            body = b.sphere(size / 2, [x, y, size / 2], colour)
        lo, hi = b.aabb(body)
        out.append((body, lo, hi))
    return out


def _light(rng) -> dict:
    a = float(rng.uniform(-np.pi, np.pi))
    return {"lightDirection": [math.cos(a), math.sin(a), 2.5], "lightColor": [1.0, 0.97, 0.92],
            "lightDistance": 10.0, "lightAmbientCoeff": 0.55, "lightDiffuseCoeff": 0.5,
            "lightSpecularCoeff": 0.05, "shadow": 0}


# ----- tabletop ----------------------------------------------------------------------------------------

TABLE_CENTRE = np.array([0.55, 0.0])


def _build_tabletop(world: BulletBackend, spec: dict) -> SceneInfo:
    """A table (top at ``table_z``), a floor and two backdrop walls, static clutter near the table's edges and
    the dynamic task objects of ``params["objects"]``. The robot or hand is added by the environment."""
    params = spec.get("params", {})
    rng = np.random.default_rng([spec["seed"], 2])
    b = _Builder(world, rng)
    bodies = {}
    bodies["floor"] = b.box([3, 3, 0.05], [0.5, 0, -0.05],
                            texture=texture_path("tiles", tuple(rng.uniform(0.45, 0.75, 3)), 0), tile=1.2)
    c1, c2 = rng.permutation(len(_WALL_COLOURS))[:2]
    bodies["wall_back"] = b.box([0.05, 3, 1.5], [2.0, 0, 1.5], texture=texture_path("wallpaper", _WALL_COLOURS[c1], 1),
                                tile=0.8)
    bodies["wall_side"] = b.box([3, 0.05, 1.5], [0.5, 1.6, 1.5], texture=texture_path("stripes", _WALL_COLOURS[c2], 2),
                                tile=0.8)
    bodies["wall_robot"] = b.box([0.05, 3, 1.5], [-0.9, 0, 1.5], texture=texture_path("plain", _WALL_COLOURS[c1], 5),
                                 tile=0.8)
    bodies["wall_side2"] = b.box([3, 0.05, 1.5], [0.5, -1.6, 1.5], texture=texture_path("plain", _WALL_COLOURS[c2], 3),
                                 tile=0.8)
    table_z = 0.62
    wood = _WOOD[int(rng.integers(len(_WOOD)))]
    bodies["table"] = b.box([0.75, 0.6, 0.02], [TABLE_CENTRE[0], 0, table_z - 0.02],
                            texture=texture_path("wood", wood, 4), tile=0.35)
    for sx in (-1, 1):
        for sy in (-1, 1):
            b.box([0.03, 0.03, (table_z - 0.04) / 2], [TABLE_CENTRE[0] + sx * 0.7, sy * 0.55, (table_z - 0.04) / 2],
                  color=np.array(wood) * 0.6)
    # a painting on the back wall and a tray: fixed landmarks for the exterior camera
    b.box([0.02, 0.4, 0.3], [1.94, float(rng.uniform(-0.8, 0.8)), 1.3],
          texture=texture_path("painting", (0, 0, 0), int(rng.integers(1 << 30))), tile=0.8, collide=False)
    # clutter at the far edge of the table, out of the central workspace
    n = int(params.get("n_clutter", rng.integers(2, 5)))
    b.clutter(np.array([0.95, -0.5]), np.array([1.2, 0.5]), table_z, n)
    for mk in params.get("markers", []):  # flat visual squares on the table (place targets), no collision
        h = float(mk.get("size", 0.06)) / 2
        b.box([h, h, 0.0015], [mk["position"][0], mk["position"][1], table_z + 0.0015],
              color=tuple(mk.get("color", (0.2, 0.8, 0.2))), collide=False)
    objects = {}
    for obj in params.get("objects", []):
        objects[obj["name"]] = _task_object(b, obj)
    workspace = np.array([[0.35, 0.75], [-0.3, 0.3], [table_z + 0.03, table_z + 0.45]])
    # exterior camera: in front-right of the robot, looking at the workspace centre, unless the spec places it
    # (scene.params.camera: a 4×4 C2W pose; the difficulty ladder and the viewpoint pairs vary it)
    ext = look_at(np.array([1.0, -1.0, 1.3]), np.array([0.45, 0.0, table_z + 0.16]))
    if params.get("camera") is not None:
        ext = _camera_param(params["camera"])
    return SceneInfo(spec=spec, bodies=bodies, table_z=table_z, workspace=workspace, exterior_camera=ext,
                     light=_light(rng), objects=objects)


def _camera_param(value) -> np.ndarray:
    """``scene.params.camera``: a C2W pose (4 × 4 nested list, rotation orthonormal) or a one-line ValueError."""
    try:
        T = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        T = None
    if T is None or T.shape != (4, 4) or not np.all(np.isfinite(T)) or not np.allclose(T[3], [0, 0, 0, 1]) \
            or not np.allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3), atol=1e-6) or np.linalg.det(T[:3, :3]) < 0:
        raise ValueError("scene.params.camera must be a 4×4 camera-to-world pose (rotation orthonormal, last row "
                         "0 0 0 1)")
    return T


def _task_object(b: _Builder, obj: dict) -> int:
    """A dynamic task object: {"name", "shape": "cube"|"sphere", "size" (m, edge or diameter), "color",
    "position" [x, y, z] (centre), "mass"}."""
    shape = obj.get("shape", "cube")
    size = float(obj.get("size", 0.04))
    color = tuple(obj.get("color", (0.9, 0.2, 0.2)))
    mass = float(obj.get("mass", 0.1))
    pos = obj["position"]
    if shape == "cube":
        body = b.box([size / 2] * 3, pos, color=color, mass=mass)
    elif shape == "sphere":
        body = b.sphere(size / 2, pos, color, mass=mass)
    else:
        raise ValueError(f"scene.params.objects[].shape must be 'cube' or 'sphere', got {shape!r}")
    b.p.changeDynamics(body, -1, lateralFriction=1.0, rollingFriction=0.001, spinningFriction=0.001,
                       physicsClientId=b.cid)
    return body


# ----- mesh scenes -------------------------------------------------------------------------------------

def load_scene_meshes(path: str) -> list:
    """The non-empty triangle meshes of a scene file (trimesh), as stored (no up-axis turn).

    Refuses, with one line starting ``scene.mesh:``, a missing file, a folder, a format not in
    :data:`MESH_FORMATS`, a file trimesh cannot parse (whatever its parser raises), one with no triangles and one
    with non-finite vertices.
    """
    import trimesh

    if not os.path.exists(path):
        raise FileNotFoundError(f"scene.mesh: no such file {path!r}")
    if not os.path.isfile(path):
        raise ValueError(f"scene.mesh: {path!r} is not a file")
    ext = os.path.splitext(path)[1].lower()
    if ext not in MESH_FORMATS:
        raise ValueError(f"scene.mesh: {path!r}: format {ext or '(no extension)'} is not supported (use "
                         f"{', '.join(MESH_FORMATS)})")
    try:
        loaded = trimesh.load(path)
    except Exception as e:  # noqa: BLE001 - trimesh's parsers raise anything (IndexError, struct.error, KeyError, ...)
        msg = " ".join(str(e).split())[:200] or type(e).__name__
        raise ValueError(f"scene.mesh: {path!r} is not a readable {ext} file ({type(e).__name__}: {msg})") from None
    if isinstance(loaded, trimesh.Scene):
        meshes = list(loaded.dump()) if hasattr(loaded, "dump") else list(loaded.geometry.values())
    else:
        meshes = [loaded]
    meshes = [m for m in meshes if isinstance(m, trimesh.Trimesh) and len(m.faces)]
    if not meshes:
        raise ValueError(f"scene.mesh: {path!r} holds no triangle mesh")
    for m in meshes:
        if not np.isfinite(m.vertices).all():
            raise ValueError(f"scene.mesh: {path!r} has vertices that are not finite (NaN or inf)")
    return meshes


def _build_mesh(world: BulletBackend, spec: dict) -> SceneInfo:
    """A scene from a mesh file (.glb/.gltf/.obj/.ply, Habitat's scene formats) loaded with trimesh.

    glTF files are +Y up by their standard (Habitat scenes too) and are turned to +Z up; other formats are taken
    as +Z up. ``params["up"] = "y" | "z"`` overrides. Faces are grouped by colour (vertex, face or material
    colour) and each group becomes one static visual + collision body, exported as a temporary .obj.
    """
    path = spec["mesh"]
    params = spec.get("params", {})
    ext = os.path.splitext(path)[1].lower()
    up = params.get("up", "y" if ext in (".glb", ".gltf") else "z")
    if up not in ("y", "z"):
        raise ValueError(f"scene.params.up must be 'y' or 'z', got {up!r}")
    meshes = load_scene_meshes(path)
    b = _Builder(world, np.random.default_rng([spec["seed"], 3]))
    R = np.eye(4)
    if up == "y":
        from ..geometry import YUP_TO_ZUP
        R = YUP_TO_ZUP
    bodies = {}
    lo_all, hi_all = np.full(3, np.inf), np.full(3, -np.inf)
    # PyBullet reads each .obj when the shape is created, so the exported files are removed right after
    with tempfile.TemporaryDirectory(prefix="spatialact-mesh-") as tmpdir:
        _add_mesh_groups(world, meshes, R, tmpdir, bodies, lo_all, hi_all)
    margin = float(params.get("margin", 0.3))
    nav_box = np.stack([lo_all + margin, hi_all - margin], axis=1)
    nav_box[2] = [lo_all[2] + min(0.6, (hi_all[2] - lo_all[2]) / 3), max(lo_all[2] + 0.6, hi_all[2] - margin)]
    nav_box[:, 1] = np.maximum(nav_box[:, 1], nav_box[:, 0])
    return SceneInfo(spec=spec, bodies=bodies, nav_box=nav_box, light=_light(b.rng))


def _add_mesh_groups(world: BulletBackend, meshes, R: np.ndarray, tmpdir: str, bodies: dict, lo_all: np.ndarray,
                     hi_all: np.ndarray) -> None:
    """One static visual + collision body per colour group of each mesh (turned by ``R``), exported as .obj files
    under ``tmpdir``; fills ``bodies`` and widens the bounds ``lo_all`` / ``hi_all`` (world frame, metres) in place."""
    import trimesh

    p, cid = world.p, world.client
    for mi, mesh in enumerate(meshes):
        mesh = mesh.copy()
        mesh.apply_transform(R)
        np.minimum(lo_all, mesh.bounds[0], out=lo_all)
        np.maximum(hi_all, mesh.bounds[1], out=hi_all)
        try:
            fc = np.asarray(mesh.visual.face_colors)[:, :3]
        except Exception:
            fc = np.full((len(mesh.faces), 3), 180, dtype=np.uint8)
        q = (fc // 16).astype(np.int64)
        keys = q[:, 0] * 256 + q[:, 1] * 16 + q[:, 2]
        for gi, key in enumerate(np.unique(keys)[:64]):
            sel = keys == key
            sub = trimesh.Trimesh(mesh.vertices, mesh.faces[sel], process=False)
            sub.remove_unreferenced_vertices()
            colour = fc[sel].mean(axis=0) / 255.0
            f = os.path.join(tmpdir, f"m{mi}_{gi}.obj")
            sub.export(f, include_normals=True, include_texture=False)
            vis = p.createVisualShape(p.GEOM_MESH, fileName=f, rgbaColor=list(colour) + [1], physicsClientId=cid)
            world.register_mesh(f, sub)  # the file is removed below; the gl renderer draws it from this
            col = p.createCollisionShape(p.GEOM_MESH, fileName=f, flags=p.GEOM_FORCE_CONCAVE_TRIMESH,
                                         physicsClientId=cid)
            bodies[f"mesh{mi}_{gi}"] = p.createMultiBody(0, col, vis, physicsClientId=cid)
