"""MuJoCo's renderer as a peer of the gl renderer: the same scene, as MJCF, drawn by ``mujoco`` through EGL.

pybullet_data's Panda URDF does not load into MuJoCo as it is, so the MJCF is built from what the gl renderer draws:
the triangles of a world's :class:`spatialact.envs.gl.GLScene` at the face budget of the image size (the Panda's
visual meshes decimated the same way, the table, the room and the objects, with their colours and textures), one
mocap body per link slot whose pose is set each frame from PyBullet (the same link frames the gl renderer reads).
The camera is the same pinhole (vertical field of view, principal point at the centre), the light the scene's
directional light.

Settings (``MujocoPeer(world, W, H, msaa=0, shadow_size=512)``): MSAA samples of MuJoCo's offscreen buffer
(``visual/quality/offsamples``: 0 as gl's default, 4 as its ``high``), its shadow map side
(``visual/quality/shadowsize``: 512 as gl's below 320 px). MuJoCo shades per vertex colour × texture with its own
Phong model and writes no sRGB: the images look alike, not the same; what is compared is the cost of drawing the
same triangles at the same size. MuJoCo fits its directional light's shadow box to the model's statistic (set to
the gl scene's bounding box here) and casts shadows from every geom, where gl leaves the ceiling out: a strip at
the table's far edge falls in shadow in MuJoCo and not in gl. Depth agrees with gl's to float precision (tested).
Each view is one ``mjr_render`` and one ``mjr_readPixels`` of RGB and depth (depth
linearised as ``mujoco.Renderer`` does); MuJoCo has no batched multi-view call, so K views are K renders.

Needs ``pip install mujoco`` (the dev extra) and ``MUJOCO_GL=egl`` (set here before mujoco is imported; OSMesa is
not installed on the development machine). Frames: poses are OpenCV C2W (4, 4), metres, world +Z up.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")


def _quat_wxyz(R: np.ndarray) -> np.ndarray:
    from spatialact import geometry

    x, y, z, w = geometry.matrix_to_quat(R)
    return np.array([w, x, y, z])


def _floats(a) -> str:
    return " ".join(f"{v:.7g}" for v in np.asarray(a, np.float64).ravel())


def scene_mjcf(scene, budget, texdir: str, width: int, height: int, msaa: int, shadow_size: int,
               far: float = 20.0) -> tuple[str, list[int]]:
    """MJCF text of a gl scene's triangles at face budget ``budget`` (PNG textures written to ``texdir``) and, per
    mocap body, the slot it follows."""
    from PIL import Image

    level = scene.level(budget)
    geo = level["geometry"]
    assets, bodies, slots = [], {}, []
    for j, (slot, _, part) in enumerate(geo.parts):
        tex = ""
        if part.texture is not None:
            path = os.path.join(texdir, f"t{j}.png")
            Image.fromarray(part.texture).save(path)
            assets.append(f'<texture name="t{j}" type="2d" file="{path}"/>')
            tex = f' texture="t{j}"'
        rgba = part.colors.astype(np.float64).mean(0) / 255.0
        assets.append(f'<material name="m{j}" rgba="{_floats(rgba)}"{tex} specular="0.2" shininess="0.3"/>')
        faces = part.faces if part.closed else np.concatenate([part.faces, part.faces[:, ::-1]])
        uv = f' texcoord="{_floats(part.uvs)}"' if part.texture is not None else ""
        assets.append(f'<mesh name="g{j}" vertex="{_floats(part.positions)}" normal="{_floats(part.normals)}" '
                      f'face="{" ".join(str(int(i)) for i in faces.ravel())}"{uv}/>')
        bodies.setdefault(slot, []).append(f'<geom type="mesh" mesh="g{j}" material="m{j}" contype="0" '
                                           f'conaffinity="0" group="1"/>')
    body_xml = []
    for k, slot in enumerate(sorted(bodies)):
        slots.append(slot)
        body_xml.append(f'<body name="s{slot}" mocap="true">{"".join(bodies[slot])}</body>')
    d = scene.light_dir
    lo, hi = scene.bounds  # MuJoCo fits a directional light's shadow box to the model's statistic: the scene's box
    centre, extent = (lo + hi) / 2.0, float(np.linalg.norm(hi - lo) / 2.0)
    return f"""<mujoco model="spatialact-scene">
  <compiler angle="radian"/>
  <statistic extent="{extent:.7g}" center="{_floats(centre)}"/>
  <visual>
    <global offwidth="{width}" offheight="{height}" fovy="60"/>
    <quality shadowsize="{shadow_size}" offsamples="{msaa}"/>
    <map znear="{0.02 / extent:.7g}" zfar="{far / extent:.7g}"/>
    <headlight ambient="0.35 0.35 0.35" diffuse="0 0 0" specular="0 0 0"/>
  </visual>
  <asset>{"".join(assets)}</asset>
  <worldbody>
    <light directional="true" castshadow="true" pos="{_floats(centre + d * 5.0)}" dir="{_floats(-d)}" diffuse="0.8 0.78 0.74"/>
    <camera name="view" pos="0 0 0" fovy="60"/>
    {"".join(body_xml)}
  </worldbody>
