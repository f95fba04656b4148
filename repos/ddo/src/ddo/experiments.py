"""The 2-D experiments of one seed, and the benchmark's validation tuning.

* Soft tilt (cfg.objective, cfg.beta; DPO at beta = 1): dual averaging (phase 1), DDO's
  h-transform sampler with the exact and with the learned reference score, Diffusion-DPO
  fine-tuning of the same learned score, the learned reference itself, ULA / MALA, importance
  resampling, the reference, and rows of exact draws that measure the sample-based L estimator.
  Every learned-score sampler draws `learned_samples` points with `learned_sde_steps` steps.
* Hard tilt (cfg.hard_objective, cfg.hard_beta; RLHF at beta = 1, where q_hat puts most of its
  mass on the target mode): DA, the exact-score h-transform sampler, ULA / MALA started from
  reference samples, and ULA started at its own target (negative control).
* Exact DA on the grid (no sampling, no network) for both c_k schedules, and with flipped
  preferences (negative control of the "L falls over the DA loops" claim).

Metric keys are "<method>/<metric>"; hard-tilt methods are prefixed "Hard tilt: ".
"""

from __future__ import annotations

import functools
import sys
import time

import torch
from tqdm import tqdm

from . import baselines, evaluation
from .config import Config
from .dual_averaging import dual_averaging, grid_dual_averaging
from .h_transform import h_transform_sample, reverse_sde, simulated_posterior, time_grid
from .objectives import pairwise_dpo_loss, preference_prob, reward
from .reference import Mixture, marginal_score, ring_mixture, sample_posterior

HARD = "Hard tilt: "
LEARNED = ("DDO (learned score)", "Diffusion-DPO", "Learned reference")


def problem(cfg: Config) -> tuple[Mixture, callable]:
    """The reference mixture and the oracle reward (shared by both problems)."""
    mix = ring_mixture(cfg.n_modes, cfg.radius, cfg.sigma)
    target = mix.means[cfg.target_mode]
    return mix, functools.partial(reward, target=target, temperature=cfg.pref_temperature)


def objective_of(cfg: Config, hard: bool = False) -> tuple[str, float]:
    return (cfg.hard_objective, cfg.hard_beta) if hard else (cfg.objective, cfg.beta)


def optimum(cfg: Config, hard: bool = False) -> tuple[evaluation.Grid, torch.Tensor]:
    """The grid and q_hat; independent of the seed, so cached across the benchmark's seeds.

    The cache key is the problem's fields only (keyed on the whole Config, every seed missed it).
    """
    fields = ("n_modes", "radius", "sigma", "target_mode", "pref_temperature", "grid_step")
    return _optimum(*(getattr(cfg, k) for k in fields), *objective_of(cfg, hard), cfg.beta_d)


@functools.lru_cache(maxsize=8)
def _optimum(n_modes, radius, sigma, target_mode, pref_temperature, grid_step, kind, beta, beta_d):
    cfg = Config(
        n_modes=n_modes, radius=radius, sigma=sigma, target_mode=target_mode,
        pref_temperature=pref_temperature,
    )  # fmt: skip
    mix, reward_fn = problem(cfg)
    grid = evaluation.make_grid(mix, reward_fn, grid_step)
    return grid, evaluation.optimal_distribution(grid, kind, beta, beta_d)


def labelled_pairs(mix: Mixture, reward_fn, n: int, g: torch.Generator):
    """n pairs from p_ref x p_ref, winner drawn from the Bradley-Terry oracle."""
    x1, x2 = mix.sample(n, g), mix.sample(n, g)
    first_wins = torch.rand(n, generator=g) < preference_prob(reward_fn(x1), reward_fn(x2))
    keep = first_wins[:, None]
    return torch.where(keep, x1, x2), torch.where(keep, x2, x1)


