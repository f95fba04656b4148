"""Meta-World (the paper's continuous benchmark) at CPU scale, in the paper preset.

The paper holds out five MT50 tasks (bin-picking, box-close, door-lock, door-unlock, hand-insert)
and pretrains on the other 45. Here the demonstrators are `metaworld`'s scripted policies (with
Gaussian action noise), the observation is the 39-d goal-observable state, actions are 4-d in
[-1, 1], episodes are cut at `mw_horizon` steps, and a subset of the 45 pretraining tasks, evenly
spaced in name order, is used. Start positions (objects, goal) are drawn from the task's own
random-reset space with the env's seeded generator, so episode e of a task starts from the same
state for every method (paired episodes). Success is the env's `success` flag at any step.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

from . import baselines
from .config import Config
from .data import Demos, take_episodes
from .pretrain import load_state, new_model, pretrain, pretraining_batch, regent_policy, save_state
from .retrieval import Retriever

HELD_OUT = ("bin-picking-v3", "box-close-v3", "door-lock-v3", "door-unlock-v3", "hand-insert-v3")
"""The paper's five unseen Meta-World tasks (v3 here, v2 in the paper)."""
MW_METHODS = ("REGENT", "R&P", "MT-BC", "BC-scratch", "REGENT-untrained")
"""Methods run on Meta-World; REGENT-untrained is the ordering claim's negative control."""
ACT_DIM = 4
OBS_DIM = 39
"""The goal-observable state."""
FIELDS = ("obs", "act", "rew", "episode")
DEMO_POOL = 2
"""Environments per pretraining task while collecting its demonstrations."""
SEEN_PROBES = 2
"""Pretraining tasks on which REGENT is also evaluated (the generalisation diagnosis)."""


def require_metaworld():
    """The `metaworld` package, or a clear error naming the extra that installs it."""
    try:
        import metaworld.env_dict
        import metaworld.policies
    except ImportError as exc:
        raise ValueError(
            f"Meta-World needs the `metaworld` extra ({exc}); install it with "
            "`pip install -e 'repos/regent[metaworld]'`"
        ) from None
    return metaworld


def all_tasks() -> list[str]:
    return sorted(require_metaworld().env_dict.ALL_V3_ENVIRONMENTS)


def pretraining_tasks(n: int) -> list[str]:
    """n of the 45 tasks that are not held out, evenly spaced in name order (n = 45: all)."""
    pool = [t for t in all_tasks() if t not in HELD_OUT]
    if not 1 <= n <= len(pool):
        raise ValueError(f"mw_train_tasks must be in 1..{len(pool)}, got {n}")
    return [pool[int(i)] for i in np.linspace(0, len(pool) - 1, n).round().astype(int)]


class TaskPool:
    """`size` environments of one Meta-World task, built once (a MuJoCo model takes ~0.25 s to
    load) and reused by every method; `run` steps them in lockstep from seeded start states."""

    def __init__(self, name: str, size: int, horizon: int):
        mw = require_metaworld()
        if name not in mw.policies.ENV_POLICY_MAP:
            raise ValueError(f"unknown Meta-World task {name!r}; expected one of {all_tasks()}")
        self.name, self.horizon = name, horizon
        self.envs = []
        for _ in range(size):
            env = mw.env_dict.ALL_V3_ENVIRONMENTS_GOAL_OBSERVABLE[f"{name}-goal-observable"](seed=0)
            env._freeze_rand_vec = False  # a new start state at every reset ...
            env.seeded_rand_vec = True  # ... drawn from env.np_random, which `reset` seeds
            env.max_path_length = horizon
            self.envs.append(env)
        self.scripted = mw.policies.ENV_POLICY_MAP[name]()

    def reset(self, seed: int) -> np.ndarray:
        obs = []
        for e, env in enumerate(self.envs):
            env.seed(seed + e)
            obs.append(env.reset()[0])
        return np.asarray(obs, dtype=np.float32)

    def expert(self, obs: np.ndarray) -> np.ndarray:
        with warnings.catch_warnings():  # "Constant(s) may be too high": the env clips anyway
            warnings.simplefilter("ignore", UserWarning)
            acts = [self.scripted.get_action(o.astype(np.float64)) for o in obs]
        return np.clip(np.asarray(acts, dtype=np.float32), -1.0, 1.0)

    def run(self, policy, seed: int, clock: dict | None = None, record: bool = False):
        """Returns, successes (any step) and, with record, the visited rows of every episode.
        policy(obs (E, 39), prev_rew (E,)) -> actions (E, 4)."""
        n = len(self.envs)
        obs, rew = self.reset(seed), np.zeros(n, np.float32)
        total, success = np.zeros(n), np.zeros(n, bool)
        rows = {"obs": [], "act": [], "rew": []}
        start = time.perf_counter()
        for _ in range(self.horizon):
            act = np.clip(np.asarray(policy(obs, rew), dtype=np.float32), -1.0, 1.0)
            if record:
                for k, v in (("obs", obs), ("act", act), ("rew", rew)):
                    rows[k].append(v.copy())
            for e, env in enumerate(self.envs):
                o, r, _, _, info = env.step(act[e])
                obs[e], rew[e] = o, r
                total[e] += r
                success[e] |= bool(info["success"])
        if clock is not None:
            clock["seconds"] = clock.get("seconds", 0.0) + time.perf_counter() - start
            clock["steps"] = clock.get("steps", 0) + n * self.horizon
        return total, success, rows


