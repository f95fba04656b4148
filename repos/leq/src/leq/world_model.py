"""World model: a Gaussian ensemble fitted to (s, a) -> (s' - s, r), elites chosen on held-out data.

Termination is not learnt: the maze uses the known goal test (as the paper does for AntMaze) and
Pendulum never terminates.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from . import maze as mz
from .data import Dataset
from .networks import MLP, GaussianEnsemble


class WorldModel(NamedTuple):
    params: dict
    elites: jnp.ndarray  # indices of the elite members
    in_mean: jnp.ndarray
    in_std: jnp.ndarray
    out_mean: jnp.ndarray
    out_std: jnp.ndarray


def make_module(members: int, widths, obs_dim: int) -> GaussianEnsemble:
    return GaussianEnsemble(members, tuple(widths), obs_dim + 1)


@functools.cache
def _train_chunk(members: int, widths: tuple[int, ...], obs_dim: int, batch: int, lr: float):
    """jit(scan of 100 Gaussian-NLL steps); each member trains on its own bootstrap batch."""
    module = make_module(members, widths, obs_dim)
    opt = optax.adam(lr)

    def loss(p, xb, yb):
        mean, logvar = module.apply(p, xb, per_member=True)
        nll = ((mean - yb) ** 2 * jnp.exp(-logvar) + logvar).mean()
        bounds = p["params"]["max_logvar"].sum() - p["params"]["min_logvar"].sum()
        return nll + 0.01 * bounds

    @jax.jit
    def run(p, o, xt, yt, key):
        def body(carry, k):
            p, o = carry
            idx = jax.random.randint(k, (members, batch), 0, xt.shape[0])
            upd, o = opt.update(jax.grad(loss)(p, xt[idx], yt[idx]), o, p)
            return (optax.apply_updates(p, upd), o), None

        (p, o), _ = jax.lax.scan(body, (p, o), jax.random.split(key, 100))
        return p, o

    return module, opt, run


def fit(
    ds: Dataset,
    members: int,
    elites: int,
    widths,
    steps: int,
    lr: float,
    seed: int,
    batch: int = 256,
) -> WorldModel:
    """Fit the ensemble to normalised (s, a) -> (s' - s, r); elites = lowest held-out MSE."""
    x = np.concatenate([ds.observations, ds.actions], axis=1)
    y = np.concatenate([ds.next_observations - ds.observations, ds.rewards[:, None]], axis=1)
    perm = np.random.default_rng(seed).permutation(len(x))
    n_hold = max(1, min(1000, len(x) // 10))
    hold, train = perm[:n_hold], perm[n_hold:]
    in_mean, in_std = x[train].mean(0), x[train].std(0) + 1e-6
    out_mean, out_std = y[train].mean(0), y[train].std(0) + 1e-6
    xn, yn = (x - in_mean) / in_std, (y - out_mean) / out_std
    module, opt, run = _train_chunk(members, tuple(widths), ds.observations.shape[1], batch, lr)
    params = module.init(jax.random.PRNGKey(seed), jnp.zeros((1, x.shape[1])))
    o = opt.init(params)
    xt, yt = jnp.asarray(xn[train]), jnp.asarray(yn[train])
    key = jax.random.PRNGKey(seed + 7)
    for _ in range(max(1, steps // 100)):
        key, k = jax.random.split(key)
        params, o = run(params, o, xt, yt, k)
    mean, _ = module.apply(params, jnp.asarray(xn[hold]))
    mse = ((mean - jnp.asarray(yn[hold])) ** 2).mean(axis=(1, 2))
    elite_idx = jnp.argsort(mse)[:elites]
    stats = (jnp.asarray(a, jnp.float32) for a in (in_mean, in_std, out_mean, out_std))
    return WorldModel(params, elite_idx, *stats)


def sample_step(widths, wm: WorldModel, obs, act, key, terminal_fn):
    """s' = s + ds with (ds, r) ~ N(mean, var) of one random elite; returns (s', r, terminal).

    Works on one sample (the imagination vmaps it); only the picked member is evaluated.
    """
    k1, k2 = jax.random.split(key)
    pick = wm.elites[jax.random.randint(k2, (), 0, wm.elites.shape[0])]
    inner = wm.params["params"]
    member = jax.tree_util.tree_map(lambda p: p[pick], inner["members"])
    x = (jnp.concatenate([obs, act], axis=-1) - wm.in_mean) / wm.in_std
    out_dim = wm.out_mean.shape[-1]
    mean, logvar = jnp.split(MLP(tuple(widths), 2 * out_dim).apply({"params": member}, x), 2, -1)
    logvar = inner["max_logvar"] - jax.nn.softplus(inner["max_logvar"] - logvar)
    logvar = inner["min_logvar"] + jax.nn.softplus(logvar - inner["min_logvar"])
    out = (mean + jnp.exp(0.5 * logvar) * jax.random.normal(k1, mean.shape)) * wm.out_std
    out = out + wm.out_mean
    nxt = obs + out[..., :-1]
    return nxt, out[..., -1], terminal_fn(nxt)


def terminal_fn_for(env: str):
    """Known termination: the maze goal test, or never (Pendulum)."""
    if env == "pendulum":
        return lambda obs: jnp.zeros(obs.shape[:-1])
    goal = jnp.asarray(mz.make_maze(env).goal)
    return lambda obs: mz.at_goal(goal, obs).astype(jnp.float32)