def score_samples(cfg, hard, mix, grid, q_hat, q_target, x, g, w2=True) -> dict[str, float]:
    """Mode-weight TV to q_hat and to DA's target q_K, L(q) of the fitted density, target-mode
    mass and (optionally) W2 to q_hat."""
    kind, beta = objective_of(cfg, hard)
    weights = evaluation.mode_weights_samples(mix, x)
    q_est = evaluation.sample_distribution(grid, mix, x)
    out = {
        "tv_modes": evaluation.total_variation(
            weights, evaluation.mode_weights_grid(grid, mix, q_hat)
        ),
        "tv_to_target": evaluation.total_variation(
            weights, evaluation.mode_weights_grid(grid, mix, q_target)
        ),
        "objective": evaluation.objective(grid, q_est, kind, beta, cfg.beta_d),
        "target_mass": float(weights[cfg.target_mode]),
    }
    if w2:
        n = min(1000, x.shape[0])
        out["w2"] = evaluation.wasserstein2(x[:n], evaluation.sample_grid(grid, q_hat, n, g))
    return out


def run_dual_averaging(cfg, hard, mix, reward_fn, grid, g, fit_lr=None):
    """Phase 1 with the exact objective L(q_k) and the held-out DPO loss of every loop."""
    kind, beta = objective_of(cfg, hard)
    x_w, x_l = labelled_pairs(mix, reward_fn, 4096, g)
    bar = tqdm(
        total=cfg.da_loops, desc="dual averaging", disable=cfg.quiet or not sys.stderr.isatty()
    )
    potentials = dual_averaging(
        kind, lambda n: mix.sample(n, g), reward_fn, cfg.da_loops, cfg.n_ref, beta,
        cfg.beta_prime, cfg.beta_d, cfg.fit_steps, cfg.fit_lr if fit_lr is None else fit_lr,
        cfg.hidden, cfg.da_schedule, on_loop=lambda k, f: bar.update(1),
    )  # fmt: skip
    bar.close()
    out = {}
    for k, f in enumerate(potentials):
        q_k = evaluation.potential_distribution(grid, f)
        out[f"objective_loop{k}"] = evaluation.objective(grid, q_k, kind, beta, cfg.beta_d)
        with torch.no_grad():
            out[f"heldout_dpo_loop{k}"] = float(pairwise_dpo_loss(f(x_w), f(x_l), cfg.beta_d))
    return potentials, out


def learned_ddo(cfg, score_net, f, g) -> torch.Tensor:
    """DDO's h-transform sampler with the learned score and simulated posterior draws."""
    return h_transform_sample(
        score_net.score, simulated_posterior(score_net.score, cfg.inner_steps, cfg.t_min, g), f,
        cfg.learned_samples, 2, time_grid(cfg.t_max, cfg.t_min, cfg.learned_sde_steps),
        cfg.mc_draws, g,
    )  # fmt: skip


def learned_sde(cfg, score, g) -> torch.Tensor:
    """A plain reverse SDE with `score`, at the learned samplers' sample count and steps."""
    times = time_grid(cfg.t_max, cfg.t_min, cfg.learned_sde_steps)
    return reverse_sde(score, torch.randn(cfg.learned_samples, 2, generator=g), times, g)


def exact_ddo(cfg: Config, mix: Mixture, f, g: torch.Generator) -> torch.Tensor:
    """DDO's h-transform sampler with the exact reference score and exact posterior draws."""
    return h_transform_sample(
        lambda x, t: marginal_score(mix, x, t), lambda x, t, m: sample_posterior(mix, x, t, m, g),
        f, cfg.n_eval, 2, time_grid(cfg.t_max, cfg.t_min, cfg.sde_steps), cfg.mc_draws, g,
    )  # fmt: skip


