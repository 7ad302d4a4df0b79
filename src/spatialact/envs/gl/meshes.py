"""Visual geometry of a PyBullet world for the gl renderer: meshes, materials and textures, read once per scene.

Every visual shape PyBullet holds (``getVisualShapeData``) becomes triangle parts in the frame of its link (the URDF
link frame; for a base, the base's link frame, i.e. its centre-of-mass pose times the inverse of its local inertial
frame), with the shape's local visual frame and mesh scale applied:

* boxes, spheres, cylinders, capsules and planes are tessellated here (spheres 32 × 16, cylinders 32 sides);
* mesh files are read with trimesh with their materials (``.mtl`` diffuse colours and images) and vertex colours;
  meshes over ``max_faces`` faces (default 1,500) are decimated (:mod:`.decimate`). Parsed and decimated meshes are
  cached on disk (``<cache root>/gl-meshes-v1``, keyed by the file's path, size and modification time and the face
  budget) and in memory;
* a mesh a scene builder made in a temporary file and registered with the world (``BulletBackend.register_mesh``) is
  taken from the registration (drawn as given: a scene's own geometry is not decimated), and a texture set through
  ``BulletBackend.set_texture`` replaces the shape's own.

Colours: PyBullet's ``rgbaColor`` × the material's diffuse colour × vertex colours, in sRGB; a material with a
diffuse map is drawn with the map alone (as PyBullet does: ``Kd`` is then ignored); textures are RGBA uint8 images
(sRGB). Shapes with alpha below 0.01 are not drawn. Units: metres.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from dataclasses import dataclass

import numpy as np

from ...geometry import pose_from_pybullet
from .decimate import DECIMATION_VERSION, decimate

__all__ = ["Part", "SceneGeometry", "extract_scene", "load_mesh_file", "MAX_FACES", "box_faces"]

MAX_FACES = 1500
_MEM: dict = {}  # (path, size, mtime, max_faces) -> list of parts (unscaled)
_MEM_LIMIT = 256


@dataclass
class Part:
    """Triangles of one material: positions (N, 3) float32 and normals (N, 3) in the link frame, uvs (N, 2),
    colours (N, 4) uint8 (sRGB), faces (F, 3) int32, texture (H, W, 4) uint8 or None, its key (content hash);
    ``closed``: the shape it belongs to is closed with its faces wound counter-clockwise seen from outside, so its
    back faces can be culled (otherwise the renderer draws it two-sided)."""

    positions: np.ndarray
    normals: np.ndarray
    uvs: np.ndarray
    colors: np.ndarray
    faces: np.ndarray
    texture: np.ndarray | None = None
    texture_key: str | None = None
    closed: bool = False


@dataclass
class SceneGeometry:
    """What a world's visual shapes are: ``slots`` (body, link) whose world matrices the renderer updates every
    frame; ``parts`` (slot index, body id, Part); ``base_inertial_inv`` body -> (4, 4) inverse local inertial frame
    of the base; ``links`` body -> link indices with visuals; ``n_bodies`` when read; ``decimated`` how many mesh
    files were decimated."""

    slots: list
    parts: list
    base_inertial_inv: dict
    links: dict
    n_bodies: int
    decimated: int = 0


# ----- primitives -------------------------------------------------------------------------------------------

def _part(pos, nrm, uv, faces, color=(255, 255, 255, 255), closed: bool = True) -> Part:
    """A primitive's part; a closed one has its faces turned to wind counter-clockwise seen from outside."""
    pos = np.asarray(pos, dtype=np.float32)
    faces = np.asarray(faces, dtype=np.int32)
    if closed and _signed_volume(pos.astype(np.float64), faces) < 0:
        faces = faces[:, ::-1].copy()
    return Part(pos, np.asarray(nrm, dtype=np.float32), np.asarray(uv, dtype=np.float32),
                np.tile(np.asarray(color, dtype=np.uint8), (len(pos), 1)), faces, closed=closed)


