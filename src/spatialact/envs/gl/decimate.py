"""Mesh decimation for the gl renderer: quadric-error vertex clustering, deterministic and vectorised.

A mesh's vertices are grouped into cubic cells of a grid over its bounding box; every cell becomes one vertex placed
where it minimises the summed squared distance to the planes of the faces around it (the cell's error quadric,
Lindstrom 2000, solved with small eigenvalues dropped and the result kept inside the cell), and faces whose three
corners fall into fewer than three cells disappear. The grid is the finest whose result has at most ``max_faces``
faces (bisection over the number of cells along the longest side). Texture coordinates are kept per (cell, UV
chart): charts (faces connected through shared vertex indices) are never merged, so seams stay sharp while
positions are shared and no cracks open. Units are those of the input (metres in practice).
"""

from __future__ import annotations

import numpy as np

__all__ = ["decimate", "DECIMATION_VERSION"]

DECIMATION_VERSION = 1  # part of the on-disk cache key: bump when the output changes


def _cells(v: np.ndarray, lo: np.ndarray, cell: float) -> np.ndarray:
    """Integer cell id (N,) of each vertex for cubic cells of side ``cell`` from corner ``lo``."""
    ijk = np.floor((v - lo) / cell).astype(np.int64)
    ijk = np.maximum(ijk, 0)
    n = ijk.max(axis=0) + 1
    return (ijk[:, 0] * n[1] + ijk[:, 1]) * n[2] + ijk[:, 2]


def _faces_after(cell_of_vertex: np.ndarray, faces: np.ndarray) -> int:
    c = cell_of_vertex[faces]
    keep = (c[:, 0] != c[:, 1]) & (c[:, 1] != c[:, 2]) & (c[:, 0] != c[:, 2])
    if not keep.any():
        return 0
    return len(np.unique(np.sort(c[keep], axis=1), axis=0))


def _charts(faces: np.ndarray, n_vertices: int) -> np.ndarray:
    """Connected component (N,) of each vertex through the faces (union-find, vectorised by pointer jumping)."""
    parent = np.arange(n_vertices, dtype=np.int64)
    edges = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]]])
    for _ in range(64):
        a, b = parent[edges[:, 0]], parent[edges[:, 1]]
        lo = np.minimum(a, b)
        np.minimum.at(parent, a, lo)
        np.minimum.at(parent, b, lo)
        parent = parent[parent]
        changed = parent[edges[:, 0]] != parent[edges[:, 1]]
        if not changed.any():
            break
    while True:  # flatten
        nxt = parent[parent]
        if np.array_equal(nxt, parent):
            return parent
        parent = nxt


def decimate(vertices, faces, max_faces: int, uv=None):
    """``(vertices (M, 3), faces (G, 3), uv (M, 2) or None)`` with G ≤ ``max_faces`` (a mesh already that small is
    returned unchanged). ``vertices`` (N, 3) float, ``faces`` (F, 3) int, ``uv`` (N, 2) or None."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    if len(f) <= max_faces:
        return v, f, (None if uv is None else np.asarray(uv, dtype=np.float64))
    lo = v.min(axis=0)
    extent = float((v.max(axis=0) - lo).max()) or 1.0
    # bisection on the number of cells along the longest side: the finest grid that meets max_faces
    a, b = 2, 1024
    while _faces_after(_cells(v, lo, extent / b), f) <= max_faces and b < 1 << 16:
        a, b = b, b * 2  # even 1024 cells per side is coarse enough: try finer
    while b - a > 1:
        m = (a + b) // 2
        if _faces_after(_cells(v, lo, extent / m), f) <= max_faces:
            a = m
        else:
            b = m
    cell = extent / a
    cid = _cells(v, lo, cell)
    cells, pos_of = np.unique(cid, return_inverse=True)  # cluster index per vertex
    n_cells = len(cells)

    # error quadrics: each face's plane (area-weighted) added to the cells of its corners
    p0, p1, p2 = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    nrm = np.cross(p1 - p0, p2 - p0)
    area2 = np.linalg.norm(nrm, axis=1)
    ok = area2 > 1e-20
    n_unit = np.zeros_like(nrm)
    n_unit[ok] = nrm[ok] / area2[ok, None]
    d = -np.einsum("ij,ij->i", n_unit, p0)
    w = area2 * 0.5
    A_face = w[:, None, None] * n_unit[:, :, None] * n_unit[:, None, :]
    b_face = (w * d)[:, None] * n_unit
    A = np.zeros((n_cells, 3, 3))
    bq = np.zeros((n_cells, 3))
    for k in range(3):
        np.add.at(A, pos_of[f[:, k]], A_face)
        np.add.at(bq, pos_of[f[:, k]], b_face)
    counts = np.bincount(pos_of, minlength=n_cells).astype(np.float64)
    mean = np.zeros((n_cells, 3))
    np.add.at(mean, pos_of, v)
    mean /= counts[:, None]
    # minimise x'Ax + 2b'x around the mean, dropping directions the faces do not constrain
    evals, evecs = np.linalg.eigh(A)
    big = evals > 1e-3 * np.maximum(evals[:, -1:], 1e-30)
    r = -(bq + np.einsum("nij,nj->ni", A, mean))  # residual gradient at the mean
    coef = np.einsum("nji,nj->ni", evecs, r)
    step = np.where(big, coef / np.where(big, evals, 1.0), 0.0)
    x = mean + np.einsum("nij,nj->ni", evecs, step)
    # keep each vertex inside (a cell around) its cell: no spikes from ill-posed quadrics
    ijk = np.floor((mean - lo) / cell)
    x = np.clip(x, lo + (ijk - 0.5) * cell, lo + (ijk + 1.5) * cell)

    # output vertices: one per (cell, chart) when there are texture coordinates, else one per cell
    if uv is not None:
        uv = np.asarray(uv, dtype=np.float64)
        chart = _charts(f, len(v))
        key = pos_of.astype(np.int64) * (len(v) + 1) + chart
        keys, out_of = np.unique(key, return_inverse=True)
        out_pos = x[keys // (len(v) + 1)]
        out_uv = np.zeros((len(keys), 2))
        np.add.at(out_uv, out_of, uv)
        out_uv /= np.bincount(out_of, minlength=len(keys))[:, None]
    else:
        out_of = pos_of
        out_pos = x
        out_uv = None
    c = pos_of[f]
    keep = (c[:, 0] != c[:, 1]) & (c[:, 1] != c[:, 2]) & (c[:, 0] != c[:, 2])
    nf = out_of[f[keep]]
    # one face per set of three cells (the first met), orientation kept
    _, first = np.unique(np.sort(c[keep], axis=1), axis=0, return_index=True)
    nf = nf[np.sort(first)]
    used, remap = np.unique(nf, return_inverse=True)
    return out_pos[used], remap.reshape(-1, 3), (None if out_uv is None else out_uv[used])
