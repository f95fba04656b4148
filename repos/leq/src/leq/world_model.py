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
from . import pointmaze as pm
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
    def run(p, o, xt, yt, size, key):
        def body(carry, k):
            p, o = carry
            idx = jax.random.randint(k, (members, batch), 0, size)  # rows >= size are padding
            upd, o = opt.update(jax.grad(loss)(p, xt[idx], yt[idx]), o, p)
            return (optax.apply_updates(p, upd), o), None

        (p, o), _ = jax.lax.scan(body, (p, o), jax.random.split(key, 100))
        return p, o

    @jax.jit
    def init(key, x_dim):
        params = module.init(key, jnp.zeros((1, x_dim.shape[0])))
        return params, opt.init(params)

    @jax.jit
    def holdout_mse(p, xh, yh):  # per member; compiled once instead of op by op
        mean, _ = module.apply(p, xh)
        return ((mean - yh) ** 2).mean(axis=(1, 2))

    return init, run, holdout_mse


def holdout_split(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(held-out rows, training rows) of a dataset of n rows: 10 % held out, at most 1000."""
    perm = np.random.default_rng(seed).permutation(n)
    n_hold = max(1, min(1000, n // 10))
    return perm[:n_hold], perm[n_hold:]


def fit(
    ds: Dataset,
    members: int,
    elites: int,
    widths,
    steps: int,
    lr: float,
    seed: int,
    batch: int = 256,
    capacity: int = 0,
    repeat: np.ndarray | None = None,
) -> WorldModel:
    """Fit the ensemble to normalised (s, a) -> (s' - s, r); elites = lowest held-out MSE.

    The training rows are zero-padded to `capacity` (never sampled) so that datasets of
    different lengths share one compiled training loop. `repeat` (n,) >= 1 repeats training
    rows (e.g. wall contacts) that many times; the held-out rows are never repeated or seen.
    """
    x = np.concatenate([ds.observations, ds.actions], axis=1)
    y = np.concatenate([ds.next_observations - ds.observations, ds.rewards[:, None]], axis=1)
    hold, train = holdout_split(len(x), seed)
    if repeat is not None:
        train = np.repeat(train, np.asarray(repeat, int)[train])
    in_mean, in_std = x[train].mean(0), x[train].std(0) + 1e-6
    out_mean, out_std = y[train].mean(0), y[train].std(0) + 1e-6
    xn, yn = (x - in_mean) / in_std, (y - out_mean) / out_std
    init, run, holdout_mse = _train_chunk(members, tuple(widths), ds.observations.shape[1], batch, lr)  # fmt: skip
    params, o = init(jax.random.PRNGKey(seed), jnp.zeros(x.shape[1]))
    pad = ((0, max(0, capacity - len(train))), (0, 0))
    xt, yt = jnp.asarray(np.pad(xn[train], pad)), jnp.asarray(np.pad(yn[train], pad))
    size = jnp.asarray(len(train), jnp.int32)
    key = jax.random.PRNGKey(seed + 7)
    for _ in range(max(1, steps // 100)):
        key, k = jax.random.split(key)
        params, o = run(params, o, xt, yt, size, k)
    mse = np.asarray(holdout_mse(params, jnp.asarray(xn[hold]), jnp.asarray(yn[hold])))
    elite_idx = jnp.asarray(np.argsort(mse, kind="stable")[:elites], jnp.int32)
    stats = (jnp.asarray(a, jnp.float32) for a in (in_mean, in_std, out_mean, out_std))
    return WorldModel(params, elite_idx, *stats)


def sample_step(widths, wm: WorldModel, obs, act, key, terminal_fn):
    """s' = s + ds with (ds, r) ~ N(mean, var) of one random elite; returns (s', r, terminal).

    Works on one sample (the imagination vmaps it). Every elite member is evaluated and the
    picked one's output kept, as the official code does with all members: under the batch vmap
    this is one dense matmul per layer, whereas gathering one member's weights per sample moves a
    weight matrix per sample and ran about 4x slower per LEQ update on one CPU thread. Non-elite
    members are never picked, so they are not evaluated (the same numbers, fewer FLOPs).
    """
    k1, k2 = jax.random.split(key)
    pick = jax.random.randint(k2, (), 0, wm.elites.shape[0])  # index into the elites
    inner = wm.params["params"]
    elites = jax.tree_util.tree_map(lambda w: w[wm.elites], inner["members"])
    x = (jnp.concatenate([obs, act], axis=-1) - wm.in_mean) / wm.in_std
    out_dim = wm.out_mean.shape[-1]
    net = MLP(tuple(widths), 2 * out_dim)
    every = jax.vmap(lambda member: net.apply({"params": member}, x))(elites)
    mean, logvar = jnp.split(every[pick], 2, -1)
    logvar = inner["max_logvar"] - jax.nn.softplus(inner["max_logvar"] - logvar)
    logvar = inner["min_logvar"] + jax.nn.softplus(logvar - inner["min_logvar"])
    out = (mean + jnp.exp(0.5 * logvar) * jax.random.normal(k1, mean.shape)) * wm.out_std
    out = out + wm.out_mean
    nxt = obs + out[..., :-1]
    return nxt, out[..., -1], terminal_fn(nxt)


def mean_next_state(widths, wm: WorldModel, obs, act) -> jnp.ndarray:
    """The elites' average predicted mean next state for a batch (n, obs_dim), (n, act_dim)."""
    x = (jnp.concatenate([obs, act], axis=-1) - wm.in_mean) / wm.in_std
    net = MLP(tuple(widths), 2 * wm.out_mean.shape[-1])
    elites = jax.tree_util.tree_map(lambda w: w[wm.elites], wm.params["params"]["members"])
    every = jax.vmap(lambda member: net.apply({"params": member}, x))(elites)
    mean = every[..., : wm.out_mean.shape[-1]].mean(0) * wm.out_std + wm.out_mean
    return obs + mean[..., :-1]


def terminal_fn_for(env: str):
    """Known termination: the maze goal test, or never (Pendulum)."""
    if env in ("pendulum", "offline"):  # offline: a user's dataset that fits no built-in env
        return lambda obs: jnp.zeros(obs.shape[:-1])
    if env in pm.ENVS:  # PointMaze: position within 0.45 of the observed goal
        return pm.terminal_fn
    goal = jnp.asarray(mz.make_maze(env).goal)
    return lambda obs: mz.at_goal(goal, obs).astype(jnp.float32)
