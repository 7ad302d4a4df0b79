"""K environments in one process whose observations are rendered in one call per step.

:class:`BatchedVectorEnv` is a ``gymnasium.vector.SyncVectorEnv`` (same spaces, batching, next-step autoreset) whose
``step`` first steps every environment without rendering, then draws all their ``rgb`` (and ``depth``) observations
with one call of the shared gl renderer — one draw call per view into tiles of one framebuffer and one read back —
and hands each environment its images. Environments that do not render with gl (``tiny``, ``egl``, or ``auto`` that
fell back) are rendered one by one, as in ``SyncVectorEnv``; resets render as a single environment does.

``make_vector_env("nav", 8, width=128, height=128, renderer="gl")`` builds one; the environments are the raw
classes (``make_env(..., wrap=False)``), so the step the vector env calls is the environment's own.
"""

from __future__ import annotations

from copy import deepcopy

import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import concatenate, iterate

__all__ = ["BatchedVectorEnv", "make_vector_env"]


class BatchedVectorEnv(SyncVectorEnv):
    """A ``SyncVectorEnv`` of spatialact environments that renders their step observations in one call."""

    def __init__(self, env_fns, copy: bool = True):
        super().__init__(env_fns, copy=copy, autoreset_mode=AutoresetMode.NEXT_STEP)
        self._bases = [e.unwrapped for e in self.envs]
        self.batched_renders = 0  # step observations drawn in one renderer call (for tests and benchmarks)

    def step(self, actions):
        infos = {}
        stepped = []
        for i, (action, base) in enumerate(zip(iterate(self.action_space, actions), self._bases, strict=True)):
            if self._autoreset_envs[i]:
                self._env_obs[i], env_info = base.reset()
                self._rewards[i] = 0.0
                self._terminations[i] = False
                self._truncations[i] = False
            else:
                base.defer_observation = True
                try:
                    _, self._rewards[i], self._terminations[i], self._truncations[i], env_info = base.step(action)
                finally:
                    base.defer_observation = False
                stepped.append(i)
            infos = self._add_info(infos, env_info, i)
        self._observe(stepped)
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        self._autoreset_envs = np.logical_or(self._terminations, self._truncations)
        return (deepcopy(self._observations) if self.copy else self._observations, np.copy(self._rewards),
                np.copy(self._terminations), np.copy(self._truncations), infos)

    def _observe(self, idx: list[int]) -> None:
        """Observations of the environments ``idx`` after their step: their gl views in one call, others alone."""
        from .gl import View

        batch = [i for i in idx if getattr(self._bases[i].world, "gl", None) is not None]
        if batch:
            renderer = self._bases[batch[0]].world.gl.renderer
            batch = [i for i in batch if self._bases[i].world.gl.renderer is renderer]
            depth = any(self._bases[i].use_depth for i in batch)
            views = [View(self._bases[i].world.gl, self._bases[i].camera_pose, self._bases[i].camera) for i in batch]
            rgb, d, _ = renderer.render(views, rgb=True, depth=depth)
            for k, i in enumerate(batch):
                base = self._bases[i]
                base.last_observation = base.observe(rendered=(rgb[k], d[k] if depth else None))
                self._env_obs[i] = base.last_observation
            self.batched_renders += 1
        for i in idx:
            if i not in batch:
                base = self._bases[i]
                base.last_observation = base.observe()
                self._env_obs[i] = base.last_observation


def make_vector_env(kind: str, num_envs: int, *, renderer: str = "auto", copy: bool = True, **kwargs):
    """``num_envs`` environments of a kind (``nav``, ``manip``, ``hand``) in this process, rendered together
    (:class:`BatchedVectorEnv`); keywords go to :func:`spatialact.envs.make_env`."""
    from .registry import make_env

    if int(num_envs) < 1:
        raise ValueError(f"num_envs must be at least 1, got {num_envs!r}")
    kwargs.pop("wrap", None)
    return BatchedVectorEnv([lambda: make_env(kind, renderer=renderer, wrap=False, **kwargs)] * int(num_envs),
                            copy=copy)