def noisy_expert(pool: TaskPool, noise: float, seed: int):
    rng = np.random.default_rng(seed)
    return lambda obs, rew: pool.expert(obs) + noise * rng.standard_normal((len(obs), ACT_DIM))


def uniform_policy(seed: int):
    """The floor: uniform random actions."""
    rng = np.random.default_rng(seed)
    return lambda obs, rew: rng.uniform(-1.0, 1.0, (len(obs), ACT_DIM))


def collect_demos(pool: TaskPool, n_episodes: int, noise: float, seed: int) -> tuple[Demos, float]:
    """n_episodes noisy scripted demonstrations (rows s_t, r_t received on arriving, a_t), in
    batches of the pool's size; also the demonstrator's success rate."""
    parts, wins = [], []
    for b in range(0, n_episodes, len(pool.envs)):
        _, success, rows = pool.run(
            noisy_expert(pool, noise, seed + b), seed * 1009 + b, None, True
        )
        take = min(len(pool.envs), n_episodes - b)
        stack = {k: np.stack(v, axis=1)[:take] for k, v in rows.items()}  # (E, T, ...)
        episode = np.repeat(np.arange(b, b + take), pool.horizon)
        parts.append((stack, episode))
        wins.append(success[:take])
    demos = Demos(
        obs=np.concatenate([s["obs"].reshape(-1, s["obs"].shape[-1]) for s, _ in parts]),
        act=np.concatenate([s["act"].reshape(-1, ACT_DIM) for s, _ in parts]),
        rew=np.concatenate([s["rew"].reshape(-1) for s, _ in parts]).astype(np.float32),
        episode=np.concatenate([e for _, e in parts]).astype(np.int64),
    )
    return demos, float(np.concatenate(wins).mean())


def floor_and_oracle(pool: TaskPool, seed: int, metrics: dict, scope: str) -> tuple[float, float]:
    """Random actions (floor, normalised 0) and the noise-free scripted expert (oracle, 1) on
    the pool's start states; records their returns and success rates, returns (floor, scale)."""
    lo, lo_win, _ = pool.run(uniform_policy(seed), seed)
    hi, hi_win, _ = pool.run(lambda o, r: pool.expert(o), seed)
    for who, ret, win in (("random", lo, lo_win), ("scripted expert", hi, hi_win)):
        metrics[f"return/{who}/{scope}/{pool.name}"] = float(ret.mean())
        metrics[f"success_rate/{who}/{scope}/{pool.name}"] = float(win.mean())
    return float(lo.mean()), max(float(hi.mean() - lo.mean()), 1e-6)


def seen_tasks_check(cfg: Config, model, metrics: dict) -> None:
    """Diagnosis, reported only: REGENT and R&P on SEEN_PROBES pretraining tasks (fresh
    demonstrations and start states, the largest demo count). REGENT acting well here but not on
    the held-out tasks points at task generalisation rather than the method's machinery."""
    k = max(cfg.mw_demo_counts)
    tasks = pretraining_tasks(cfg.mw_train_tasks)
    probes = [tasks[int(i)] for i in np.linspace(0, len(tasks) - 1, SEEN_PROBES).round()]
    pooled: dict[str, list] = {}
    for si, name in enumerate(dict.fromkeys(probes)):
        pool = TaskPool(name, cfg.mw_eval_episodes, cfg.mw_horizon)
        eval_seed = 2 * 10**6 + 1_000 * cfg.seed + 100 * si
        lo, scale = floor_and_oracle(pool, eval_seed, metrics, "metaworld-seen")
        demos, _ = collect_demos(pool, k, cfg.demo_noise_mw, 1_000 * cfg.seed + 9_000 + si)
        retriever = Retriever(demos, cfg.normaliser, cfg.n_retrieved)
        act = regent_policy(model, retriever, cfg.n_retrieved, True, cfg)
        policies = {
            "REGENT": lambda o, r, act=act: act(o, r, []),
            "R&P": lambda o, r, rt=retriever: rt.rp_action(o),
        }
        for m, policy in policies.items():
            ret, win, _ = pool.run(policy, eval_seed)
            metrics[f"{m}/metaworld-seen/{name}/k{k}"] = float(((ret - lo) / scale).mean())
            metrics[f"success_rate/{m}/metaworld-seen/{name}/k{k}"] = float(win.mean())
            pooled.setdefault(m, []).append(metrics[f"{m}/metaworld-seen/{name}/k{k}"])
    for m, values in pooled.items():
        metrics[f"{m}/metaworld-seen/k{k}"] = float(np.mean(values))


