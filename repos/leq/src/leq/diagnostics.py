"""Diagnostics of the data, the world model and LEQ's imagination (issue 29).

A model fitted to maze data that never runs into a wall learns wall-free physics, and an actor
trained on its rollouts plans through walls. These measure it: how many dataset transitions are
blocked by a wall, the model's error on held-out data and on blocked vs free moves probed in the
true maze, and how many of the states the trained actor visits in imagination lie inside walls.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from . import maze as mz
from . import pointmaze as pm
from . import world_model as wmod
from .data import Dataset
from .leq import imagine
from .networks import Actor

PROBES = 4096  # (state, action) pairs probed in the true maze


@functools.cache
def _mean_next(widths: tuple[int, ...]):
    return jax.jit(lambda wm, obs, act: wmod.mean_next_state(widths, wm, obs, act))


def model_errors(wm, widths: tuple[int, ...], ds: Dataset, env: str, seed: int) -> dict:
    """Mean L2 error of the elites' mean next state: on the fit's held-out transitions, and
    (JAX maze) on probes in the true maze, split by whether the maze blocks the move
    (`model_err_blocked`) or not (`model_err_free`); in PointMaze (no true step in JAX) on the
    held-out transitions that end touching a wall (`model_err_contact`) or not. A probe is a uniform position in a free
    cell, a uniform velocity in [-0.3, 0.3]^2 (the controller's speed limit) and a uniform
    action: probes reach walls whether or not the data ever did."""
    predict = _mean_next(tuple(widths))
    hold, _ = wmod.holdout_split(len(ds.rewards), seed)
    pred = predict(wm, jnp.asarray(ds.observations[hold]), jnp.asarray(ds.actions[hold]))
    err = np.linalg.norm(pred - ds.next_observations[hold], axis=1)
    out = {"model_holdout_err": float(err.mean())}
    if env in pm.ENVS:  # no true step to probe: split the held-out transitions by wall contact
        touch = pm.wall_contact(pm.layout(env), ds.next_observations[hold][:, :2])
        out["model_err_nocontact"] = float(err[~touch].mean())
        if touch.any():
            out["model_err_contact"] = float(err[touch].mean())
        return out
    if env not in mz.LAYOUTS or ds.observations.shape[1] != 4:
        return out
    rng = np.random.default_rng(seed + 11)
    m = mz.make_maze(env)
    cells = m.free_cells[rng.integers(0, len(m.free_cells), PROBES)][:, ::-1]
    xy = cells + rng.uniform(-0.49, 0.49, (PROBES, 2))
    obs = jnp.asarray(np.concatenate([xy, rng.uniform(-0.3, 0.3, (PROBES, 2))], 1), jnp.float32)
    act = jnp.asarray(rng.uniform(-1.0, 1.0, (PROBES, 2)), jnp.float32)
    walls = jnp.asarray(m.walls)
    true, hit = jax.vmap(mz.move, in_axes=(None, 0, 0))(walls, obs, act)
    err = np.linalg.norm(np.asarray(predict(wm, obs, act) - true), axis=1)
    hit = np.asarray(hit).any(1)
    out["probe_blocked_fraction"] = float(hit.mean())
    out["model_err_free"] = float(err[~hit].mean())
    if hit.any():
        out["model_err_blocked"] = float(err[hit].mean())
    return out


@functools.cache
def _imagination(env: str, widths, model_widths, act_dim: int, length: int, n: int):
    """jit: n imagined rollouts of the deterministic actor, `length` steps from the eval start."""
    actor, term = Actor(widths, act_dim), wmod.terminal_fn_for(env)
    if env in pm.ENVS:
        m = pm.layout(env)
        start = jnp.asarray(pm.eval_start(env))
        noise = jnp.zeros(pm.OBS_DIM).at[:2].set(0.25)  # the env's reset noise, +-0.25

        def reset(key, n):
            return start + noise * jax.random.uniform(key, (n, pm.OBS_DIM), minval=-1.0)

        inside_wall = lambda xy: pm.inside_wall(m, xy)
    else:
        m = mz.make_maze(env)
        reset = lambda key, n: mz.reset(m, key, n)
        inside_wall = lambda xy: mz.is_wall(jnp.asarray(m.walls), xy)

    def run(actor_p, wm, key):
        k0, k1 = jax.random.split(key)
        policy = lambda s: actor.apply(actor_p, s)
        model = lambda s, a, k: wmod.sample_step(model_widths, wm, s, a, k, term)
        q_zero = lambda s, a: jnp.zeros(())
        delta = jnp.zeros((length + 1, act_dim))
        ro = jax.vmap(lambda s, k: imagine(s, k, delta, policy, q_zero, model))(
            reset(k0, n), jax.random.split(k1, n)
        )
        inside = inside_wall(ro.states[:, 1:, :2]).astype(jnp.float32)
        alive = ro.alive[:, :-1]  # the state s_{t+1} was reached by a live step t
        reached = 1.0 - ro.alive[:, -1]
        return {
            "imagined_wall_frac_start": (inside * alive).sum() / alive.sum(),
            "imagined_goal_rate_start": 100.0 * reached.mean(),
            "imagined_steps_start": alive.sum(1).mean(),
        }

    return jax.jit(run)


def imagination_stats(cfg, wm, actor_p: dict, act_dim: int, key) -> dict[str, float]:
    """Roll the trained actor in the world model from the eval start for the eval horizon:
    the fraction of imagined states inside walls, how often imagination reaches the goal and
    the mean number of imagined steps (to the goal or the horizon)."""
    length = pm.EVAL_STEPS[cfg.env] if cfg.env in pm.ENVS else mz.make_maze(cfg.env).horizon
    run = _imagination(
        cfg.env, (cfg.hidden,) * cfg.layers, (cfg.model_hidden,) * cfg.model_layers, act_dim,
        length, 32,
    )  # fmt: skip
    return {k: float(v) for k, v in run(actor_p, wm, key).items()}