def _signed_volume(pos: np.ndarray, faces: np.ndarray) -> float:
    a, b, c = pos[faces[:, 0]], pos[faces[:, 1]], pos[faces[:, 2]]
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def orient_closed(parts: list) -> list:
    """Mark the parts of one shape ``closed`` when together they are a closed surface with every edge used once in
    each direction (vertices matched by position to 1 µm) wound outward (positive volume); otherwise leave them open
    (drawn two-sided: an inward-wound closed mesh is a room meant to be seen from inside)."""
    pos = [p.positions.astype(np.float64) for p in parts]
    if not parts or not all(len(p.faces) for p in parts):
        return parts
    allpos = np.concatenate(pos)
    keys = np.round(allpos * 1e6).astype(np.int64)
    _, vid = np.unique(keys, axis=0, return_inverse=True)
    vid = vid.reshape(-1)
    offs = np.cumsum([0] + [len(p) for p in pos])[:-1]
    faces = np.concatenate([vid[p.faces.astype(np.int64) + o] for p, o in zip(parts, offs)])
    e = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    e = e[e[:, 0] != e[:, 1]]
    n = int(vid.max()) + 1
    directed = e[:, 0] * n + e[:, 1]
    reverse = e[:, 1] * n + e[:, 0]
    u, c = np.unique(directed, return_counts=True)
    closed = bool(len(u) and (c == 1).all() and np.isin(reverse, u).all())
    if not closed:
        return parts
    vol = sum(_signed_volume(pp, p.faces) for pp, p in zip(pos, parts))
    if vol <= 0:  # wound inward on purpose (a room seen from inside): drawn two-sided, never turned
        return parts
    return [Part(p.positions, p.normals, p.uvs, p.colors, p.faces, p.texture, p.texture_key, True) for p in parts]


def box_faces(half):
    """The six faces of a box of half extents ``half`` (metres) centred at the origin, one per axis and sign, each
    as ``(corners, uv, axes, normal, triangles)``: its 4 corners (x, y, z); their coordinates ``(ua, ub)`` (±1)
    along the face's two in-plane ``axes`` (indices 0–2); the outward normal; two triangles of corner indices (0–3)
    wound to face outwards (counter-clockwise seen from outside). The one box of the gl renderer's primitives and of
    the scenes' textured ``.obj`` boxes."""
    for axis in range(3):
        for sign in (1.0, -1.0):
            a, b = [i for i in range(3) if i != axis]
            corners, uv = [], []
            for ua, ub in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                v = [0.0, 0.0, 0.0]
                v[axis], v[a], v[b] = sign * half[axis], ua * half[a], ub * half[b]
                corners.append(v)
                uv.append((ua, ub))
            normal = [0.0, 0.0, 0.0]
            normal[axis] = sign
            if (sign > 0) == ((a, b, axis) in ((0, 1, 2), (1, 2, 0), (2, 0, 1))):  # wind to face +sign·axis
                triangles = ((0, 1, 2), (0, 2, 3))
            else:
                triangles = ((0, 2, 1), (0, 3, 2))
            yield corners, uv, (a, b), normal, triangles


def box_part(half) -> Part:
    """A box of half extents ``half`` centred at the origin: 24 vertices, flat normals, UVs 0–1 per face."""
    pos, nrm, uv, faces = [], [], [], []
    for corners, cuv, _, normal, triangles in box_faces(half):
        base = len(pos)
        pos += corners
        nrm += [list(normal) for _ in corners]
        uv += [[(ua + 1) / 2, (ub + 1) / 2] for ua, ub in cuv]
        faces += [[base + i for i in t] for t in triangles]
    return _part(pos, nrm, uv, faces)


def sphere_part(r: float, n_lon: int = 32, n_lat: int = 16) -> Part:
    th = np.linspace(0, np.pi, n_lat + 1)
    ph = np.linspace(0, 2 * np.pi, n_lon + 1)
    T, P = np.meshgrid(th, ph, indexing="ij")
    n = np.stack([np.sin(T) * np.cos(P), np.sin(T) * np.sin(P), np.cos(T)], -1).reshape(-1, 3)
    uv = np.stack([P / (2 * np.pi), 1 - T / np.pi], -1).reshape(-1, 2)
    idx = np.arange((n_lat + 1) * (n_lon + 1)).reshape(n_lat + 1, n_lon + 1)
    a, b, c, d = idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]
    faces = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)])
    return _part(n * r, n, uv, faces)


