"""Offline datasets: deterministic generators and a Minari reader/writer.

Maze data comes from a noisy BFS-waypoint controller interrupted by random-action segments (held
for a few steps, so that the agent runs into walls: a model fitted to data without a single
blocked move has no reason to predict walls); no episode starts in the eval start cell, so
reaching the eval goal from the start needs stitching. Pendulum "medium-replay" data mixes
random actions with a noisy energy-shaping controller. Datasets are written and read in the
Minari format, so a user's own local Minari datasets (for instance D4RL conversions) load through
the same `load_minari`.
"""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import maze as mz
from . import pendulum

KEYS = ("observations", "actions", "rewards", "next_observations", "terminals", "timeouts")


class Dataset(NamedTuple):
    observations: np.ndarray  # (N, obs_dim)
    actions: np.ndarray  # (N, act_dim), in [-1, 1]
    rewards: np.ndarray  # (N,)
    next_observations: np.ndarray  # (N, obs_dim)
    terminals: np.ndarray  # (N,) 1.0 where the transition ends the task (goal reached)
    timeouts: np.ndarray  # (N,) 1.0 where an episode is truncated after this transition


def validate(arrays: dict, source: str = "dataset") -> Dataset:
    """Check keys, shapes and values; raise ValueError naming what is wrong."""
    missing = [k for k in KEYS if k not in arrays]
    if missing:
        raise ValueError(f"{source} is missing keys {missing}; expected {list(KEYS)}")
    d = {k: np.asarray(arrays[k], dtype=np.float32) for k in KEYS}
    n = len(d["observations"])
    if d["observations"].ndim != 2 or d["actions"].ndim != 2:
        raise ValueError(f"{source}: observations and actions must be 2-D (N, dim)")
    for k in KEYS:
        if len(d[k]) != n:
            raise ValueError(f"{source}: {k} has {len(d[k])} rows, observations has {n}")
    if d["next_observations"].shape != d["observations"].shape:
        raise ValueError(
            f"{source}: next_observations has shape {d['next_observations'].shape}, "
            f"observations {d['observations'].shape}"
        )
    for k in ("rewards", "terminals", "timeouts"):
        if d[k].ndim != 1:
            raise ValueError(f"{source}: {k} must be 1-D (N,), got shape {d[k].shape}")
    if n == 0 or not all(np.isfinite(v).all() for v in d.values()):
        raise ValueError(f"{source} is empty or holds non-finite values")
    return Dataset(**d)


def device_arrays(ds: Dataset, capacity: int = 0) -> dict:
    """The training arrays on the device, zero-padded to `capacity` rows, plus their "size".

    Generated datasets differ in length from seed to seed (episodes end at the goal); a fixed
    capacity keeps every jitted function's input shapes, so one compilation serves every seed.
    Padding rows are never sampled (`sample` draws indices below "size").
    """
    n = len(ds.rewards)
    rows = max(n, capacity)
    out = {
        k: jnp.asarray(np.concatenate([v, np.zeros((rows - n, *v.shape[1:]), v.dtype)]))
        for k, v in ds._asdict().items()
        if k != "timeouts"
    }
    out["size"] = jnp.asarray(n, jnp.int32)
    return out


def sample(arrays: dict, key: jax.Array, batch: int) -> dict:
    """A uniform minibatch (with replacement) of the first arrays["size"] rows."""
    idx = jax.random.randint(key, (batch,), 0, arrays["size"])
    return {k: v[idx] for k, v in arrays.items() if k != "size"}


