"""train_and_evaluate(cfg, workdir) -> metrics: every estimator against its ground truth, one seed.

Metric keys are "<method>|<quantity>": variance ratios (mean predictive variance at the test
inputs over the NNGP's) and relative errors against the ground truth of the same posterior.
Experiments: E1 linear nets in the linear-width regime (exact quadrature; the paper's Figure 1,
Eq. 3 against Eq. 4), E2 ReLU nets on images (NUTS), E3 ReLU nets in the sublinear-width regime
(NUTS against BPKR and the sublinear estimator).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.diagnostics import effective_sample_size
from tqdm import tqdm

from . import data, kernels, renorm, samplers, sublinear
from .checkpoint import Networks, load_networks, save_networks
from .config import Config, validate
from .results import atomic_write_json, read_config, read_json

NETWORKS = "networks.safetensors"  # the sublinear estimator's trained networks, per width
METHODS = (
    "exact",
    "gibbs",
    "bpkr",
    "bpkr_legacy_s2",
    "mp_integral",
    "mp_population",
    "nngp",
    "nuts_relu",
    "bpkr_relu",
    "bpkr_relu_lin",
    "sublinear",
    "sublinear_untrained",
    "sublinear_laplace",
)


def kernel_blocks(nngp, x, x_test, s2):
    """Base kernel Kb = NNGP / s2 (so the NNGP is s2 Kb) on train, test-train, test diagonal.

    For linear nets Kb = K0 = s2 X X^T / N0 (renorm's convention); for ReLU nets Kb = E[phi phi].
    """
    return (
        nngp(x, x, s2) / s2,
        nngp(x_test, x, s2) / s2,
        jnp.diag(nngp(x_test, x_test, s2)) / s2,
    )


def nngp_mean_variance(blocks, y, s2, t) -> float:
    k_train, k_cross, k_diag = blocks
    return float(jnp.mean(kernels.gp_predict(s2 * k_train, s2 * k_cross, s2 * k_diag, y, t)[1]))


def linear_problem(cfg: Config, p: int, seed: int, s2: float | None = None):
    """The linear teacher's data and the base-kernel blocks at prior variance s2 (cfg.s2)."""
    x, y, x_test = data.linear_teacher(
        p, cfg.n0, cfg.n_test, seed, cfg.teacher_scale, cfg.teacher_noise
    )
    s2 = cfg.s2 if s2 is None else s2
    return x, y, x_test, kernel_blocks(kernels.linear_nngp, x, x_test, s2)


def images(cfg: Config) -> tuple[np.ndarray, np.ndarray]:
    """MNIST from the idx files when both flags are given, else sklearn's digits."""
    if cfg.mnist_images:
        return data.load_mnist(cfg.mnist_images, cfg.mnist_labels)
    return data.load_digits_arrays()


def relu_problem(cfg: Config, seed: int):
    pixels, labels = images(cfg)
    x, y, x_test = data.image_regression(pixels, labels, cfg.relu_p, cfg.n_test, seed, 1.0)
    return x, y, x_test, kernel_blocks(kernels.relu_nngp, x, x_test, cfg.s2)


def width_at(p: int, alpha: float) -> int:
    """The width N of load factor alpha = P / N (at least one unit)."""
    return max(1, round(p / alpha))


def relerr(estimate: float, truth: float) -> float:
    return abs(estimate - truth) / abs(truth)


class Progress:
    """A tqdm bar on a terminal; one line per finished step on a pipe or log file (unless quiet)."""

    def __init__(self, total: int, label: str, quiet: bool):
        self.tty, self.quiet, self.label = sys.stderr.isatty(), quiet, label
        self.bar = tqdm(total=total, desc=label, disable=quiet or not self.tty)
        self.start, self.done, self.total = time.perf_counter(), 0, total

    def step(self, what: str) -> None:
        self.done += 1
        self.bar.set_postfix_str(what)
        self.bar.update()
        if not self.quiet and not self.tty:
            seconds = time.perf_counter() - self.start
            print(
                f"[{self.label}] {self.done}/{self.total} {what} ({seconds:.0f} s)",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        self.bar.close()


class MissingTruth(ValueError):
    """metrics.json lacks a ground truth that eval needs."""


def ground_truth(saved: dict | None, key: str, compute) -> float:
    """The ground truth of one setting: computed now (train), or the value `train` saved in
    metrics.json (eval re-scores the estimators against it without re-running the samplers)."""
    if saved is None:
        return compute()
    if not isinstance(saved.get(key), int | float):
        raise MissingTruth(f"no ground truth {key!r}; run `train` again")
    return float(saved[key])


def linear_width(
    cfg: Config, seed: int, progress: Progress, saved: dict | None = None
) -> dict[str, float]:
    """E1: BPKR (Eq. 4) and the MP integral estimator (Eq. 3) against exact quadrature."""
    _, y, _, blocks = linear_problem(cfg, cfg.p, seed)
    s2, t, ratio = cfg.s2, cfg.temperature, cfg.p / cfg.n0
    v_gp = nngp_mean_variance(blocks, y, s2, t)
    noise = (cfg.teacher_scale * cfg.teacher_noise) ** 2
    # Eq. 3 reads the target power from the data; the label-noise variance is the teacher's.
    signal_data = float(jnp.sum(y**2)) / cfg.p - noise
    out = {}
    for alpha in cfg.alphas:
        width = width_at(cfg.p, alpha)

        def exact(width=width):
            return float(jnp.mean(samplers.exact_linear_posterior(*blocks, y, width, s2, t)[1]))

        truth = ground_truth(saved, f"exact|lin_ratio_a{alpha:g}", lambda: exact() / v_gp)
        u = renorm.bpkr_u(blocks[0], y, width, s2, t)
        bpkr = renorm.renormalised_variance_ratio(*blocks, y, u, s2, t)
        mp = {}
        for name, signal in (("mp_integral", signal_data), ("mp_population", cfg.teacher_scale**2)):
            # Eq. 3 reads alpha itself (no width): a wrong alpha -> N mapping moves Eq. 4 only
            u_mp = renorm.integral_u(ratio, alpha, s2, t, signal, noise)
            mp[name] = renorm.integral_variance_ratio(ratio, u_mp, s2, t)
        est = {"exact": truth, "bpkr": bpkr, "nngp": 1.0} | mp
        for name, value in est.items():
            out[f"{name}|lin_ratio_a{alpha:g}"] = value
            if name != "exact":
                out[f"{name}|lin_relerr_a{alpha:g}"] = relerr(value, truth)
            if name in ("mp_integral", "mp_population", "nngp"):
                # Eq. 3 against Eq. 4 (the paper's Figure 1): distance to the fixed point's ratio.
                out[f"{name}|lin_vs_fp_a{alpha:g}"] = relerr(value, bpkr)
        out[f"bpkr|lin_u_a{alpha:g}"] = u / s2
        progress.step(f"linear alpha={alpha:g}")
    return out


def linear_gibbs(
    cfg: Config, seed: int, progress: Progress, saved: dict | None = None
) -> dict[str, float]:
    """E1 against a full-parameter sampler: blocked Gibbs on (a, W), which never sees the base
    kernel or the readout-scale quadrature, at every prior variance in cfg.gibbs_s2s (s2 != 1,
    where a wrong power of s2 in the kernel shows). Also scored: the quadrature (BPKR is its
    mode), the NNGP floor, and BPKR with the old convention Kb = X X^T / N0 (a negative control)."""
    t = cfg.temperature
    out = {}
    for s2 in cfg.gibbs_s2s:
        x, y, x_test, blocks = linear_problem(cfg, cfg.p, seed, s2)
        legacy = kernel_blocks(kernels.linear_k0, x, x_test, s2)
        v_gp = nngp_mean_variance(blocks, y, s2, t)
        for alpha in cfg.gibbs_alphas:
            width = width_at(cfg.p, alpha)
            tag = f"s{s2:g}_a{alpha:g}"

            def gibbs(width=width, x=x, y=y, x_test=x_test, s2=s2, v_gp=v_gp):
                post = samplers.gibbs_linear(
                    seed, x, y, x_test, width, s2, t, cfg.gibbs_sweeps, cfg.burn_in
                )
                return float(jnp.mean(post.var)) / v_gp

            truth = ground_truth(saved, f"gibbs|gibbs_ratio_{tag}", gibbs)
            exact = samplers.exact_linear_posterior(*blocks, y, width, s2, t)[1]
            u_old = renorm.bpkr_u(legacy[0], y, width, s2, t)
            k_train, k_cross, k_diag = legacy
            old = kernels.gp_predict(u_old * k_train, u_old * k_cross, u_old * k_diag, y, t)[1]
            est = {
                "gibbs": truth,
                "bpkr": renorm.renormalised_variance_ratio(
                    *blocks, y, renorm.bpkr_u(blocks[0], y, width, s2, t), s2, t
                ),
                "exact": float(jnp.mean(exact)) / v_gp,
                "bpkr_legacy_s2": float(jnp.mean(old)) / v_gp,
                "nngp": 1.0,
            }
            for name, value in est.items():
                out[f"{name}|gibbs_ratio_{tag}"] = value
                if name != "gibbs":
                    out[f"{name}|gibbs_relerr_{tag}"] = relerr(value, truth)
            progress.step(f"gibbs s2={s2:g} alpha={alpha:g}")
    return out


def relu_width(
    cfg: Config, seed: int, progress: Progress, saved: dict | None = None
) -> dict[str, float]:
    """E2: BPKR with the ReLU NNGP kernel (and its linearisation) against NUTS on images."""
    x, y, x_test, blocks = relu_problem(cfg, seed)
    s2, t = cfg.s2, cfg.relu_temperature
    v_gp = nngp_mean_variance(blocks, y, s2, t)
    k_lin = kernels.relu_nngp_linearised(x, s2) / s2
    out = {}
    for alpha in cfg.relu_alphas:
        width = width_at(cfg.relu_p, alpha)

        def nuts(width=width):
            post = samplers.nuts_collapsed(
                seed, x, y, x_test, width, s2, t, cfg.nuts_warmup, cfg.nuts_samples
            )
            return float(jnp.mean(post.var)) / v_gp

        truth = ground_truth(saved, f"nuts_relu|relu_ratio_a{alpha:g}", nuts)
        u = renorm.bpkr_u(blocks[0], y, width, s2, t)
        u_lin = renorm.bpkr_u(k_lin, y, width, s2, t)
        est = {
            "nuts_relu": truth,
            "bpkr_relu": renorm.renormalised_variance_ratio(*blocks, y, u, s2, t),
            "bpkr_relu_lin": renorm.renormalised_variance_ratio(*blocks, y, u_lin, s2, t),
            "nngp": 1.0,
        }
        for name, value in est.items():
            out[f"{name}|relu_ratio_a{alpha:g}"] = value
            if name != "nuts_relu":
                out[f"{name}|relu_relerr_a{alpha:g}"] = relerr(value, truth)
        progress.step(f"relu alpha={alpha:g}")
    return out


def sublinear_relu(
    cfg: Config,
    seed: int,
    progress: Progress,
    saved: dict | None = None,
    networks: Networks | None = None,
) -> tuple[dict[str, float], Networks]:
    """E3, the paper's sublinear setting (one ReLU layer, linear teacher, P / N0 = 5): NUTS
    against BPKR, the sublinear estimator, its untrained control and its Laplace ablation.

    Returns the metrics and the estimator's networks; with `saved` and `networks` (eval) the
    NUTS ground truth and its diagnostics come from `saved` and no network is trained."""
    x, y, x_test = data.linear_teacher(
        cfg.sub_relu_p,
        cfg.sub_relu_n0,
        cfg.n_test,
        seed + 20_000,
        cfg.teacher_scale,
        cfg.teacher_noise,
    )
    blocks = kernel_blocks(kernels.relu_nngp, x, x_test, cfg.s2)
    s2, t = cfg.s2, cfg.relu_temperature
    v_gp = nngp_mean_variance(blocks, y, s2, t)
    lam_gp = np.linalg.eigvalsh(np.asarray(s2 * blocks[0]))
    v_gp_spectral = sublinear.spectral_fresh_variance([lam_gp], cfg.sub_relu_p, t)
    out, nets = {}, {}
    for width in cfg.sub_relu_widths:
        keys = [f"nuts_relu|subrelu_{q}_n{width}" for q in ("ratio", "readout_share", "ess")]
        if saved is None:
            post = samplers.nuts_collapsed(
                seed, x, y, x_test, width, s2, t, cfg.sub_nuts_warmup, cfg.sub_nuts_samples
            )
            truth = float(jnp.mean(post.var)) / v_gp
            # readout share; effective sample size of f(x*_0) (a single-chain mixing diagnostic)
            diagnostics = (
                float(jnp.mean(post.within) / jnp.mean(post.var)),
                float(effective_sample_size(np.asarray(post.trace)[None])),
            )
        else:
            truth, *diagnostics = (ground_truth(saved, k, None) for k in keys)
        if networks is None:
            nets[width] = sublinear.sublinear_networks(seed, x, y, width, s2, t, cfg.sub_restarts)
        else:
            nets[width] = networks[width]
        u = renorm.bpkr_u(blocks[0], y, width, s2, t)
        sub = sublinear.estimate_from_networks(*nets[width], x, y, x_test, s2, t)
        est = {
            "bpkr_relu": renorm.renormalised_variance_ratio(*blocks, y, u, s2, t),
            "sublinear": sub["estimator"] / v_gp_spectral,
            "sublinear_untrained": sub["untrained"] / v_gp_spectral,
            "sublinear_laplace": sub["laplace"] / v_gp,
            "nngp": 1.0,
        }
        out |= dict(zip(keys, (truth, *diagnostics), strict=True))
        for name, value in est.items():
            out[f"{name}|subrelu_ratio_n{width}"] = value
            out[f"{name}|subrelu_relerr_n{width}"] = relerr(value, truth)
            out[f"{name}|subrelu_logerr_n{width}"] = abs(float(np.log(value / truth)))
        progress.step(f"sublinear N={width}")
    return out, nets


def jax_device(cfg: Config):
    """The JAX device of cfg.device (cpu, cuda, cuda:N; the CLI has resolved auto)."""
    kind, _, index = cfg.device.partition(":")
    try:
        return jax.devices("gpu" if kind == "cuda" else kind)[int(index or 0)]
    except (RuntimeError, IndexError) as exc:
        raise ValueError(f"device {cfg.device!r} is not available to JAX ({exc})") from exc


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Run E1-E3 for cfg.seed and return the flat metrics; writes workdir/config.json first,
    then the sublinear estimator's networks (networks.safetensors) and metrics.json."""
    validate(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    total = len(cfg.alphas) + len(cfg.gibbs_s2s) * len(cfg.gibbs_alphas)
    total += len(cfg.relu_alphas) + len(cfg.sub_relu_widths)
    device = jax_device(cfg)
    progress = Progress(total, f"seed {cfg.seed}", cfg.quiet)
    try:
        with jax.default_device(device):
            metrics = linear_width(cfg, cfg.seed, progress)
            metrics |= linear_gibbs(cfg, cfg.seed, progress)
            metrics |= relu_width(cfg, cfg.seed, progress)
            sub, nets = sublinear_relu(cfg, cfg.seed, progress)
            metrics |= sub
    finally:
        progress.close()
    save_networks(workdir / NETWORKS, nets)
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(cfg: Config, workdir: str | Path) -> dict:
    """Re-score a finished run: the estimators again (BPKR, Eq. 3, and the sublinear estimator on
    the networks `train` saved in networks.safetensors) against the ground truths `train` saved
    in metrics.json (quadrature and NUTS, not re-run). Returns {"metrics": the flat metrics,
    "max_abs_diff_vs_train": their largest distance to metrics.json's} (0 for a deterministic run).
    The run's config.json sets the experiment; `cfg` (the command line's) only the device.
    """
    workdir = Path(workdir)
    run = read_config(workdir / "config.json", Config, validate)
    saved = read_json(workdir / "metrics.json", "metrics file")
    nets = load_networks(workdir / NETWORKS, run.sub_relu_widths, run.sub_restarts)
    progress = Progress(0, "eval", True)
    try:
        with jax.default_device(jax_device(cfg)):
            metrics = linear_width(run, run.seed, progress, saved)
            metrics |= linear_gibbs(run, run.seed, progress, saved)
            metrics |= relu_width(run, run.seed, progress, saved)
            metrics |= sublinear_relu(run, run.seed, progress, saved, nets)[0]
    except MissingTruth as exc:
        raise ValueError(f"{workdir / 'metrics.json'}: {exc}") from None
    diff = [abs(v - saved[k]) for k, v in metrics.items() if isinstance(saved.get(k), int | float)]
    return {"max_abs_diff_vs_train": max(diff, default=0.0), "metrics": metrics}