def run_soft(cfg: Config, g: torch.Generator):
    """Every sampler of the soft (DPO) tilt; returns (metrics, samples, the trained models: the
    last potential f_K, the learned reference score and its Diffusion-DPO fine-tune)."""
    mix, reward_fn = problem(cfg)
    grid, q_hat = optimum(cfg)
    kind, beta = objective_of(cfg)
    metrics = {
        "q_hat/objective": evaluation.objective(grid, q_hat, kind, beta, cfg.beta_d),
        "q_hat/target_mass": float(evaluation.mode_weights_grid(grid, mix, q_hat)[cfg.target_mode]),
        "Reference/objective_exact": evaluation.objective(grid, grid.p, kind, beta, cfg.beta_d),
    }
    potentials, loops = run_dual_averaging(cfg, False, mix, reward_fn, grid, g)
    metrics.update({f"DDO (exact score)/{k}": v for k, v in loops.items()})
    f = potentials[-1]
    q_k = evaluation.potential_distribution(grid, f)

    def exact_score(x, t):
        return marginal_score(mix, x, t)

    samples, seconds = {}, {}
    start = time.perf_counter()
    samples["DDO (exact score)"] = exact_ddo(cfg, mix, f, g)
    seconds["DDO (exact score)"] = time.perf_counter() - start
    score_net = baselines.train_dsm(
        lambda n: mix.sample(n, g), cfg.dsm_steps, cfg.batch, cfg.dsm_lr, cfg.t_min, cfg.t_max, g,
        cfg.dsm_hidden,
    )  # fmt: skip
    start = time.perf_counter()
    samples["DDO (learned score)"] = learned_ddo(cfg, score_net, f, g)
    seconds["DDO (learned score)"] = time.perf_counter() - start
    samples["Learned reference"] = learned_sde(cfg, score_net.score, g)
    x_w, x_l = labelled_pairs(mix, reward_fn, cfg.n_ref, g)
    ddpo = baselines.diffusion_dpo(
        score_net, x_w, x_l, cfg.da_loops * cfg.fit_steps, cfg.batch, cfg.ddpo_lr, cfg.ddpo_beta,
        cfg.t_min, cfg.t_max, g,
    )  # fmt: skip
    samples["Diffusion-DPO"] = learned_sde(cfg, ddpo.score, g)
    metrics.update(langevin_rows(cfg, mix, f, mix.sample(cfg.n_eval, g), g, samples, ""))
    start = time.perf_counter()
    pool = mix.sample(cfg.ir_pool, g)
    with torch.no_grad():
        samples["Importance resampling"], ess = baselines.importance_resample(
            pool, -f(pool), cfg.n_eval, g
        )
    seconds["Importance resampling"] = time.perf_counter() - start
    samples["Reference"] = mix.sample(cfg.n_eval, g)
    estimator = estimator_rows(cfg, mix, grid, q_hat, q_k, exact_score, g)
    for name, x in {**samples, **estimator}.items():
        scored = score_samples(cfg, False, mix, grid, q_hat, q_k, x, g, w2=name in samples)
        metrics.update({f"{name}/{k}": v for k, v in scored.items()})
    for name in estimator:
        truth = (
            metrics["q_hat/objective"] if "q_hat" in name else metrics["Reference/objective_exact"]
        )
        metrics[f"{name}/estimator_bias"] = metrics[f"{name}/objective"] - truth
    metrics["DDO (exact score)/tv_modes_target_to_q_hat"] = evaluation.total_variation(
        evaluation.mode_weights_grid(grid, mix, q_k), evaluation.mode_weights_grid(grid, mix, q_hat)
    )
    metrics["DDO (exact score)/seconds_per_sample"] = seconds["DDO (exact score)"] / cfg.n_eval
    metrics["DDO (learned score)/seconds_per_sample"] = (
        seconds["DDO (learned score)"] / cfg.learned_samples
    )
    metrics["Importance resampling/ess"] = ess
    metrics["Importance resampling/pool"] = float(cfg.ir_pool)
    metrics["Importance resampling/seconds_per_effective_sample"] = seconds[
        "Importance resampling"
    ] / min(ess, cfg.n_eval)
    return metrics, samples, {"soft_potential": f, "score_net": score_net, "diffusion_dpo": ddpo}


def estimator_rows(cfg, mix, grid, q_hat, q_k, exact_score, g) -> dict[str, torch.Tensor]:
    """Exact draws and exact-score SDE runs of known distributions: the L estimator's bias at
    both sample counts and both step counts, and the TV noise floor at the learned count."""
    n_l, n = cfg.learned_samples, cfg.n_eval
    times = time_grid(cfg.t_max, cfg.t_min, cfg.sde_steps)
    return {
        "Reference draws (n_eval)": mix.sample(n, g),
        "Reference draws (learned n)": mix.sample(n_l, g),
        "Reference, exact-score SDE (sde_steps)": reverse_sde(
            exact_score, torch.randn(n, 2, generator=g), times, g
        ),
        "Reference, exact-score SDE (learned steps, n)": learned_sde(cfg, exact_score, g),
        "q_hat draws (n_eval)": evaluation.sample_grid(grid, q_hat, n, g).float(),
        "q_hat draws (learned n)": evaluation.sample_grid(grid, q_hat, n_l, g).float(),
        "DA target draws (learned n)": evaluation.sample_grid(grid, q_k, n_l, g).float(),
    }


