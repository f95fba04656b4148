"""The Gaussian ensemble fits a linear system; imagination samples stay on it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from leq import world_model
from leq.data import Dataset


def test_world_model_fits_linear_system():
    rng = np.random.default_rng(0)
    n = 3000
    s = rng.normal(size=(n, 3)).astype(np.float32)
    a = rng.uniform(-1, 1, size=(n, 2)).astype(np.float32)
    A = np.array([[0.9, 0.1, 0.0], [0.0, 0.8, 0.2], [0.1, 0.0, 0.95]], np.float32)
    B = np.array([[0.5, 0.0], [0.0, 0.3], [0.2, 0.2]], np.float32)
    nxt = s @ A.T + a @ B.T
    r = s[:, 0] - a[:, 1]
    ds = Dataset(s, a, r, nxt, np.zeros(n, np.float32), np.zeros(n, np.float32))
    wm = world_model.fit(ds, members=2, elites=1, widths=(32,), steps=400, lr=5e-3, seed=0)
    never = lambda o: jnp.zeros(o.shape[:-1])
    test_s = jnp.asarray(rng.normal(size=(200, 3)), jnp.float32)
    test_a = jnp.asarray(rng.uniform(-1, 1, size=(200, 2)), jnp.float32)
    keys = jax.random.split(jax.random.PRNGKey(0), 200)
    step = jax.jit(jax.vmap(lambda si, ai, k: world_model.sample_step((32,), wm, si, ai, k, never)))
    pred, rew, _ = step(test_s, test_a, keys)
    truth = np.asarray(test_s) @ A.T + np.asarray(test_a) @ B.T
    err = np.abs(np.asarray(pred) - truth).mean()
    assert err < 0.1, err  # the deltas have std ~0.6
    assert (
        np.abs(np.asarray(rew) - (np.asarray(test_s[:, 0]) - np.asarray(test_a[:, 1]))).mean()
        < 0.15
    )