</mujoco>""", slots


class MujocoPeer:
    """A world's scene in MuJoCo (see the module docstring): :meth:`render` draws views of it, RGB + depth."""

    def __init__(self, world, width: int, height: int, msaa: int = 0, shadow_size: int = 512, fov_deg: float = 60.0):
        import mujoco

        self.mj = mujoco
        self.world, self.W, self.H, self.fov = world, int(width), int(height), float(fov_deg)
        scene = world.gl
        self.budget = scene.renderer.face_budget(self.W, self.H)
        from spatialact.envs.gl.context import current

        with current(scene.ctx):
            scene.sync(self.budget)  # read the scene the gl renderer would draw
        self._tmp = tempfile.TemporaryDirectory(prefix="spatialact-mjcf-")
        xml, self.slots = scene_mjcf(scene, self.budget, self._tmp.name, self.W, self.H, msaa, shadow_size)
        self.model = mujoco.MjModel.from_xml_string(xml)
        self.data = mujoco.MjData(self.model)
        self.gl = mujoco.GLContext(self.W, self.H)
        self.gl.make_current()
        self.con = mujoco.MjrContext(self.model, mujoco.mjtFontScale.mjFONTSCALE_150)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self.con)
        self.scn = mujoco.MjvScene(self.model, maxgeom=max(1000, 2 * self.model.ngeom))
        self.opt = mujoco.MjvOption()
        self.cam = mujoco.MjvCamera()
        self.cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self.cam.fixedcamid = 0
        self.model.cam_fovy[0] = self.fov
        self.rect = mujoco.MjrRect(0, 0, self.W, self.H)
        self.rgb = np.empty((self.H, self.W, 3), np.uint8)
        self.zbuf = np.empty((self.H, self.W), np.float32)

    def sync(self) -> None:
        """Mocap bodies to the link frames PyBullet holds now (as the gl renderer reads them)."""
        scene = self.world.gl
        pos, quat = scene.poses()
        M = scene.link_matrices(pos, quat)
        for k, slot in enumerate(self.slots):
            self.data.mocap_pos[k] = M[slot][:3, 3]
            self.data.mocap_quat[k] = _quat_wxyz(M[slot][:3, :3])
        self.mj.mj_kinematics(self.model, self.data)

    def render(self, poses, segmentation: bool = False):
        """Views from OpenCV C2W poses: (rgb (K, H, W, 3) uint8, depth (K, H, W) float32 metres); with
        ``segmentation`` the second array is the slot each pixel shows (−1: none) instead of depth."""
        mj = self.mj
        self.gl.make_current()
        self.sync()
        K = len(poses)
        rgb = np.empty((K, self.H, self.W, 3), np.uint8)
        second = np.empty((K, self.H, self.W), np.int32 if segmentation else np.float32)
        m = self.model
        extent = m.stat.extent
        near, far = m.vis.map.znear * extent, m.vis.map.zfar * extent
        self.scn.flags[mj.mjtRndFlag.mjRND_SEGMENT] = int(segmentation)
        self.scn.flags[mj.mjtRndFlag.mjRND_IDCOLOR] = int(segmentation)
        for k, T in enumerate(poses):
            T = np.asarray(T, np.float64)
            m.cam_pos[0] = T[:3, 3]
            m.cam_quat[0] = _quat_wxyz(T[:3, :3] @ np.diag([1.0, -1.0, -1.0]))  # OpenCV → OpenGL camera axes
            mj.mj_camlight(m, self.data)
            mj.mjv_updateScene(m, self.data, self.opt, None, self.cam, mj.mjtCatBit.mjCAT_ALL, self.scn)
            mj.mjr_render(self.rect, self.scn, self.con)
            mj.mjr_readPixels(self.rgb, None if segmentation else self.zbuf, self.rect, self.con)
            rgb[k] = self.rgb[::-1]
            if segmentation:  # the colour holds the scene geom's index + 1 (0: none), as mujoco.Renderer reads it
                ids = (self.rgb[::-1].astype(np.int32) * [1, 256, 65536]).sum(-1) - 1
                slot_of = np.full(self.scn.ngeom + 1, -1)
                for g in range(self.scn.ngeom):
                    geom = self.scn.geoms[g]
                    if geom.objtype == mj.mjtObj.mjOBJ_GEOM:
                        slot_of[g] = ([-1] + self.slots)[m.geom_bodyid[geom.objid]]
                second[k] = slot_of[np.clip(ids, -1, self.scn.ngeom - 1)]
            else:
                z = self.zbuf[::-1]
                second[k] = near / (1.0 - z * (1.0 - near / far))
        return rgb, second

    def close(self) -> None:
        self.con.free()
        self.gl.free()
        self._tmp.cleanup()
