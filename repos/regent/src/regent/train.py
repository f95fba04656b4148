"""train_and_evaluate(cfg, workdir) -> metrics: pretrain on the training tasks, then evaluate
every method on the held-out tasks at each demonstration count, for one seed."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import faiss
import numpy as np
import torch
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from . import baselines
from .config import Config, validate
from .data import Demos, rollout_expert, take_episodes
from .envs import make_env, make_tasks
from .regent import RegentModel, build_context
from .results import atomic_write_bytes, atomic_write_json
from .retrieval import NORMALISERS, Retriever, knn_other_episodes, p95_normaliser

METHODS = ("REGENT", "R&P", "MT-BC", "BC-scratch", "REGENT-no-interp", "REGENT-untrained")
"""REGENT-untrained is the negative control: the same interpolation around an untrained network."""
Policy = Callable[[np.ndarray, np.ndarray, list], np.ndarray]
FAMILY_SEED = {"point": 1, "grid": 2}


def family_tasks(family: str, cfg: Config) -> tuple[list, list]:
    """Training and held-out tasks of a family for cfg.seed (disjoint draws)."""
    base = 10_000 * cfg.seed + 100 * FAMILY_SEED[family]
    return (
        make_tasks(family, cfg.n_train_tasks, base, cfg.regime),
        make_tasks(family, cfg.n_test_tasks, base + 50, cfg.regime),
    )


GRID_ACTIONS = 4


def act_size(family: str, cfg: Config) -> int:
    """Continuous action dimensions, or the discrete vocabulary the model outputs."""
    if family == "metaworld":
        return 4
    return (cfg.action_vocab or GRID_ACTIONS) if family == "grid" else 2


def pretraining_batch(
    demos_per_task: list[Demos], n: int, normaliser: str
) -> tuple[dict[str, torch.Tensor], list[float]]:
    """Every row of every training task as a query, with n neighbours from other episodes; also
    each task's ratio of the official normaliser (p95 over all n context distances) to ours (p95
    over 1-NN distances), as used, i.e. after the fallback to 1 for a zero percentile."""
    parts, ratios = [], []
    for demos in demos_per_task:
        _, idx = knn_other_episodes(demos, n)
        norms = {kind: p95_normaliser(demos, kind, n) for kind in NORMALISERS}
        ratios.append(norms["context"] / norms["nn1"])
        parts.append(build_context(demos, idx, demos.obs, demos.rew, demos.act, norms[normaliser]))
    return {k: torch.cat([p[k] for p in parts]) for k in parts[0]}, ratios


def show_progress(cfg: Config) -> bool:
    return not cfg.quiet and sys.stderr.isatty()


def new_model(obs_dim: int, family: str, cfg: Config) -> RegentModel:
    """A freshly initialised REGENT transformer (the same weights for the same seed)."""
    torch.manual_seed(cfg.seed)
    return RegentModel(
        obs_dim,
        act_size(family, cfg),
        family == "grid",
        cfg.d_model,
        cfg.n_layers,
        cfg.n_heads,
        cfg.n_retrieved + 1,
    )


def pretrain(
    data: dict[str, torch.Tensor], family: str, cfg: Config, interpolate: bool, ckpt: Path
) -> tuple[RegentModel, list[float]]:
    """Train a REGENT model on pretraining contexts; loss over all context positions."""
    model = new_model(data["obs"].shape[-1], family, cfg).to(cfg.device)
    if cfg.resume and ckpt.exists():
        model.load_state_dict(load_file(ckpt))
        return model.cpu().eval(), []
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed)
    losses = []
    bar = tqdm(
        range(cfg.steps),
        desc=f"{family} {'REGENT' if interpolate else 'no-interp'}",
        disable=not show_progress(cfg),
        leave=False,
    )
    n_rows = len(data["obs"])
    for _ in bar:
        rows = torch.randint(n_rows, (cfg.batch_size,), generator=gen)
        batch = {k: v[rows].to(cfg.device) for k, v in data.items()}
        loss = model.loss(batch, interpolate, cfg.lam, cfg.cont_scale)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
    model = model.cpu().eval()
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    tmp = ckpt.with_suffix(".tmp")
    save_file(state, tmp)
    atomic_write_bytes(ckpt, tmp.read_bytes())
    tmp.unlink()
    return model, losses


def regent_policy(
    model: RegentModel, retriever: Retriever, n: int, interpolate: bool, cfg: Config
) -> Policy:
    """REGENT at evaluation: retrieve, build the context, act on the query position."""
    n_eff = min(n, len(retriever.demos))  # a single short demo can hold fewer than n states

    @torch.no_grad()
    def act(obs: np.ndarray, rew: np.ndarray, envs: list) -> np.ndarray:
        idx, _ = retriever.retrieve(obs, n_eff)
        batch = build_context(retriever.demos, idx, obs, rew, None, retriever.normaliser)
        out = model.predict(batch, interpolate, cfg.lam, cfg.cont_scale)[:, -1]
        if model.discrete:  # only the environment's actions; a larger vocabulary pads
            return out[:, :GRID_ACTIONS].argmax(-1).numpy()
        return out.clamp(-1, 1).numpy()

    return act


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


def evaluate_family(
    family: str, cfg: Config, workdir: Path
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Pretrain REGENT (with and without interpolation) and MT-BC, then score all methods.
    Returns the metrics and each method's per-episode normalised returns (tasks x episodes)."""
    train_tasks, test_tasks = family_tasks(family, cfg)
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
    n_act = act_size(family, dataclasses.replace(cfg, action_vocab=0))  # the env's own actions
    mtbc = baselines.fit_bc(pooled, n_act, cfg.mtbc_steps, 1e-3, 256, cfg.seed)
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
    metrics.update({k: float(v.mean()) for k, v in episodes.items()})
    for m, c in clocks.items():
        metrics[f"env_steps_per_s/{m}/{family}"] = c["steps"] / c["seconds"]
    return metrics, episodes


