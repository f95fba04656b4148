"""train_and_evaluate(cfg, workdir) -> metrics: every estimator against its ground truth, one seed.

Metric keys are "<method>|<quantity>": variance ratios (mean predictive variance at the test
inputs over the NNGP's) and relative errors against the ground truth of the same posterior.
Experiments: E1 linear nets in the linear-width regime (exact quadrature; the paper's Figure 1,
Eq. 3 against Eq. 4), E2 ReLU nets on images (NUTS), E3 ReLU nets in the sublinear-width regime
(NUTS against BPKR and the sublinear estimator).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.diagnostics import effective_sample_size
from tqdm import tqdm

from . import data, kernels, renorm, samplers, sublinear
from .config import Config, validate
from .results import atomic_write_json

METHODS = (
    "exact",
    "bpkr",
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


def linear_problem(cfg: Config, p: int, seed: int):
    x, y, x_test = data.linear_teacher(
        p, cfg.n0, cfg.n_test, seed, cfg.teacher_scale, cfg.teacher_noise
    )
    return x, y, x_test, kernel_blocks(kernels.linear_nngp, x, x_test, cfg.s2)


def images(cfg: Config) -> tuple[np.ndarray, np.ndarray]:
    """MNIST from the idx files when both flags are given, else sklearn's digits."""
    if cfg.mnist_images:
        return data.load_mnist(cfg.mnist_images, cfg.mnist_labels)
    return data.load_digits_arrays()


def relu_problem(cfg: Config, seed: int):
    pixels, labels = images(cfg)
    x, y, x_test = data.image_regression(pixels, labels, cfg.relu_p, cfg.n_test, seed, 1.0)
    return x, y, x_test, kernel_blocks(kernels.relu_nngp, x, x_test, cfg.s2)


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


def linear_width(cfg: Config, seed: int, progress: Progress) -> dict[str, float]:
    """E1: BPKR (Eq. 4) and the MP integral estimator (Eq. 3) against exact quadrature."""
    _, y, _, blocks = linear_problem(cfg, cfg.p, seed)
    s2, t, ratio = cfg.s2, cfg.temperature, cfg.p / cfg.n0
    v_gp = nngp_mean_variance(blocks, y, s2, t)
    noise = (cfg.teacher_scale * cfg.teacher_noise) ** 2
    # Eq. 3 reads the target power from the data; the label-noise variance is the teacher's.
    signal_data = float(jnp.sum(y**2)) / cfg.p - noise
    out = {}
    for alpha in cfg.alphas:
        width = max(1, round(cfg.p / alpha))
        truth = float(jnp.mean(samplers.exact_linear_posterior(*blocks, y, width, s2, t)[1])) / v_gp
        u = renorm.bpkr_u(blocks[0], y, width, s2, t)
        bpkr = renorm.renormalised_variance_ratio(*blocks, y, u, s2, t)
        mp = {}
        for name, signal in (("mp_integral", signal_data), ("mp_population", cfg.teacher_scale**2)):
            u_mp = renorm.integral_u(ratio, cfg.p / width, s2, t, signal, noise)
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


def relu_width(cfg: Config, seed: int, progress: Progress) -> dict[str, float]:
    """E2: BPKR with the ReLU NNGP kernel (and its linearisation) against NUTS on images."""
    x, y, x_test, blocks = relu_problem(cfg, seed)
    s2, t = cfg.s2, cfg.relu_temperature
    v_gp = nngp_mean_variance(blocks, y, s2, t)
    k_lin = kernels.relu_nngp_linearised(x, s2) / s2
    out = {}
    for alpha in cfg.relu_alphas:
        width = max(1, round(cfg.relu_p / alpha))
        post = samplers.nuts_collapsed(
            seed, x, y, x_test, width, s2, t, cfg.nuts_warmup, cfg.nuts_samples
        )
        truth = float(jnp.mean(post.var)) / v_gp
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


def sublinear_relu(cfg: Config, seed: int, progress: Progress) -> dict[str, float]:
    """E3, the paper's sublinear setting (one ReLU layer, linear teacher, P / N0 = 5): NUTS
    against BPKR, the sublinear estimator, its untrained control and its Laplace ablation."""
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
    out = {}
    for width in cfg.sub_relu_widths:
        post = samplers.nuts_collapsed(
            seed, x, y, x_test, width, s2, t, cfg.sub_nuts_warmup, cfg.sub_nuts_samples
        )
        truth = float(jnp.mean(post.var)) / v_gp
        u = renorm.bpkr_u(blocks[0], y, width, s2, t)
        sub = sublinear.sublinear_estimate(seed, x, y, x_test, width, s2, t, cfg.sub_restarts)
        est = {
            "bpkr_relu": renorm.renormalised_variance_ratio(*blocks, y, u, s2, t),
            "sublinear": sub["estimator"] / v_gp_spectral,
            "sublinear_untrained": sub["untrained"] / v_gp_spectral,
            "sublinear_laplace": sub["laplace"] / v_gp,
            "nngp": 1.0,
        }
        out[f"nuts_relu|subrelu_ratio_n{width}"] = truth
        out[f"nuts_relu|subrelu_readout_share_n{width}"] = float(
            jnp.mean(post.within) / jnp.mean(post.var)
        )
        # Effective sample size of f(x*_0) along the chain (a single-chain mixing diagnostic).
        out[f"nuts_relu|subrelu_ess_n{width}"] = float(
            effective_sample_size(np.asarray(post.trace)[None])
        )
        for name, value in est.items():
            out[f"{name}|subrelu_ratio_n{width}"] = value
            out[f"{name}|subrelu_relerr_n{width}"] = relerr(value, truth)
            out[f"{name}|subrelu_logerr_n{width}"] = abs(float(np.log(value / truth)))
        progress.step(f"sublinear N={width}")
    return out


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Run E1-E3 for cfg.seed and return the flat metrics; writes workdir/config.json first."""
    validate(cfg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    total = len(cfg.alphas) + len(cfg.relu_alphas) + len(cfg.sub_relu_widths)
    try:
        device = jax.devices("gpu" if cfg.device == "cuda" else cfg.device)[0]
    except RuntimeError as exc:
        raise ValueError(f"device {cfg.device!r} is not available to JAX ({exc})") from exc
    progress = Progress(total, f"seed {cfg.seed}", cfg.quiet)
    try:
        with jax.default_device(device):
            metrics = linear_width(cfg, cfg.seed, progress)
            metrics |= relu_width(cfg, cfg.seed, progress)
            metrics |= sublinear_relu(cfg, cfg.seed, progress)
    finally:
        progress.close()
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(workdir: str | Path) -> dict[str, float]:
    """Read back the metrics a previous `train` wrote into workdir."""
    path = Path(workdir) / "metrics.json"
    if not path.exists():
        raise ValueError(f"no metrics.json in {workdir}; run `train --out {workdir}` first")
    return json.loads(path.read_text())
