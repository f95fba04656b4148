"""Quick benchmark: TRENDy, its measurement ablations and SINDyCP over seeds; claims from metrics.

Per seed one Brusselator data set is simulated and shared by every run: TRENDy (scattering) at
each noise level, with SINDyCP fitted on the same reduced states, plus TRENDy with the mean-only
and the Fourier-power measurement at noise 0 (no SINDyCP fit there). With `gray_scott_study`
(the full preset) the same runs repeat on a Gray-Scott data set. The kymatio cross-check is timed
on one batch.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import torch

from . import data
from .config import Config, gray_scott_config
from .results import atomic_write_json, claim, results_document, save_figure, summarize
from .scattering import averaged_scattering, kymatio_averaged
from .train import train_and_evaluate

PAPER = "trendy"
NOISE_LEVELS = (0.0, 0.1, 0.3)
# Thresholds of the claims.
MSE_RATIO, HOPF_TOL, TURING_TOL, MIN_ACCURACY = 2.0, 0.10, 0.15, 0.85
SCORES = ("accuracy", "f1", "hopf_rel_err", "turing_rel_err")


def kymatio_check(cfg: Config, batch: int = 64) -> dict:
    """Time ours and kymatio's Scattering2D on one batch of fields; report the largest gap."""
    x = torch.randn(batch, cfg.grid, cfg.grid, generator=torch.Generator().manual_seed(cfg.seed))
    averaged_scattering(x[:1], cfg.scattering_j, cfg.scattering_l)  # build the filters once
    start = time.perf_counter()
    ours = averaged_scattering(x, cfg.scattering_j, cfg.scattering_l)
    ours_s = time.perf_counter() - start
    kymatio_averaged(x[:1], cfg.scattering_j, cfg.scattering_l)
    start = time.perf_counter()
    ref = kymatio_averaged(x, cfg.scattering_j, cfg.scattering_l)
    peer_s = time.perf_counter() - start
    gap = float((ours - ref).abs().max())
    rel = float((ours - ref).norm() / ref.norm())
    return {
        "id": f"scattering-{batch}x{cfg.grid}x{cfg.grid}",
        "what": f"averaged scattering J={cfg.scattering_j} L={cfg.scattering_l} of {batch} "
        f"{cfg.grid}x{cfg.grid} fields (filters built beforehand); max |ours - kymatio| = "
        f"{gap:.4f}, relative L2 gap {rel:.3f}",
        "ours_s": round(ours_s, 4),
        "peer": "kymatio 0.3.0 Scattering2D (torch frontend)",
        "peer_s": round(peer_s, 4),
        "ratio": round(ours_s / peer_s, 3),
        "max_abs_diff": gap,
        "relative_l2_diff": rel,
    }


def run_seed(cfg: Config, seed: int) -> dict[str, dict[str, float]]:
    """All runs of one seed, keyed by method name (Gray-Scott ones suffixed -GrayScott)."""
    base = dataclasses.replace(cfg, seed=seed)
    runs = system_runs(base, "")
    if cfg.gray_scott_study:
        runs |= system_runs(gray_scott_config(base), "-GrayScott")
    return runs


def system_runs(base: Config, suffix: str) -> dict[str, dict[str, float]]:
    """TRENDy and SINDyCP at each noise level, then the mean-only and Fourier measurements at
    noise 0, all on one simulated data set (simulated once, measured once per run)."""
    dataset = data.make_dataset(base)
    folder = Path(base.out) / f"seed{base.seed}" / base.system
    scores = SCORES if base.system == "brusselator" else ()
    trendy, sindy = f"TRENDy{suffix}", f"SINDyCP{suffix}"
    runs: dict[str, dict[str, float]] = {trendy: {}, sindy: {}}
    for sigma in NOISE_LEVELS:
        run = dataclasses.replace(base, noise=sigma)
        m = train_and_evaluate(run, folder / f"scattering-noise{sigma}", dataset)
        for key, method in (("test", trendy), ("sindycp_test", sindy)):
            runs[method][f"test_mse_noise{sigma}"] = m[f"{key}_mse"]
            runs[method][f"test_nmse_noise{sigma}"] = m[f"{key}_nmse"]
        if sigma == 0.0:
            runs[trendy].update({k: m[k] for k in scores})
            if scores:
                runs[trendy]["majority_accuracy"] = m["majority_accuracy"]
    for meas in ("mean", "fourier"):
        run = dataclasses.replace(base, measurement=meas, sindycp=False)
        m = train_and_evaluate(run, folder / meas, dataset)
        runs[f"TRENDy-{meas}{suffix}"] = {k: m[k] for k in ("test_mse", "test_nmse", *scores)}
    return runs