def langevin_rows(cfg, mix, f, start, g, samples, prefix) -> dict[str, float]:
    """Short-run ULA and MALA on log p_ref - f from `start`; the mass each moves between modes."""

    def log_target(x):
        return mix.log_prob(x) - f(x)

    moved = {}
    for name, mh in (("ULA", False), ("MALA", True)):
        x = baselines.langevin(log_target, start, cfg.langevin_steps, cfg.langevin_step, g, mh)
        samples[prefix + name] = x
        moved[f"{prefix}{name}/mass_moved"] = evaluation.total_variation(
            evaluation.mode_weights_samples(mix, start), evaluation.mode_weights_samples(mix, x)
        )
    return moved


def run_hard(cfg: Config, g: torch.Generator):
    """The hard tilt: DDO's exact-score sampler against short-run Langevin on the same target;
    returns (metrics, samples, {"hard_potential": f_K})."""
    mix, reward_fn = problem(cfg)
    grid, q_hat = optimum(cfg, hard=True)
    kind, beta = objective_of(cfg, hard=True)
    potentials, loops = run_dual_averaging(cfg, True, mix, reward_fn, grid, g)
    f = potentials[-1]
    q_k = evaluation.potential_distribution(grid, f)
    samples = {HARD + "DDO (exact score)": exact_ddo(cfg, mix, f, g)}
    metrics = {
        f"{HARD}q_hat/objective": evaluation.objective(grid, q_hat, kind, beta, cfg.beta_d),
        f"{HARD}q_hat/target_mass": float(
            evaluation.mode_weights_grid(grid, mix, q_hat)[cfg.target_mode]
        ),
        f"{HARD}DDO (exact score)/objective_loop{cfg.da_loops}": loops[
            f"objective_loop{cfg.da_loops}"
        ],
    }
    metrics.update(langevin_rows(cfg, mix, f, mix.sample(cfg.n_eval, g), g, samples, HARD))
    at_target = evaluation.sample_grid(grid, q_k, cfg.n_eval, g).float()
    samples[HARD + "ULA from its target"] = baselines.langevin(
        lambda x: mix.log_prob(x) - f(x), at_target, cfg.langevin_steps, cfg.langevin_step, g
    )
    samples[HARD + "Reference"] = mix.sample(cfg.n_eval, g)
    for name, x in samples.items():
        scored = score_samples(cfg, True, mix, grid, q_hat, q_k, x, g, w2=False)
        metrics.update({f"{name}/{k}": v for k, v in scored.items()})
    return metrics, samples, {"hard_potential": f}


def rescore(cfg: Config, models: dict, g: torch.Generator) -> dict[str, float]:
    """Fresh samples from the models a run saved (run_soft's and run_hard's third return), scored
    as in the run: DDO with the exact and the learned score, Diffusion-DPO, the learned reference
    and importance resampling on the soft tilt, DDO on the hard tilt. DA's own target q_K and
    its distance to q_hat follow from f_K alone, so they equal the run's numbers exactly."""
    mix, _ = problem(cfg)
    out: dict[str, float] = {}
    for hard, f in ((False, models["soft_potential"]), (True, models["hard_potential"])):
        grid, q_hat = optimum(cfg, hard)
        kind, beta = objective_of(cfg, hard)
        q_k = evaluation.potential_distribution(grid, f)
        prefix = HARD if hard else ""
        out[f"{prefix}DDO (exact score)/objective_loop{cfg.da_loops}"] = evaluation.objective(
            grid, q_k, kind, beta, cfg.beta_d
        )
        samples = {"DDO (exact score)": exact_ddo(cfg, mix, f, g)}
        if not hard:
            out["DDO (exact score)/tv_modes_target_to_q_hat"] = evaluation.total_variation(
                evaluation.mode_weights_grid(grid, mix, q_k),
                evaluation.mode_weights_grid(grid, mix, q_hat),
            )
            samples["DDO (learned score)"] = learned_ddo(cfg, models["score_net"], f, g)
            samples["Diffusion-DPO"] = learned_sde(cfg, models["diffusion_dpo"].score, g)
            samples["Learned reference"] = learned_sde(cfg, models["score_net"].score, g)
            pool = mix.sample(cfg.ir_pool, g)
            with torch.no_grad():
                samples["Importance resampling"] = baselines.importance_resample(
                    pool, -f(pool), cfg.n_eval, g
                )[0]
        for name, x in samples.items():
            scored = score_samples(cfg, hard, mix, grid, q_hat, q_k, x, g, w2=not hard)
            out.update({f"{prefix}{name}/{k}": v for k, v in scored.items()})
    return out