def cylinder_part(length: float, r: float, n: int = 32, caps: str = "flat") -> Part:  # noqa: C901
    """A cylinder along z centred at the origin; ``caps`` "flat" or "round" (a capsule: hemispheres of radius r)."""
    h = length / 2
    if caps == "round":  # a sphere cut at its equator row, the halves moved apart: the stretched band is the side
        sph = sphere_part(r, n, 16)
        q = sph.positions.astype(np.float64)
        q[:, 2] += np.where(q[:, 2] >= -1e-9, h, -h)
        return _part(q, sph.normals, sph.uvs, sph.faces)
    a = np.linspace(0, 2 * np.pi, n + 1)
    c, s = np.cos(a), np.sin(a)
    pos = np.concatenate([np.stack([r * c, r * s, np.full_like(c, -h)], -1), np.stack([r * c, r * s, np.full_like(c, h)], -1)])
    nrm = np.concatenate([np.stack([c, s, 0 * c], -1)] * 2)
    uv = np.concatenate([np.stack([a / (2 * np.pi), 0 * a], -1), np.stack([a / (2 * np.pi), 0 * a + 1], -1)])
    i = np.arange(n)
    faces = np.concatenate([np.stack([i, i + 1, i + n + 2], -1), np.stack([i, i + n + 2, i + n + 1], -1)])
    parts = [(pos, nrm, uv, faces)]
    for z, sgn in ((-h, -1.0), (h, 1.0)):
        cp = np.concatenate([[[0.0, 0.0, z]], np.stack([r * c, r * s, np.full_like(c, z)], -1)])
        cn = np.tile([0.0, 0.0, sgn], (n + 2, 1))
        cu = np.concatenate([[[0.5, 0.5]], np.stack([0.5 + 0.5 * c, 0.5 + 0.5 * s], -1)])
        cf = np.stack([np.zeros(n, int), i + 1, i + 2], -1)
        if sgn < 0:
            cf = cf[:, [0, 2, 1]]
        parts.append((cp, cn, cu, cf))
    out_p, out_n, out_u, out_f, off = [], [], [], [], 0
    for pp, nn, uu, ff in parts:
        out_p.append(pp)
        out_n.append(nn)
        out_u.append(uu)
        out_f.append(np.asarray(ff) + off)
        off += len(pp)
    return _part(np.concatenate(out_p), np.concatenate(out_n), np.concatenate(out_u), np.concatenate(out_f))


def plane_part(half: float = 100.0) -> Part:
    return _part([[-half, -half, 0], [half, -half, 0], [half, half, 0], [-half, half, 0]], [[0, 0, 1]] * 4,
                 [[0, 0], [2 * half, 0], [2 * half, 2 * half], [0, 2 * half]], [[0, 1, 2], [0, 2, 3]], closed=False)


# ----- mesh files -------------------------------------------------------------------------------------------

def _image_rgba(img) -> np.ndarray | None:
    if img is None:
        return None
    try:
        return np.asarray(img.convert("RGBA"), dtype=np.uint8)
    except Exception:  # noqa: BLE001 - an unreadable image: the mesh is drawn untextured
        return None


def _smooth_normals(pos: np.ndarray, faces: np.ndarray) -> np.ndarray:
    fn = np.cross(pos[faces[:, 1]] - pos[faces[:, 0]], pos[faces[:, 2]] - pos[faces[:, 0]])  # area-weighted
    n = np.zeros_like(pos)
    for k in range(3):
        np.add.at(n, faces[:, k], fn)
    ln = np.linalg.norm(n, axis=1, keepdims=True)
    return np.where(ln > 1e-20, n / np.where(ln > 1e-20, ln, 1.0), np.array([0.0, 0.0, 1.0]))