def maze_dataset(
    name: str,
    kind: str,
    n_transitions: int,
    episode_len: int,
    seed: int,
    explore: tuple[float, int] = (0.0, 1),
) -> Dataset:
    """Noisy waypoint-controller data ("play": hand-picked cells, "diverse": any cell).

    explore = (p, k): at each step outside a segment, with probability p the behaviour starts a
    random-action segment: one uniform action in [-1, 1]^2 held for k steps (p = 0: none)."""
    prob, seg_len = explore
    if not 0.0 <= prob <= 1.0 or seg_len < 1:
        raise ValueError(f"explore must be (p in [0, 1], k >= 1), got {explore}")
    m = mz.make_maze(name)
    cells = m.free_cells
    start_cell = np.round(m.start[::-1]).astype(int)
    goal_cell = np.round(m.goal[::-1]).astype(int)
    not_start = ~(cells == start_cell).all(1)
    if kind == "play":  # a fixed checkerboard subset of cells, never the eval start or goal
        picked = ((cells.sum(1) % 2) == 0) & not_start & ~(cells == goal_cell).all(1)
        starts, targets, noise = np.flatnonzero(picked), np.flatnonzero(picked), 0.3
    elif kind == "diverse":
        starts, targets, noise = np.flatnonzero(not_start), np.arange(len(cells)), 0.5
    else:
        raise ValueError(f"maze dataset must be play or diverse, got {kind!r}")
    n_ep = max(1, n_transitions // episode_len)
    index = -np.ones(m.walls.shape, dtype=np.int32)
    index[cells[:, 0], cells[:, 1]] = np.arange(len(cells))
    tables = [jnp.asarray(a) for a in (m.walls, m.goal, index, m.next_cell, cells, targets)]
    k0, k1, k2 = jax.random.split(jax.random.PRNGKey(seed), 3)
    start = jnp.asarray(starts)[jax.random.randint(k0, (n_ep,), 0, len(starts))]
    xy0 = jnp.asarray(cells, jnp.float32)[start][:, ::-1]
    xy0 = xy0 + jax.random.uniform(k1, xy0.shape, minval=-0.2, maxval=0.2)
    obs0 = jnp.concatenate([xy0, jnp.zeros_like(xy0)], axis=1)
    tgt0 = jnp.asarray(targets)[jax.random.randint(k2, (n_ep,), 0, len(targets))]
    keys = jax.random.split(jax.random.PRNGKey(seed + 1), n_ep)
    explore_args = (jnp.float32(prob), jnp.int32(seg_len))
    out = _maze_episodes(tables, obs0, tgt0, keys, noise, explore_args, episode_len, len(targets))
    obs, act, rew, nxt, term = (np.asarray(a) for a in out)
    return _cut_at_terminals(obs, act, rew, nxt, term)


@functools.partial(jax.jit, static_argnums=(6, 7))
def _maze_episodes(tables, obs0, tgt0, keys, noise, explore, length, n_targets):
    walls, goal, index, next_cell, cells, targets = tables
    prob, seg_len = explore

    def one(obs, tgt, key):
        def body(carry, k):
            obs, tgt, left, a_seg = carry
            ka, kt, ks, kr = jax.random.split(k, 4)
            start = (left == 0) & (jax.random.uniform(ks) < prob)
            a_seg = jnp.where(start, jax.random.uniform(kr, (2,), minval=-1.0, maxval=1.0), a_seg)
            left = jnp.where(start, seg_len, left)
            here = mz.cell_of(walls, obs[:2])
            nxt_cell = next_cell[tgt, index[here[0], here[1]]]
            waypoint = cells[nxt_cell][::-1].astype(jnp.float32)
            v_des = jnp.clip(0.5 * (waypoint - obs[:2]), -0.3, 0.3)
            a = jnp.clip(
                10.0 * (v_des - mz.DAMPING * obs[2:]) + noise * jax.random.normal(ka, (2,)), -1, 1
            )
            a = jnp.where(left > 0, a_seg, a)
            nobs, r, d = mz.step(walls, goal, obs, a)
            reached = jnp.linalg.norm(nobs[:2] - cells[tgt][::-1]) < 0.4
            tgt = jnp.where(reached, targets[jax.random.randint(kt, (), 0, n_targets)], tgt)
            return (nobs, tgt, jnp.maximum(left - 1, 0), a_seg), (obs, a, r, nobs, d)

        init = (obs, tgt, jnp.int32(0), jnp.zeros(2))
        _, traj = jax.lax.scan(body, init, jax.random.split(key, length))
        return traj

    return jax.vmap(one)(obs0, tgt0, keys)


def _cut_at_terminals(obs, act, rew, nxt, term) -> Dataset:
    """Episodes (E, T, ...) -> flat transitions, each episode ending at its first terminal."""
    parts: dict[str, list] = {k: [] for k in KEYS}
    for e in range(obs.shape[0]):
        hit = np.flatnonzero(term[e] > 0)
        end = int(hit[0]) + 1 if len(hit) else obs.shape[1]
        for k, v in zip(KEYS[:5], (obs, act, rew, nxt, term)):
            parts[k].append(v[e, :end])
        timeout = np.zeros(end, np.float32)
        timeout[-1] = float(not len(hit))
        parts["timeouts"].append(timeout)
    return validate({k: np.concatenate(v) for k, v in parts.items()})


def pendulum_dataset(n_transitions: int, seed: int) -> Dataset:
    """Medium-replay mix: episode i takes random actions with a probability falling 1 -> 0.2."""
    n_ep = max(2, n_transitions // pendulum.HORIZON)
    p_random = jnp.linspace(1.0, 0.2, n_ep)
    k0, k1 = jax.random.split(jax.random.PRNGKey(seed))
    obs0 = pendulum.reset(k0, n_ep)

    def body(obs, k):
        ku, kr, kn = jax.random.split(k, 3)
        rand = jax.random.uniform(kr, (n_ep, 1), minval=-1.0, maxval=1.0)
        ctrl = pendulum.controller(obs) + 0.3 * jax.random.normal(kn, (n_ep, 1))
        use_rand = jax.random.uniform(ku, (n_ep, 1)) < p_random[:, None]
        a = jnp.clip(jnp.where(use_rand, rand, ctrl), -1.0, 1.0)
        nxt, r, d = pendulum.step(obs, a)
        return nxt, (obs, a, r, nxt, d)

    _, traj = jax.lax.scan(body, obs0, jax.random.split(k1, pendulum.HORIZON))
    obs, act, rew, nxt, term = (np.swapaxes(np.asarray(a), 0, 1) for a in traj)
    return _cut_at_terminals(obs, act, rew, nxt, term)


def make_dataset(
    env: str,
    kind: str,
    n_transitions: int,
    episode_len: int,
    seed: int,
    explore: tuple[float, int] = (0.0, 1),
) -> Dataset:
    if env == "pendulum":
        return pendulum_dataset(n_transitions, seed)
    return maze_dataset(env, kind, n_transitions, episode_len, seed, explore)


def blocked_fraction(ds: Dataset, env: str) -> float:
    """Fraction of the dataset's transitions that run into a wall of maze `env`."""
    walls = mz.make_maze(env).walls
    return float(mz.blocked(walls, jnp.asarray(ds.observations), jnp.asarray(ds.actions)).mean())


def _episode_bounds(ds: Dataset) -> list[tuple[int, int]]:
    ends = np.flatnonzero((ds.terminals > 0) | (ds.timeouts > 0)) + 1
    if len(ends) == 0 or ends[-1] != len(ds.rewards):
        ends = np.append(ends, len(ds.rewards))
    return list(zip(np.concatenate([[0], ends[:-1]]), ends))


def write_minari(ds: Dataset, root: str | Path, dataset_id: str) -> Path:
    """Write `ds` as a local Minari dataset under `root` (used as MINARI_DATASETS_PATH)."""
    os.environ["MINARI_DATASETS_PATH"] = str(Path(root).resolve())
    import minari
    from minari.data_collector import EpisodeBuffer

    buffers = []
    for i, (a, b) in enumerate(_episode_bounds(ds)):
        buffers.append(
            EpisodeBuffer(
                id=i,
                observations=np.concatenate(
                    [ds.observations[a:b], ds.next_observations[b - 1 : b]]
                ),
                actions=ds.actions[a:b],
                rewards=list(ds.rewards[a:b]),
                terminations=list(ds.terminals[a:b] > 0),
                truncations=list(ds.timeouts[a:b] > 0),
            )
        )
    dim_o, dim_a = ds.observations.shape[1], ds.actions.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # env / eval_env are not gymnasium ids here
        _create(minari, dataset_id, buffers, dim_o, dim_a)
    return Path(root) / dataset_id


def _create(minari, dataset_id, buffers, dim_o, dim_a) -> None:
    import gymnasium as gym

    minari.create_dataset_from_buffers(
        dataset_id,
        buffers,
        observation_space=gym.spaces.Box(-np.inf, np.inf, (dim_o,), np.float32),
        action_space=gym.spaces.Box(-1.0, 1.0, (dim_a,), np.float32),
        algorithm_name="noisy waypoint / energy-shaping controller",
        author="leq (iclr25-repro)",
        author_email="none",
        code_permalink="https://github.com/kwanyoungpark/LEQ",
        description="generated by leq.data (deterministic in its seed)",
    )


def load_minari(root: str | Path, dataset_id: str) -> Dataset:
    """Read a local Minari dataset into flat transitions (any Box-observation dataset works)."""
    os.environ["MINARI_DATASETS_PATH"] = str(Path(root).resolve())
    import minari

    source = f"Minari dataset {dataset_id!r} in {root}"
    try:
        episodes = list(minari.load_dataset(dataset_id).iterate_episodes())
    except (KeyError, FileNotFoundError, ValueError, OSError) as exc:
        raise ValueError(f"cannot read {source}: {exc}") from None
    parts: dict[str, list] = {k: [] for k in KEYS}
    for ep in episodes:
        obs = np.asarray(ep.observations, np.float32)
        n = len(ep.actions)
        dim = parts["observations"][0].shape[1] if parts["observations"] else obs.shape[-1]
        if obs.ndim != 2 or len(obs) != n + 1 or obs.shape[1] != dim:
            raise ValueError(
                f"{source}: episode {ep.id} has observations of shape {obs.shape}, "
                f"expected ({n + 1}, {dim}) for {n} actions"
            )
        for name in ("rewards", "terminations", "truncations"):
            if len(getattr(ep, name)) != n:
                raise ValueError(
                    f"{source}: episode {ep.id} has {len(getattr(ep, name))} {name} for {n} actions"
                )
        parts["observations"].append(obs[:-1])
        parts["next_observations"].append(obs[1:])
        parts["actions"].append(np.asarray(ep.actions, np.float32).reshape(n, -1))
        parts["rewards"].append(np.asarray(ep.rewards, np.float32))
        parts["terminals"].append(np.asarray(ep.terminations, np.float32))
        parts["timeouts"].append(np.asarray(ep.truncations, np.float32))
    if not episodes:
        raise ValueError(f"{source} holds no episodes")
    return validate({k: np.concatenate(v) for k, v in parts.items()}, source)