def grid_da_rows(cfg: Config) -> dict[str, float]:
    """Exact DA on the grid: L(q_k) and TV(q_k, q_hat) per loop for both schedules, and L(q_k)
    (under the true preferences) of DA fed flipped preferences."""
    mix, _ = problem(cfg)
    grid, q_hat = optimum(cfg)
    kind, beta = objective_of(cfg)
    w_hat = evaluation.mode_weights_grid(grid, mix, q_hat)
    runs = {
        "Grid DA (linear c_k)": ("linear", grid.r),
        "Grid DA (constant c_k)": ("constant", grid.r),
        "Grid DA (flipped preferences)": (cfg.da_schedule, -grid.r),
    }
    out = {}
    for name, (schedule, r) in runs.items():
        qs = grid_dual_averaging(
            kind, grid.p, r, cfg.grid_da_loops, beta, cfg.beta_prime, cfg.beta_d, schedule
        )
        for k, q in enumerate(qs):
            out[f"{name}/objective_loop{k}"] = evaluation.objective(grid, q, kind, beta, cfg.beta_d)
            out[f"{name}/tv_to_q_hat_loop{k}"] = evaluation.total_variation(
                evaluation.mode_weights_grid(grid, mix, q), w_hat
            )
    return out


def tune(cfg: Config) -> dict:
    """Equal tuning budget on the validation seed: len(fit_lrs) DDO runs, len(ddpo_betas)
    Diffusion-DPO runs, each scored by the same sample-based L of `learned_samples` points
    drawn with the same learned score and `learned_sde_steps` steps. Returns the grid record."""
    g = torch.Generator().manual_seed(cfg.val_seed)
    torch.manual_seed(cfg.val_seed)
    mix, reward_fn = problem(cfg)
    grid, q_hat = optimum(cfg)
    score_net = baselines.train_dsm(
        lambda n: mix.sample(n, g), cfg.dsm_steps, cfg.batch, cfg.dsm_lr, cfg.t_min, cfg.t_max, g,
        cfg.dsm_hidden,
    )  # fmt: skip

    def val_objective(x, q_target):
        return score_samples(cfg, False, mix, grid, q_hat, q_target, x, g, w2=False)["objective"]

    ddo = []
    for lr in cfg.fit_lrs:
        f = run_dual_averaging(cfg, False, mix, reward_fn, grid, g, fit_lr=lr)[0][-1]
        q_k = evaluation.potential_distribution(grid, f)
        ddo.append(val_objective(learned_ddo(cfg, score_net, f, g), q_k))
    x_w, x_l = labelled_pairs(mix, reward_fn, cfg.n_ref, g)
    dpo = []
    for b in cfg.ddpo_betas:
        net = baselines.diffusion_dpo(
            score_net, x_w, x_l, cfg.da_loops * cfg.fit_steps, cfg.batch, cfg.ddpo_lr, b,
            cfg.t_min, cfg.t_max, g,
        )  # fmt: skip
        dpo.append(val_objective(learned_sde(cfg, net.score, g), q_hat))
    criterion = (
        f"sample-based L(q) of {cfg.learned_samples} draws, {cfg.learned_sde_steps} SDE steps, "
        f"learned score of the validation seed"
    )
    return {
        "validation_seed": cfg.val_seed,
        "criterion": criterion,
        "DDO fit_lr": _pick(cfg.fit_lrs, ddo),
        "Diffusion-DPO ddpo_beta": _pick(cfg.ddpo_betas, dpo),
    }


def _pick(grid: tuple[float, ...], values: list[float]) -> dict:
    best = min(range(len(values)), key=values.__getitem__)
    return {"grid": list(grid), "validation_objective": values, "chosen": grid[best]}
