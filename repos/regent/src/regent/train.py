"""train_and_evaluate(cfg, workdir) -> metrics: pretrain on the training tasks, then evaluate
every method on the held-out tasks at each demonstration count, for one seed. evaluate(cfg, workdir)
reloads the checkpoints such a run saved and scores them again on the same held-out tasks."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import faiss
import numpy as np
import torch

from . import baselines
from .config import Config, validate
from .data import Demos, rollout_expert, take_episodes
from .envs import make_env, make_tasks
from .meta_world import evaluate_metaworld, reload_metaworld, score_metaworld
from .pretrain import (
    Policy,
    act_size,
    load_state,
    new_model,
    pretrain,
    pretraining_batch,
    regent_policy,
    save_state,
)
from .results import atomic_write_json, read_config, read_json
from .retrieval import Retriever

METHODS = ("REGENT", "R&P", "MT-BC", "BC-scratch", "REGENT-no-interp", "REGENT-untrained")
"""REGENT-untrained is the negative control: the same interpolation around an untrained network."""
FAMILY_SEED = {"point": 1, "grid": 2}


def family_tasks(family: str, cfg: Config) -> tuple[list, list]:
    """Training and held-out tasks of a family for cfg.seed (disjoint draws)."""
    base = 10_000 * cfg.seed + 100 * FAMILY_SEED[family]
    return (
        make_tasks(family, cfg.n_train_tasks, base, cfg.regime),
        make_tasks(family, cfg.n_test_tasks, base + 50, cfg.regime),
    )


def expert_policy(obs: np.ndarray, rew: np.ndarray, envs: list) -> np.ndarray:
    return np.asarray([env.expert_action(o) for env, o in zip(envs, obs)])


def random_policy(seed: int) -> Policy:
    rng = np.random.default_rng(seed)

    def act(obs: np.ndarray, rew: np.ndarray, envs: list) -> np.ndarray:
        if envs[0].action_space.shape == ():
            return rng.integers(envs[0].action_space.n, size=len(envs))
        return rng.uniform(-1, 1, size=(len(envs), *envs[0].action_space.shape))

    return act


def run_episodes(
    task, policy: Policy, n_episodes: int, seed: int, clock: dict | None = None
) -> np.ndarray:
    """Returns of n_episodes run in lockstep; episode e starts from reset(seed + e), so every
    method meets the same start states (paired episodes)."""
    envs = [make_env(task) for _ in range(n_episodes)]
    obs = np.stack([env.reset(seed=seed + e)[0] for e, env in enumerate(envs)])
    rew = np.zeros(n_episodes, np.float32)
    total = np.zeros(n_episodes)
    active = np.ones(n_episodes, bool)
    start, steps = time.perf_counter(), 0
    while active.any():
        actions = policy(obs, rew, envs)
        for e in np.flatnonzero(active):
            o, r, terminated, truncated, _ = envs[e].step(actions[e])
            obs[e], rew[e] = o, r
            total[e] += r
            active[e] = not (terminated or truncated)
            steps += 1
    if clock is not None:
        clock["seconds"] = clock.get("seconds", 0.0) + time.perf_counter() - start
        clock["steps"] = clock.get("steps", 0) + steps
    return total


def normalise(ret, random_ret: float, expert_ret: float):
    """(R - R_random) / (R_expert - R_random) with the task's mean random and expert returns."""
    return (ret - random_ret) / max(expert_ret - random_ret, 1e-6)


def pretrain_family(
    family: str, cfg: Config, workdir: Path
) -> tuple[dict[str, torch.nn.Module], baselines.MLPPolicy, dict[str, float]]:
    """Pretrain REGENT (with and without interpolation) and MT-BC on the family's training tasks;
    saves their checkpoints in workdir. Returns the models (and the untrained control), MT-BC,
    and the pretraining metrics."""
    train_tasks, _ = family_tasks(family, cfg)
    demo_seed = 1_000 * cfg.seed + FAMILY_SEED[family]
    train_demos = [
        rollout_expert(t, cfg.train_demos, demo_seed + 7 * i, cfg.demo_noise)
        for i, t in enumerate(train_tasks)
    ]
    data, ratios = pretraining_batch(train_demos, cfg.n_retrieved, cfg.normaliser)
    metrics = {f"normaliser_ratio/p95 context over nn1/{family}": float(np.mean(ratios))}
    models = {"REGENT-untrained": new_model(data["obs"].shape[-1], family, cfg).eval()}
    for interp, name in ((True, "REGENT"), (False, "REGENT-no-interp")):
        models[name], losses = pretrain(
            data, family, cfg, interp, workdir / f"{family}_{name}.safetensors"
        )
        if losses:
            metrics[f"pretrain_loss_first/{name}/{family}"] = float(np.mean(losses[:20]))
            metrics[f"pretrain_loss_last/{name}/{family}"] = float(np.mean(losses[-20:]))
    pooled = Demos(
        *(
            np.concatenate([getattr(d, f) for d in train_demos])
            for f in ("obs", "act", "rew", "episode")
        )
    )
    mtbc_path = workdir / f"{family}_MT-BC.safetensors"
    if cfg.resume and mtbc_path.exists():
        mtbc = load_state(mtbc_model(pooled.obs.shape[1], family, cfg), mtbc_path)
    else:
        mtbc = baselines.fit_bc(
            pooled, env_actions(family, cfg), cfg.mtbc_steps, 1e-3, 256, cfg.seed
        )
        save_state(mtbc, mtbc_path)
    return models, mtbc, metrics