def evaluate_metaworld(
    cfg: Config, workdir: Path
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Pretrain REGENT and MT-BC on the pretraining tasks' scripted demonstrations (checkpoints
    saved in workdir), then score every method of MW_METHODS on the held-out tasks
    (score_metaworld). Returns flat metrics and per-episode arrays (tasks x episodes, task-major):
    '<method>/k<k>' normalised return and 'success/<method>/k<k>'."""
    family = "metaworld"
    workdir.mkdir(parents=True, exist_ok=True)
    demo_seed = 1_000 * cfg.seed + 3
    train_demos, metrics = [], {}
    for i, name in enumerate(pretraining_tasks(cfg.mw_train_tasks)):
        # the scripted policy acts env by env, so a small pool costs the same steps and loads
        # fewer MuJoCo models than a wide one
        pool = TaskPool(name, min(cfg.mw_train_demos, DEMO_POOL), cfg.mw_horizon)
        demos, rate = collect_demos(pool, cfg.mw_train_demos, cfg.demo_noise_mw, demo_seed + 7 * i)
        train_demos.append(demos)
        metrics[f"success_rate/demonstrator/metaworld-train/{name}"] = rate
    data, _ = pretraining_batch(train_demos, cfg.n_retrieved, cfg.normaliser)
    models = {"REGENT-untrained": new_model(data["obs"].shape[-1], family, cfg).eval()}
    models["REGENT"], losses = pretrain(
        data, family, cfg, True, workdir / f"{family}_REGENT.safetensors"
    )
    if losses:
        metrics[f"pretrain_loss_first/REGENT/{family}"] = float(np.mean(losses[:20]))
        metrics[f"pretrain_loss_last/REGENT/{family}"] = float(np.mean(losses[-20:]))
    pooled = Demos(*(np.concatenate([getattr(d, f) for d in train_demos]) for f in FIELDS))
    mtbc_path = workdir / f"{family}_MT-BC.safetensors"
    if cfg.resume and mtbc_path.exists():
        mtbc = load_state(baselines.MLPPolicy(OBS_DIM, ACT_DIM, False), mtbc_path)
    else:
        mtbc = baselines.fit_bc(pooled, ACT_DIM, cfg.mtbc_steps, 1e-3, 256, cfg.seed)
        save_state(mtbc, mtbc_path)
    scored, episodes = score_metaworld(cfg, models, mtbc)
    return {**metrics, **scored}, episodes


def reload_metaworld(cfg: Config, workdir: Path) -> tuple[dict, baselines.MLPPolicy]:
    """The REGENT and MT-BC checkpoints evaluate_metaworld saved (and the untrained control)."""
    models = {"REGENT-untrained": new_model(OBS_DIM, "metaworld", cfg).eval()}
    models["REGENT"] = load_state(
        new_model(OBS_DIM, "metaworld", cfg), workdir / "metaworld_REGENT.safetensors"
    )
    mtbc = baselines.MLPPolicy(OBS_DIM, ACT_DIM, False)
    return models, load_state(mtbc, workdir / "metaworld_MT-BC.safetensors")


def score_metaworld(
    cfg: Config, models: dict, mtbc: baselines.MLPPolicy
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Every method of MW_METHODS on the held-out tasks at each of cfg.mw_demo_counts, on the same
    seeded start states (BC from scratch is fitted here), R&P alone at cfg.mw_rp_demo_counts (the
    paper's R&P row), then the seen-task diagnosis."""
    metrics: dict[str, float] = {}
    demo_seed = 1_000 * cfg.seed + 3
    clocks: dict[str, dict] = {m: {} for m in MW_METHODS}
    scores: dict[str, list] = {}
    for ti, name in enumerate(HELD_OUT):
        pool = TaskPool(name, cfg.mw_eval_episodes, cfg.mw_horizon)
        eval_seed = 10**6 + 1_000 * cfg.seed + 100 * ti
        lo, scale = floor_and_oracle(pool, eval_seed, metrics, "metaworld")
        most = max((*cfg.mw_demo_counts, *cfg.mw_rp_demo_counts))  # the first k are the same
        demos, rate = collect_demos(pool, most, cfg.demo_noise_mw, demo_seed + 5_000 + ti)
        metrics[f"success_rate/demonstrator/metaworld/{name}"] = rate

        def record(method, k, ret, win, name=name, lo=lo, scale=scale):
            for key, v in (
                (f"{method}/k{k}", (ret - lo) / scale),
                (f"success/{method}/k{k}", win),
            ):
                scores.setdefault(key, []).append(v.astype(float))
                scores.setdefault(f"{key}@{name}", []).append(v.astype(float))

        def run(method, policy, pool=pool, eval_seed=eval_seed):
            return pool.run(policy, eval_seed, clocks[method])[:2]

        mt = run("MT-BC", lambda o, r: mtbc.act(o))  # ignores the demonstrations: run once
        for k in cfg.mw_demo_counts:
            few = take_episodes(demos, k)
            retriever = Retriever(few, cfg.normaliser, cfg.n_retrieved)
            bc = baselines.fit_bc(few, ACT_DIM, cfg.bc_steps, 1e-3, 64, cfg.seed)
            for m in ("REGENT", "REGENT-untrained"):
                act = regent_policy(models[m], retriever, cfg.n_retrieved, True, cfg)
                record(m, k, *run(m, lambda o, r, act=act: act(o, r, [])))
            record("R&P", k, *run("R&P", lambda o, r, rt=retriever: rt.rp_action(o)))
            record("BC-scratch", k, *run("BC-scratch", lambda o, r, bc=bc: bc.act(o)))
            record("MT-BC", k, *mt)
        for k in sorted(set(cfg.mw_rp_demo_counts) - set(cfg.mw_demo_counts)):
            retriever = Retriever(take_episodes(demos, k), cfg.normaliser, cfg.n_retrieved)
            record("R&P", k, *run("R&P", lambda o, r, rt=retriever: rt.rp_action(o)))
    seen_tasks_check(cfg, models["REGENT"], metrics)
    episodes = {k: np.concatenate(v) for k, v in scores.items()}
    for key, v in episodes.items():
        if key.startswith("success/"):
            _, method, rest = key.split("/", 2)
            k, _, task = rest.partition("@")
            metrics[f"success_rate/{method}/metaworld{'/' + task if task else ''}/{k}"] = float(
                v.mean()
            )
        else:
            method, rest = key.split("/", 1)
            k, _, task = rest.partition("@")
            metrics[f"{method}/metaworld{'/' + task if task else ''}/{k}"] = float(v.mean())
    for m, c in clocks.items():
        metrics[f"env_steps_per_s/{m}/metaworld"] = c["steps"] / c["seconds"]
    return metrics, {k: v for k, v in episodes.items() if "@" not in k}