def set_threads(n: int) -> None:
    """One knob for torch's and faiss's (OpenMP) CPU threads: the machines are shared."""
    torch.set_num_threads(n)
    faiss.omp_set_num_threads(n)


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
        fam_metrics, fam_episodes = evaluate_family(family, cfg, workdir)
        metrics.update(fam_metrics)
        episodes.update(fam_episodes)
    if cfg.metaworld:  # its own episodes file: its tasks and demo counts differ from the families'
        from .meta_world import evaluate_metaworld

        mw_metrics, mw_episodes = evaluate_metaworld(cfg, workdir)
        metrics.update(mw_metrics)
        atomic_write_json(
            workdir / "metaworld_episodes.json", {k: v.tolist() for k, v in mw_episodes.items()}
        )
    for key in list(episodes):
        head, _, tail = key.split("/")
        pooled = f"{head}/{tail}"
        if pooled not in episodes:
            episodes[pooled] = np.concatenate(
                [episodes[f"{head}/{f}/{tail}"] for f in cfg.families]
            )
            metrics[pooled] = float(episodes[pooled].mean())
    atomic_write_json(workdir / "episodes.json", {k: v.tolist() for k, v in episodes.items()})
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def read_episodes(workdir: str | Path) -> dict[str, np.ndarray]:
    """Per-episode normalised returns a previous `train` wrote (paired across methods)."""
    path = Path(workdir) / "episodes.json"
    if not path.exists():
        raise ValueError(f"no episodes.json in {workdir}; run `train --out {workdir}` first")
    return {k: np.asarray(v) for k, v in json.loads(path.read_text()).items()}


def read_metaworld_episodes(workdir: str | Path) -> dict[str, np.ndarray]:
    """Per-episode Meta-World normalised returns ('<method>/k<k>') and successes
    ('success/<method>/k<k>') a previous `train` with --metaworld wrote."""
    path = Path(workdir) / "metaworld_episodes.json"
    if not path.exists():
        raise ValueError(f"no metaworld_episodes.json in {workdir}; run `train --metaworld` first")
    return {k: np.asarray(v) for k, v in json.loads(path.read_text()).items()}


def evaluate(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    return json.loads(path.read_text())