def env_actions(family: str, cfg: Config) -> int:
    """The environment's own action count or dimensions (what the BC baselines output)."""
    return act_size(family, dataclasses.replace(cfg, action_vocab=0))


def mtbc_model(obs_dim: int, family: str, cfg: Config) -> baselines.MLPPolicy:
    return baselines.MLPPolicy(obs_dim, env_actions(family, cfg), family == "grid")


def reload_family(
    family: str, cfg: Config, workdir: Path
) -> tuple[dict[str, torch.nn.Module], baselines.MLPPolicy]:
    """The models pretrain_family saved in workdir (and the untrained control, rebuilt from the
    seed), ready for score_family."""
    _, test_tasks = family_tasks(family, cfg)
    obs_dim = make_env(test_tasks[0]).observation_space.shape[0]
    models = {"REGENT-untrained": new_model(obs_dim, family, cfg).eval()}
    for name in ("REGENT", "REGENT-no-interp"):
        path = workdir / f"{family}_{name}.safetensors"
        models[name] = load_state(new_model(obs_dim, family, cfg), path)
    mtbc = load_state(mtbc_model(obs_dim, family, cfg), workdir / f"{family}_MT-BC.safetensors")
    return models, mtbc


def score_family(
    family: str, cfg: Config, models: dict[str, torch.nn.Module], mtbc: baselines.MLPPolicy
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Score every method on the family's held-out tasks at each demonstration count (BC from
    scratch is fitted here, on each task's few demonstrations). Returns the metrics and each
    method's per-episode normalised returns (tasks x episodes)."""
    _, test_tasks = family_tasks(family, cfg)
    demo_seed = 1_000 * cfg.seed + FAMILY_SEED[family]
    n_act = env_actions(family, cfg)
    clocks: dict[str, dict] = {m: {} for m in METHODS}
    scores: dict[str, list] = {}
    for ti, task in enumerate(test_tasks):
        eval_seed = 10**6 + 1_000 * cfg.seed + 100 * ti

        def run(pol, clock=None, task=task, eval_seed=eval_seed):
            return run_episodes(task, pol, cfg.eval_episodes, eval_seed, clock)

        lo, hi = run(random_policy(eval_seed)).mean(), run(expert_policy).mean()

        def score(pol, clock=None, run=run, lo=lo, hi=hi):
            return normalise(run(pol, clock), lo, hi)

        demos = rollout_expert(
            task,
            max(max(cfg.demo_counts), cfg.ablation_demos),
            demo_seed + 5_000 + ti,
            cfg.demo_noise,
        )
        mt = score(lambda o, r, e: mtbc.act(o), clocks["MT-BC"])
        for k in cfg.demo_counts:
            few = take_episodes(demos, k)
            retriever = Retriever(few, cfg.normaliser, cfg.n_retrieved)
            bc = baselines.fit_bc(few, n_act, cfg.bc_steps, 1e-3, 64, cfg.seed)
            per = {
                name: score(
                    regent_policy(models[name], retriever, cfg.n_retrieved, interp, cfg),
                    clocks[name],
                )
                for name, interp in (
                    ("REGENT", True),
                    ("REGENT-no-interp", False),
                    ("REGENT-untrained", True),
                )
            }
            per["R&P"] = score(lambda o, r, e, rt=retriever: rt.rp_action(o), clocks["R&P"])
            per["MT-BC"] = mt
            per["BC-scratch"] = score(lambda o, r, e, bc=bc: bc.act(o), clocks["BC-scratch"])
            for m, v in per.items():
                scores.setdefault(f"{m}/{family}/k{k}", []).append(v)
        retriever = Retriever(
            take_episodes(demos, cfg.ablation_demos), cfg.normaliser, cfg.n_retrieved
        )
        for n in cfg.ablation_sizes:
            pol = regent_policy(models["REGENT"], retriever, n, True, cfg)
            scores.setdefault(f"ablation/{family}/n{n}", []).append(score(pol))
    episodes = {k: np.concatenate(v) for k, v in scores.items()}
    metrics = {k: float(v.mean()) for k, v in episodes.items()}
    for m, c in clocks.items():
        metrics[f"env_steps_per_s/{m}/{family}"] = c["steps"] / c["seconds"]
    return metrics, episodes


def set_threads(n: int) -> None:
    """One knob for torch's and faiss's (OpenMP) CPU threads: the machines are shared."""
    torch.set_num_threads(n)
    faiss.omp_set_num_threads(n)


def pool_families(cfg: Config, metrics: dict[str, float], episodes: dict[str, np.ndarray]) -> None:
    """Add the families pooled ('REGENT/k5' from 'REGENT/point/k5' and 'REGENT/grid/k5')."""
    for key in list(episodes):
        head, _, tail = key.split("/")
        pooled = f"{head}/{tail}"
        if pooled not in episodes:
            episodes[pooled] = np.concatenate(
                [episodes[f"{head}/{f}/{tail}"] for f in cfg.families]
            )
            metrics[pooled] = float(episodes[pooled].mean())


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """All methods for cfg.seed; writes workdir/config.json first and metrics.json last."""
    validate(cfg)
    set_threads(cfg.threads)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    metrics: dict[str, float] = {}
    episodes: dict[str, np.ndarray] = {}
    for family in cfg.families:
        models, mtbc, fam_metrics = pretrain_family(family, cfg, workdir)
        scored, fam_episodes = score_family(family, cfg, models, mtbc)
        metrics.update({**fam_metrics, **scored})
        episodes.update(fam_episodes)
    if cfg.metaworld:  # its own episodes file: its tasks and demo counts differ from the families'
        mw_metrics, mw_episodes = evaluate_metaworld(cfg, workdir)
        metrics.update(mw_metrics)
        atomic_write_json(
            workdir / "metaworld_episodes.json", {k: v.tolist() for k, v in mw_episodes.items()}
        )
    pool_families(cfg, metrics, episodes)
    atomic_write_json(workdir / "episodes.json", {k: v.tolist() for k, v in episodes.items()})
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def run_config(workdir: str | Path) -> Config:
    """The Config a `train` run saved in workdir/config.json (a ValueError naming the file when
    it is missing, corrupt or not a valid configuration)."""
    return read_config(Path(workdir) / "config.json", Config, validate)


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Reload the checkpoints a `train` run saved in workdir (REGENT with and without
    interpolation, multi-task BC; Meta-World's too when the run had it) and score them again on
    the run's held-out tasks, with the run's own configuration. Returns the same metric keys as
    train (speeds are this evaluation's); nothing is written."""
    workdir = Path(workdir)
    run = dataclasses.replace(run_config(workdir), out=str(workdir), quiet=cfg.quiet)
    set_threads(cfg.threads)
    metrics: dict[str, float] = {}
    episodes: dict[str, np.ndarray] = {}
    for family in run.families:
        scored, fam_episodes = score_family(family, run, *reload_family(family, run, workdir))
        metrics.update(scored)
        episodes.update(fam_episodes)
    if run.metaworld:
        mw_metrics, _ = score_metaworld(run, *reload_metaworld(run, workdir))
        metrics.update(mw_metrics)
    pool_families(run, metrics, episodes)
    return metrics


def read_episodes(workdir: str | Path) -> dict[str, np.ndarray]:
    """Per-episode normalised returns a previous `train` wrote (paired across methods)."""
    path = Path(workdir) / "episodes.json"
    return {k: np.asarray(v) for k, v in read_json(path, "episodes file").items()}


def read_metaworld_episodes(workdir: str | Path) -> dict[str, np.ndarray]:
    """Per-episode Meta-World normalised returns ('<method>/k<k>') and successes
    ('success/<method>/k<k>') a previous `train` with --metaworld wrote."""
    path = Path(workdir) / "metaworld_episodes.json"
    return {k: np.asarray(v) for k, v in read_json(path, "Meta-World episodes file").items()}