def plot_metaworld(tables: dict, ks: list[int]):
    """Per held-out task: normalised return of each method at the largest count (scripted
    expert = 1, random = 0), beside the paper's REGENT and R&P with 100 demonstrations."""
    import matplotlib.pyplot as plt

    tasks = [t for t in tables["tasks"] if t != "all"]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    width = 0.8 / len(MW_METHODS)
    for i, m in enumerate(MW_METHODS):
        v = [tables["tasks"][t][f"{m}/k{ks[-1]}"]["normalized_return"] for t in tasks]
        ax.bar(np.arange(len(tasks)) + i * width, v, width, label=m)
    for j, t in enumerate(tasks):
        paper = tables["tasks"][t]["paper (REGENT, R&P), 100 demos"]
        ax.plot([j, j + 0.8], [paper[0]] * 2, "k-", lw=1)
        ax.plot([j, j + 0.8], [paper[1]] * 2, "k:", lw=1)
    ax.set_xticks(np.arange(len(tasks)) + 0.4, [t[:-3] for t in tasks])
    ax.set_ylabel(f"normalised return, {ks[-1]} demos")
    ax.set_title("Meta-World held-out tasks (lines: the paper's REGENT solid, R&P dotted)")
    ax.legend(fontsize=7, ncol=3)
    return fig