def _parts_of_trimesh(geoms, max_faces: int | None, materials: bool = True) -> tuple[list[Part], bool]:
    """Parts (one per geometry / material) of trimesh meshes; decimated to share ``max_faces`` when over it.
    ``materials=False``: the file names no material (an .obj without ``mtllib``: trimesh then invents a grey
    one), so the parts are white and untextured, as PyBullet draws them."""
    total = sum(len(g.faces) for g in geoms)
    parts, decimated = [], False
    for g in geoms:
        v = np.asarray(g.vertices, dtype=np.float64)
        f = np.asarray(g.faces, dtype=np.int64)
        vis = g.visual
        uv, color, vcol, tex = None, np.array([255, 255, 255, 255], np.uint8), None, None
        if getattr(vis, "kind", None) == "texture" or type(vis).__name__ == "TextureVisuals":
            mat = getattr(vis, "material", None) if materials else None
            if mat is not None and hasattr(mat, "to_simple") and not hasattr(mat, "diffuse"):
                mat = mat.to_simple()
            if mat is not None:
                d = getattr(mat, "diffuse", None)
                if d is not None:
                    color = np.asarray(d, dtype=np.uint8).reshape(-1)[:4]
                tex = _image_rgba(getattr(mat, "image", None))
            if getattr(vis, "uv", None) is not None and len(vis.uv) == len(v):
                uv = np.asarray(vis.uv, dtype=np.float64)[:, :2]
            if uv is None:
                tex = None
            if tex is not None:  # as PyBullet draws it: a diffuse map replaces the diffuse colour (Kd)
                color = np.array([255, 255, 255, color[3] if len(color) > 3 else 255], np.uint8)
        elif getattr(vis, "kind", None) == "vertex":
            vcol = np.asarray(vis.vertex_colors, dtype=np.uint8)[:, :4]
        elif getattr(vis, "kind", None) == "face":  # unshare vertices so each face keeps its colour
            fc = np.asarray(vis.face_colors, dtype=np.uint8)[:, :4]
            v = v[f].reshape(-1, 3)
            vcol = np.repeat(fc, 3, axis=0)
            f = np.arange(len(v)).reshape(-1, 3)
        budget = None if max_faces is None else max(24, int(max_faces * len(f) / max(total, 1)))
        if budget is not None and len(f) > budget and total > max_faces:
            if vcol is not None:  # colours follow the nearest kept vertex
                v2, f2, _ = decimate(v, f, budget)
                near = _nearest(v, v2)
                vcol = vcol[near]
                v, f = v2, f2
            else:
                v, f, uv = decimate(v, f, budget, uv)
            decimated = True
            nrm = _smooth_normals(v, f)
        else:
            vn = None
            try:
                if "vertex_normals" in g._cache or getattr(g, "_vertex_normals", None) is not None:
                    vn = np.asarray(g.vertex_normals, dtype=np.float64)
            except Exception:  # noqa: BLE001
                vn = None
            nrm = vn if vn is not None and len(vn) == len(v) else _smooth_normals(v, f)
        n = len(v)
        cols = np.tile(color, (n, 1)) if vcol is None else (vcol.astype(np.uint16) * color // 255).astype(np.uint8)
        key = None if tex is None else hashlib.sha1(tex.tobytes() + str(tex.shape).encode()).hexdigest()[:16]
        parts.append(Part(v.astype(np.float32), nrm.astype(np.float32),
                          (np.zeros((n, 2)) if uv is None else uv).astype(np.float32), cols,
                          f.astype(np.int32), tex, key))
    return orient_closed(parts), decimated


def _nearest(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Index into ``b`` of the nearest point of each point of ``a`` (both small: chunked brute force)."""
    out = np.empty(len(a), dtype=np.int64)
    for s in range(0, len(a), 2048):
        d = ((a[s:s + 2048, None, :] - b[None, :, :]) ** 2).sum(-1)
        out[s:s + 2048] = d.argmin(1)
    return out


def parts_of_trimesh(mesh, max_faces: int | None = MAX_FACES) -> list[Part]:
    """Parts of an in-memory trimesh mesh or scene (a mesh a scene builder registered: part of a scene the camera
    may stand inside, so always drawn two-sided)."""
    geoms = _geoms(mesh)
    parts = _parts_of_trimesh(geoms, max_faces)[0]
    return [Part(p.positions, p.normals, p.uvs, p.colors, p.faces, p.texture, p.texture_key, False) for p in parts]


def _geoms(loaded) -> list:
    import trimesh

    if isinstance(loaded, trimesh.Scene):
        geoms = list(loaded.dump()) if hasattr(loaded, "dump") else list(loaded.geometry.values())
    else:
        geoms = [loaded]
    return [g for g in geoms if isinstance(g, trimesh.Trimesh) and len(g.faces)]


def _cache_file(path: str, st, max_faces) -> str:
    from ...cache import cache_dir

    key = hashlib.sha1(repr((os.path.abspath(path), st.st_size, st.st_mtime_ns, max_faces,
                             DECIMATION_VERSION, 6)).encode()).hexdigest()[:24]
    return os.path.join(str(cache_dir("gl-meshes-v1")), f"{key}.npz")


def _save(file: str, parts: list[Part], decimated: bool) -> None:
    arrays = {"decimated": np.array(bool(decimated))}
    for i, p in enumerate(parts):
        for name in ("positions", "normals", "uvs", "colors", "faces"):
            arrays[f"{i}_{name}"] = getattr(p, name)
        arrays[f"{i}_closed"] = np.array(bool(p.closed))
        if p.texture is not None:
            arrays[f"{i}_texture"] = p.texture
    tmp = f"{file}.{os.getpid()}.tmp.npz"
    np.savez(tmp, n=np.array(len(parts)), **arrays)
    os.replace(tmp, file)


def _load(file: str) -> tuple[list[Part], bool] | None:
    from pathlib import Path

    from ...cache import trusted
    from ...jsonline import input_problem

    try:
        if input_problem(file) is not None or not trusted(Path(file)):  # a FIFO or a device is a miss, unread
            return None
        with np.load(file, allow_pickle=False) as z:
            parts = []
            for i in range(int(z["n"])):
                tex = z[f"{i}_texture"] if f"{i}_texture" in z.files else None
                key = None if tex is None else hashlib.sha1(tex.tobytes() + str(tex.shape).encode()).hexdigest()[:16]
                parts.append(Part(*(z[f"{i}_{n}"] for n in ("positions", "normals", "uvs", "colors", "faces")),
                                  texture=tex, texture_key=key, closed=bool(z[f"{i}_closed"])))
            return parts, bool(z["decimated"])
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):  # damaged or foreign: rebuilt
        return None


def load_mesh_file(path: str, max_faces: int | None = MAX_FACES) -> tuple[list[Part], bool]:
    """(parts of a mesh file, unscaled, in its own frame; whether it was decimated). Cached in memory and on disk."""
    st = os.stat(path)
    mkey = (os.path.abspath(path), st.st_size, st.st_mtime_ns, max_faces)
    if mkey in _MEM:
        return _MEM[mkey]
    file = _cache_file(path, st, max_faces)
    got = _load(file) if os.path.exists(file) else None
    if got is None:
        import trimesh

        materials = True
        if path.lower().endswith(".obj"):  # materials only from an .mtl file that exists (else trimesh invents one)
            with open(path, "rb") as fh:
                libs = [ln.split(None, 1)[1].strip() for ln in fh.read().splitlines()
                        if ln.startswith(b"mtllib") and len(ln.split(None, 1)) == 2]
            folder = os.path.dirname(path)
            materials = any(os.path.isfile(os.path.join(folder, lib.decode("utf-8", "replace"))) for lib in libs)
        got = _parts_of_trimesh(_geoms(trimesh.load(path, process=False)), max_faces, materials)
        try:
            _save(file, *got)
        except OSError:  # a read-only cache: fine, the parts are in memory
            pass
    if len(_MEM) >= _MEM_LIMIT:
        _MEM.pop(next(iter(_MEM)))
    _MEM[mkey] = got
    return got


# ----- a world's visual shapes ------------------------------------------------------------------------------

def _transformed(part: Part, T: np.ndarray, scale, color, texture=None, texture_key=None) -> Part:
    """A part scaled by ``scale`` (3,), moved by ``T`` (4, 4), tinted by ``color`` (rgba 0–1)."""
    s = np.asarray(scale, dtype=np.float64)
    p = part.positions.astype(np.float64) * s
    n = part.normals.astype(np.float64) / np.where(s == 0, 1.0, s)
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-20)
    R = T[:3, :3]
    p = p @ R.T + T[:3, 3]
    n = n @ R.T
    tint = np.clip(np.asarray(color, dtype=np.float64), 0.0, 1.0)
    cols = np.clip(np.round(part.colors.astype(np.float64) * tint), 0, 255).astype(np.uint8)
    faces = part.faces if np.prod(np.sign(s)) > 0 else part.faces[:, [0, 2, 1]]
    tex, key = (part.texture, part.texture_key) if texture is None else (texture, texture_key)
    return Part(p.astype(np.float32), n.astype(np.float32), part.uvs, cols, faces, tex, key, part.closed)


_TEXTURES: dict = {}


def _texture_image(path: str):
    """(RGBA uint8 image, key) of a texture file (cached in memory)."""
    if path not in _TEXTURES:
        from PIL import Image

        with Image.open(path) as im:
            img = np.asarray(im.convert("RGBA"), dtype=np.uint8)
        if len(_TEXTURES) >= _MEM_LIMIT:
            _TEXTURES.pop(next(iter(_TEXTURES)))
        _TEXTURES[path] = (img, hashlib.sha1(img.tobytes() + str(img.shape).encode()).hexdigest()[:16])
    return _TEXTURES[path]


def extract_scene(p, client: int, registered: dict | None = None, textures: dict | None = None,
                  max_faces: int | None = MAX_FACES) -> SceneGeometry:
    """The visual geometry of every body in PyBullet client ``client`` (module ``p``).

    ``registered``: mesh file path -> trimesh object (meshes made in temporary files); ``textures``:
    (body, link) -> texture file path (textures set through the world)."""
    registered = registered or {}
    textures = textures or {}
    n_bodies = p.getNumBodies(physicsClientId=client)
    slots, slot_of, parts, inertial, links = [], {}, [], {}, {}
    n_dec = 0
    for i in range(n_bodies):
        body = p.getBodyUniqueId(i, physicsClientId=client)
        shapes = p.getVisualShapeData(body, physicsClientId=client)
        for shape in shapes:
            _, link, gtype, dims, fname, lpos, lorn, rgba = shape[:8]
            if rgba[3] < 0.01:
                continue
            T = pose_from_pybullet(lpos, lorn)
            tex_path = textures.get((body, link))
            tex, tkey = _texture_image(tex_path) if tex_path else (None, None)
            if gtype == p.GEOM_BOX:
                src, scale = [box_part([d / 2 for d in dims[:3]])], (1, 1, 1)
            elif gtype == p.GEOM_SPHERE:
                src, scale = [sphere_part(dims[0])], (1, 1, 1)
            elif gtype == p.GEOM_CYLINDER:
                src, scale = [cylinder_part(dims[0], dims[1])], (1, 1, 1)
            elif gtype == p.GEOM_CAPSULE:
                src, scale = [cylinder_part(dims[0], dims[1], caps="round")], (1, 1, 1)
            elif gtype == p.GEOM_PLANE:
                src, scale = [plane_part()], (1, 1, 1)
            elif gtype == p.GEOM_MESH:
                name = fname.decode("utf-8", "replace") if isinstance(fname, bytes) else str(fname)
                scale = dims[:3]
                if name in registered:  # a scene's own geometry (a whole room): never decimated
                    src = parts_of_trimesh(registered[name], None)
                elif name and os.path.isfile(name):
                    src, dec = load_mesh_file(name, max_faces)
                    n_dec += int(dec)
                else:
                    continue  # a mesh from vertex arrays, or a file gone: PyBullet gives no geometry to draw
            else:
                continue
            key = (body, link)
            if key not in slot_of:
                slot_of[key] = len(slots)
                slots.append(key)
                if link >= 0:
                    links.setdefault(body, []).append(link)
            if link < 0 and body not in inertial:
                info = p.getDynamicsInfo(body, -1, physicsClientId=client)
                inertial[body] = np.linalg.inv(pose_from_pybullet(info[3], info[4]))
            for part in src:
                parts.append((slot_of[key], body, _transformed(part, T, scale, rgba, tex, tkey)))
    for body in links:
        links[body] = sorted(links[body])
    return SceneGeometry(slots, parts, inertial, links, n_bodies, n_dec)