def compute_claims(metrics: dict) -> list[dict]:
    """The issue's three claims, each decided by a threshold on measured means."""
    mean = {m: {k: v["mean"] for k, v in d.items()} for m, d in metrics.items()}
    ratios = {
        s: mean["SINDyCP"][f"test_mse_noise{s}"] / mean["TRENDy"][f"test_mse_noise{s}"]
        for s in NOISE_LEVELS
    }
    noisy = [s for s in NOISE_LEVELS if s >= 0.1]
    t = mean["TRENDy"]
    return [
        claim(
            "noise-robust-vs-sindycp",
            f"at noise sigma >= 0.1 TRENDy's test trajectory MSE is >= {MSE_RATIO}x lower than SINDyCP's",
            "qualitative: SINDyCP degrades with noise, TRENDy does not (Gray-Scott, paper Fig. 3)",
            "SINDyCP/TRENDy MSE ratio "
            + ", ".join(f"{ratios[s]:.2f} at sigma={s}" for s in NOISE_LEVELS),
            all(ratios[s] >= MSE_RATIO for s in noisy),
        ),
        claim(
            "bifurcation-lines",
            f"on held-out bands the predicted Hopf line is within {HOPF_TOL:.0%} of 1+A^2 and the "
            f"Turing onset within {TURING_TOL:.0%} of (1+A sqrt(Du/Dv))^2",
            "qualitative: learned Jacobian spectra locate both Brusselator lines in held-out regions",
            f"mean relative error Hopf {t['hopf_rel_err']:.3f}, Turing {t['turing_rel_err']:.3f}",
            t["hopf_rel_err"] <= HOPF_TOL and t["turing_rel_err"] <= TURING_TOL,
        ),
        claim(
            "regime-classification",
            f"regime accuracy from predicted final states >= {MIN_ACCURACY}, above the mean-only "
            "measurement and above always guessing the most common regime",
            "qualitative: scattering features separate pattern regimes that the mean cannot",
            f"accuracy {t['accuracy']:.3f} vs mean-only {mean['TRENDy-mean']['accuracy']:.3f}, "
            f"most common regime {t['majority_accuracy']:.3f}",
            t["accuracy"] >= MIN_ACCURACY
            and t["accuracy"] > mean["TRENDy-mean"]["accuracy"]
            and t["accuracy"] > t["majority_accuracy"],
        ),
    ]


def plot(metrics: dict, figures: Path) -> None:
    """MSE against noise for TRENDy and SINDyCP; normalised test MSE (comparable across
    measurements) and regime accuracy per measurement."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax3, ax2) = plt.subplots(1, 3, figsize=(13, 3.5))
    for name in ("TRENDy", "SINDyCP"):
        mu = [metrics[name][f"test_mse_noise{s}"]["mean"] for s in NOISE_LEVELS]
        sd = [metrics[name][f"test_mse_noise{s}"]["std"] for s in NOISE_LEVELS]
        ax1.errorbar(NOISE_LEVELS, mu, yerr=sd, marker="o", capsize=3, label=name)
    ax1.set(xlabel="noise sigma (relative)", ylabel="test trajectory MSE (PCA space)", yscale="log")
    ax1.legend()
    names = ("TRENDy", "TRENDy-mean", "TRENDy-fourier")
    keys = ("test_nmse_noise0.0", "test_nmse", "test_nmse")
    ax3.bar(names, [metrics[n][k]["mean"] for n, k in zip(names, keys, strict=True)],
            yerr=[metrics[n][k]["std"] for n, k in zip(names, keys, strict=True)], capsize=3)  # fmt: skip
    ax3.set(ylabel="test MSE / test variance (noise 0)", yscale="log")
    ax2.bar(names, [metrics[n]["accuracy"]["mean"] for n in names],
            yerr=[metrics[n]["accuracy"]["std"] for n in names], capsize=3)  # fmt: skip
    ax2.axhline(MIN_ACCURACY, color="k", ls="--", lw=1)
    ax2.set(ylabel="regime accuracy (held-out bands)", ylim=(0, 1))
    fig.tight_layout()
    save_figure(fig, figures / "quick_summary.png")
    plt.close(fig)


def run_bench(cfg: Config) -> dict:
    start = time.perf_counter()
    per_method: dict[str, dict[str, list[float]]] = {}
    for seed in cfg.seeds:
        for name, vals in run_seed(cfg, seed).items():
            for k, v in vals.items():
                per_method.setdefault(name, {}).setdefault(k, []).append(v)
    metrics = {m: {k: summarize(v) for k, v in d.items()} for m, d in per_method.items()}
    claims = compute_claims(metrics)
    performance = [kymatio_check(cfg)]
    plot(metrics, Path(cfg.results_dir) / "figures")
    doc = results_document(
        PAPER,
        cfg.name,
        list(cfg.seeds),
        metrics,
        claims,
        time.perf_counter() - start,
        cfg.device,
        performance,
    )
    atomic_write_json(Path(cfg.results_dir) / f"{cfg.name}.json", doc)
    return doc
