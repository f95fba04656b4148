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


def test_world_model_never_trains_on_its_held_out_rows(monkeypatch):
    """The held-out rows that pick the elites (and give the diagnostics' held-out error) are
    disjoint from the rows the ensemble is fitted on."""
    hold, train = world_model.holdout_split(500, seed=3)
    assert len(hold) == 50 and not set(hold) & set(train) and len(hold) + len(train) == 500
    seen = {}
    real = world_model._train_chunk

    def spy(*args):
        init, run, holdout_mse = real(*args)

        def run_spy(p, o, xt, yt, size, k):
            seen["rows"] = np.asarray(xt)[: int(size)]
            return run(p, o, xt, yt, size, k)

        return init, run_spy, holdout_mse

    monkeypatch.setattr(world_model, "_train_chunk", spy)
    rng = np.random.default_rng(0)
    s = rng.normal(size=(500, 2)).astype(np.float32)
    a = rng.uniform(-1, 1, size=(500, 1)).astype(np.float32)
    ds = Dataset(s, a, s[:, 0], s + 0.1 * a, np.zeros(500, np.float32), np.zeros(500, np.float32))
    wm = world_model.fit(ds, members=1, elites=1, widths=(4,), steps=100, lr=1e-3, seed=3)
    x = (np.concatenate([s, a], 1) - np.asarray(wm.in_mean)) / np.asarray(wm.in_std)
    rows = {tuple(np.round(r, 4)) for r in seen["rows"]}
    assert not any(tuple(np.round(r, 4)) in rows for r in x[hold])
    assert len(seen["rows"]) == len(train)
