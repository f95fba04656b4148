"""train_and_evaluate(cfg, workdir) -> metrics: the one entry point every command goes through."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization
from tqdm import tqdm

from . import agents, baselines, data, diagnostics, maze, pendulum, pointmaze
from . import world_model as wmod
from .config import DATA_VARIANTS, POINTMAZE, Config, validate
from .data import Dataset
from .networks import Actor, Critic, Value, with_stats
from .results import atomic_write_bytes, atomic_write_json, read_config

_CACHE: dict = {}  # datasets and world models shared by the methods of one seed
_SHARED: list[Path] = []  # folder shared with the other benchmark workers (`share_folder`)


def share_folder(folder: str | Path) -> None:
    """Share datasets and world models with other processes through `folder` (benchmark
    workers): the first process to need one computes and writes it, the others read it."""
    _SHARED[:] = [Path(folder)]


def _cached(key, make):
    """make() once per key in this process, and once per key across processes that share a
    folder. The values are deterministic in the key, so two workers that race both compute the
    same value and either file is the right one."""
    if key in _CACHE:
        return _CACHE[key]
    path = None
    if _SHARED:
        path = _SHARED[0] / f"{hashlib.sha1(repr(key).encode()).hexdigest()}.pkl"
    if path is not None and path.exists():
        _CACHE[key] = pickle.loads(path.read_bytes())
    else:
        _CACHE[key] = make()
        if path is not None:
            atomic_write_bytes(path, pickle.dumps(_CACHE[key]))
    return _CACHE[key]


def load_data(cfg: Config) -> Dataset:
    if cfg.dataset_path:
        return _cached(
            ("minari", cfg.dataset_path, cfg.dataset_id),
            lambda: data.load_minari(cfg.dataset_path, cfg.dataset_id),
        )
    explore = (cfg.explore_prob, cfg.explore_len)
    if cfg.env in POINTMAZE:
        return _cached(("pm", cfg.env, cfg.dataset, cfg.n_transitions, cfg.episode_len, cfg.seed, explore, cfg.out),
                       lambda: pointmaze_data(cfg))  # fmt: skip
    key = ("gen", cfg.env, cfg.dataset, cfg.n_transitions, cfg.episode_len, cfg.seed, explore)
    return _cached(
        key,
        lambda: data.make_dataset(
            cfg.env, cfg.dataset, cfg.n_transitions, cfg.episode_len, cfg.seed, explore
        ),
    )


def pointmaze_data(cfg: Config) -> Dataset:
    """Collect the behaviour data in the real PointMaze env as a local Minari dataset under
    <out>/minari (once per setting), then read it back through Minari.

    Benchmark workers that need the same dataset at the same moment each collect it into a
    private staging folder and move it into place with one rename; the first rename wins and
    the others drop their copy (collection is deterministic, so the copies are identical)."""
    root = Path(cfg.out) / "minari"
    name = f"{cfg.env[3:]}-{cfg.dataset}-n{cfg.n_transitions}-len{cfg.episode_len}"
    dataset_id = f"pointmaze/{name}-p{round(cfg.explore_prob * 1000)}x{cfg.explore_len}-seed{cfg.seed}-v0"  # fmt: skip
    if not (root / dataset_id).exists():
        explore = (cfg.explore_prob, cfg.explore_len)
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".staging-", dir=root) as staging:
            made = pointmaze.collect(cfg.env, cfg.dataset, cfg.n_transitions, cfg.episode_len, cfg.seed, explore, staging, dataset_id)  # fmt: skip
            publish(made, root / dataset_id)
    return data.load_minari(root, dataset_id)


def publish(staged: Path, final: Path) -> bool:
    """Move a finished dataset folder into place with one rename; False if another process's
    copy got there first (then `staged` is left for its staging folder's clean-up)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(staged, final)
    except OSError:
        if final.exists():
            return False
        raise
    return True


def fit_world_model(cfg: Config, ds: Dataset) -> wmod.WorldModel:
    key = ("wm", cfg.env, cfg.dataset, cfg.dataset_path, cfg.dataset_id, cfg.n_transitions, cfg.episode_len, cfg.seed, cfg.explore_prob, cfg.explore_len,
           cfg.model_members, cfg.model_elites, cfg.model_hidden, cfg.model_layers, cfg.model_steps, cfg.model_lr, cfg.model_contact_weight)  # fmt: skip
    widths = (cfg.model_hidden,) * cfg.model_layers
    repeat = None
    if cfg.model_contact_weight > 1 and task_of(cfg, *ds.observations.shape[1:], *ds.actions.shape[1:]) != OFFLINE:  # fmt: skip
        repeat = np.where(wall_rows(cfg.env, ds), cfg.model_contact_weight, 1)
    return _cached(
        key,
        lambda: wmod.fit(ds, cfg.model_members, cfg.model_elites, widths, cfg.model_steps, cfg.model_lr, cfg.seed, capacity=capacity(cfg, ds), repeat=repeat),
    )  # fmt: skip


def wall_rows(env: str, ds: Dataset) -> np.ndarray:
    """(n,) bool: the transitions a wall shapes: moves the JAX maze blocks, or PointMaze
    transitions that end touching a wall; none for Pendulum."""
    if env in POINTMAZE:
        return pointmaze.wall_contact(pointmaze.layout(env), ds.next_observations[:, :2])
    if env in maze.LAYOUTS:
        walls = maze.make_maze(env).walls
        return (
            np.asarray(maze.blocked(walls, jnp.asarray(ds.observations), jnp.asarray(ds.actions)))
            > 0
        )
    return np.zeros(len(ds.rewards), bool)


def capacity(cfg: Config, ds: Dataset) -> int:
    """Rows every seed's device arrays are padded to: a generated dataset never holds more than
    n_transitions, so all seeds share one set of shapes (and one compilation per function)."""
    return max(len(ds.rewards), cfg.n_transitions)


OFFLINE = "offline"  # the task name of a run whose data fits no built-in env: no evaluation


def env_dims(env: str) -> tuple[int, int]:
    """(observation dim, action dim) of a built-in task."""
    if env == "pendulum":
        return 3, 1
    return (pointmaze.OBS_DIM, 2) if env in POINTMAZE else (4, 2)


def task_of(cfg: Config, obs_dim: int, act_dim: int) -> str:
    """cfg.env when the data's dimensions are the env's; OFFLINE for a user's dataset of other
    dimensions (e.g. a D4RL AntMaze conversion: 29-D observations, 8-D actions), which trains
    with no termination (the goal test needs the env's coordinates) and is not evaluated."""
    return cfg.env if (obs_dim, act_dim) == env_dims(cfg.env) else OFFLINE


def as_arrays(cfg: Config, ds: Dataset) -> dict:
    return data.device_arrays(ds, capacity(cfg, ds))


def init_params(cfg: Config, ds: Dataset, key):
    widths = (cfg.hidden,) * cfg.layers
    obs_dim, act_dim = ds.observations.shape[1], ds.actions.shape[1]
    mean, std = ds.observations.mean(0), ds.observations.std(0) + 1e-3
    joint = np.concatenate([ds.observations, ds.actions], axis=1)  # the critic's [s, a] input
    ka, kc, kv = jax.random.split(key, 3)
    o, a = jnp.zeros((1, obs_dim)), jnp.zeros((1, act_dim))
    actor = with_stats(Actor(widths, act_dim).init(ka, o), mean, std)
    critic = with_stats(Critic(widths).init(kc, o, a), joint.mean(0), joint.std(0) + 1e-3)
    value = with_stats(Value(widths).init(kv, o), mean, std)
    return actor, critic, value


def tau_beta(cfg: Config, which: str) -> tuple[float, float]:
    tau, beta, *_ = baselines.VARIANTS[which]
    tau = cfg.tau if tau is None else (getattr(cfg, tau) if isinstance(tau, str) else tau)
    return tau, cfg.beta if beta is None else getattr(cfg, beta)


def make_hp(cfg: Config, which: str, obs_dim: int, act_dim: int) -> agents.HP:
    _, _, target, actor_obj, dynamics = baselines.VARIANTS[which]
    return agents.HP(
        target, actor_obj, dynamics, cfg.actor_grad, cfg.gamma, cfg.lam, cfg.horizon, cfg.ema, cfg.actor_lr,
        cfg.critic_lr, cfg.steps, cfg.batch, (cfg.hidden,) * cfg.layers,
        (cfg.model_hidden,) * cfg.model_layers, obs_dim, act_dim, task_of(cfg, obs_dim, act_dim),
    )  # fmt: skip


def chunk_lengths(steps: int, every: int) -> list[int]:
    return [every] * (steps // every) + ([steps % every] if steps % every else [])


def _bar(cfg: Config, total: int, desc: str):
    return tqdm(total=total, desc=desc, disable=cfg.quiet or not sys.stderr.isatty(), leave=False)


def train_model_based(cfg: Config, which: str, ds: Dataset, key) -> dict:
    """Algorithm 1: world model, optional BC, then expansion + update chunks. Returns actor params."""
    wm = fit_world_model(cfg, ds)
    d = as_arrays(cfg, ds)
    hp = make_hp(cfg, which, ds.observations.shape[1], ds.actions.shape[1])
    tau, beta = (jnp.float32(v) for v in tau_beta(cfg, which))
    k_init, k_bc, key = jax.random.split(key, 3)
    actor_p, critic_p, _ = init_params(cfg, ds, k_init)
    diag = diagnostics.model_errors(wm, hp.model_widths, ds, hp.env, cfg.seed)
    if cfg.bc_steps:
        bc = agents.bc_fn(hp.widths, hp.act_dim, cfg.batch, cfg.bc_steps, cfg.critic_lr)
        actor_p = bc(actor_p, d, k_bc)
    if cfg.bc_steps and hp.env != OFFLINE:  # the floor: the BC actor before any LEQ update
        diag["bc_" + main_metric(cfg)] = evaluate_actor(cfg, actor_p, hp.act_dim, k_bc)[main_metric(cfg)]  # fmt: skip
    state = agents.init_state(hp, key, actor_p, critic_p)
    expand = agents.expansion_fn(hp, cfg.rollout_states, cfg.rollout_len, cfg.policy_std)
    # ring buffer of the last `rollout_retain` expansions, fixed in shape (one compilation)
    rows = cfg.rollout_states * cfg.rollout_len
    model_obs = jnp.zeros((cfg.rollout_retain * rows, ds.observations.shape[1]))
    with _bar(cfg, cfg.steps, which) as bar:
        for i, length in enumerate(chunk_lengths(cfg.steps, cfg.rollout_every)):
            key, ke, ku = jax.random.split(key, 3)
            slot = jnp.asarray((i % cfg.rollout_retain) * rows, jnp.int32)
            new = expand(state.actor, wm, d, ke)
            model_obs = jax.lax.dynamic_update_slice(model_obs, new, (slot, jnp.int32(0)))
            count = jnp.asarray(min(i + 1, cfg.rollout_retain) * rows, jnp.int32)
            run = agents.update_chunk(hp, length)
            state, info = run(state, wm, d, model_obs, count, ku, tau, beta)
            bar.update(length)
            bar.set_postfix({k: f"{float(v):.3g}" for k, v in info.items()})
    if hp.env in maze.LAYOUTS or hp.env in POINTMAZE:
        diag.update(diagnostics.imagination_stats(cfg, wm, state.actor, hp.act_dim, ke))
    return {"actor": state.actor, "critic": state.critic, "info": info, "diagnostics": diag}


def main_metric(cfg: Config) -> str:
    return "normalized_return" if cfg.env == "pendulum" else "success_rate"


def iql_steps(cfg: Config) -> int:
    """IQL's gradient updates: cfg.iql_steps, or cfg.steps where that is 0."""
    return cfg.iql_steps or cfg.steps


def iql_hp(cfg: Config, act_dim: int) -> baselines.IQLHP:
    return baselines.IQLHP(
        cfg.iql_expectile, cfg.iql_temperature, cfg.gamma, cfg.ema, cfg.critic_lr, iql_steps(cfg),
        cfg.batch, (cfg.hidden,) * cfg.layers, act_dim,
    )  # fmt: skip


def train_iql(cfg: Config, ds: Dataset, key) -> dict:
    d = as_arrays(cfg, ds)
    hp = iql_hp(cfg, ds.actions.shape[1])
    k_init, key = jax.random.split(key)
    st = baselines.iql_init(hp, *init_params(cfg, ds, k_init))
    with _bar(cfg, iql_steps(cfg), "IQL") as bar:
        for length in chunk_lengths(iql_steps(cfg), cfg.rollout_every):
            key, k = jax.random.split(key)
            st, info = baselines.iql_chunk(hp, length)(st, d, k)
            bar.update(length)
            bar.set_postfix({k: f"{float(v):.3g}" for k, v in info.items()})
    return {"actor": st.actor, "critic": st.critic, "info": info}


@functools.cache
def _policy(widths: tuple[int, ...], act_dim: int):
    """jit(actor) on one observation."""
    actor = Actor(widths, act_dim)
    return jax.jit(lambda p, o: actor.apply(p, o[None])[0])


@functools.cache
def _evaluator(env: str, widths: tuple[int, ...], act_dim: int, episodes: int):
    """jit(evaluation episodes of the deterministic actor), compiled once per task and size."""
    actor = Actor(widths, act_dim)
    if env == "pendulum":
        stats = lambda p, key: pendulum.episode_stats(lambda o: actor.apply(p, o), key, episodes)
    else:
        m = maze.make_maze(env)
        stats = lambda p, key: maze.episode_stats(m, lambda o: actor.apply(p, o), key, episodes)
    return jax.jit(stats)


def evaluate_actor(cfg: Config, actor_p: dict, act_dim: int, key) -> dict[str, float]:
    if cfg.env in POINTMAZE:  # the real env, stepped in Python
        policy = _policy((cfg.hidden,) * cfg.layers, act_dim)
        seed = int(jax.random.randint(key, (), 0, 2**30))
        return pointmaze.evaluate(cfg.env, lambda o: policy(actor_p, o), cfg.eval_episodes, seed)
    run = _evaluator(cfg.env, (cfg.hidden,) * cfg.layers, act_dim, cfg.eval_episodes)
    return {k: float(v) for k, v in run(actor_p, key).items()}


def train_and_evaluate(
    cfg: Config, workdir: str | Path, which: str | None = None
) -> dict[str, float]:
    """Train one method (cfg.method unless `which`) for cfg.seed; returns its metrics.

    Writes workdir/config.json first, then checkpoint.msgpack and metrics.json.
    """
    validate(cfg)
    which = which or cfg.method
    if which not in baselines.VARIANTS and which != "IQL" and which not in DATA_VARIANTS:
        raise ValueError(f"unknown method {which!r}")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    base, overrides = DATA_VARIANTS.get(which, (which, {}))
    cfg = dataclasses.replace(cfg, **overrides)
    atomic_write_json(workdir / "config.json", {**dataclasses.asdict(cfg), "method": which})
    which = base
    ds = load_data(cfg)
    obs_dim, act_dim = ds.observations.shape[1], ds.actions.shape[1]
    task = task_of(cfg, obs_dim, act_dim)
    if task == OFFLINE and not cfg.dataset_path:
        raise ValueError(f"{cfg.env} data must have {env_dims(cfg.env)} (obs, action) dims")
    if task == OFFLINE and which == "LEQ-oracle":
        raise ValueError(f"LEQ-oracle needs {cfg.env}'s own data, got {obs_dim}-D observations")
    key = jax.random.PRNGKey(cfg.seed)
    k_train, k_eval = jax.random.split(key)
    out = (
        train_iql(cfg, ds, k_train)
        if which == "IQL"
        else train_model_based(cfg, which, ds, k_train)
    )
    if task == OFFLINE:  # no env of these dimensions to run the policy in
        metrics = {"evaluated": 0.0}
    else:
        metrics = evaluate_actor(cfg, out["actor"], ds.actions.shape[1], k_eval)
    metrics.update({f"final_{k}": float(v) for k, v in out["info"].items()})
    metrics.update(out.get("diagnostics", {}))
    metrics["dataset_transitions"] = float(len(ds.rewards))
    if cfg.env in maze.LAYOUTS and ds.observations.shape[1] == 4:
        metrics["data_blocked_fraction"] = data.blocked_fraction(ds, cfg.env)
    if cfg.env in POINTMAZE:  # transitions ending in contact with a MuJoCo wall
        metrics["data_wall_contact_fraction"] = pointmaze.wall_contact_fraction(cfg.env, ds.next_observations)  # fmt: skip
    blob = serialization.to_bytes({"actor": out["actor"], "critic": out["critic"]})
    atomic_write_bytes(workdir / "checkpoint.msgpack", blob)
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def load_run(workdir: str | Path) -> tuple[Config, dict]:
    """(the run's Config, its actor parameters) from what `train` wrote into workdir.

    Every file is checked: a missing or damaged one is a ValueError that names it."""
    workdir = Path(workdir)
    cfg = read_config(workdir / "config.json", Config, validate)
    ckpt = workdir / "checkpoint.msgpack"
    if not ckpt.is_file():
        raise ValueError(f"{ckpt}: no such checkpoint; run `train --out {workdir}` first")
    try:
        actor = serialization.msgpack_restore(ckpt.read_bytes())["actor"]
        inner = actor["params"]
        act_dim = int(inner["MLP_0"][f"Dense_{cfg.layers}"]["bias"].shape[0])
        obs = jnp.zeros((1, int(inner["obs_mean"].shape[0])))
        widths = (cfg.hidden,) * cfg.layers
        template = Actor(widths, act_dim).init(jax.random.PRNGKey(0), obs)
        actor = serialization.from_state_dict(template, actor)
        shapes = jax.tree_util.tree_map(jnp.shape, (template, actor))
        if shapes[0] != shapes[1]:
            raise ValueError(f"parameter shapes {shapes[1]} differ from the config's {shapes[0]}")
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:  # any damage
        raise ValueError(f"{ckpt}: corrupt checkpoint ({exc}); run `train` again") from None
    return cfg, actor


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float | str]:
    """Load the actor a previous `train` saved in workdir and evaluate it again on the run's
    task, with the evaluation key `train` used (so a JAX maze gives train's numbers back). The
    run's own config.json decides everything; `cfg` (the command line's) is not used."""
    run, actor = load_run(workdir)
    act_dim = int(actor["params"]["MLP_0"][f"Dense_{run.layers}"]["bias"].shape[0])
    obs_dim = int(actor["params"]["obs_mean"].shape[0])
    if task_of(run, obs_dim, act_dim) == OFFLINE:
        raise ValueError(
            f"{Path(workdir) / 'checkpoint.msgpack'}: the actor was trained on {obs_dim}-D "
            f"observations and {act_dim}-D actions ({run.dataset_path} {run.dataset_id}), but "
            f"{run.env} has {env_dims(run.env)}: no environment here to evaluate it in"
        )
    k_eval = jax.random.split(jax.random.PRNGKey(run.seed))[1]
    metrics = evaluate_actor(run, actor, act_dim, k_eval)
    return {"method": run.method, "env": run.env, "seed": run.seed, **metrics}


__all__ = ["evaluate", "load_run", "np", "train_and_evaluate"]
