"""Smoke run of the entry point and the benchmark: artefacts, finite metrics, determinism."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil

import matplotlib.pyplot as plt
import numpy as np
import pytest

from bnn_renorm import renorm, samplers, train
from bnn_renorm.bench import figures
from bnn_renorm.cli import main
from bnn_renorm.config import PRESETS
from bnn_renorm.results import load_safetensors, save_safetensors
from bnn_renorm.train import evaluate, train_and_evaluate
from conftest import SHRINK


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["paper", "full"])
def test_larger_presets_run_at_tiny_size(preset, tiny, tmp_path):
    base = PRESETS[preset]
    small = {f.name: getattr(tiny, f.name) for f in dataclasses.fields(tiny) if f.name != "name"}
    cfg = dataclasses.replace(base, **(small | {"device": "cpu"}))
    assert cfg.name == preset and base.n0 == 500 and base.p == 200
    assert (base.sub_relu_p, base.sub_relu_n0, base.sub_relu_widths) == (200, 40, (2, 5, 10, 20))
    metrics = train_and_evaluate(cfg, tmp_path)
    assert all(math.isfinite(v) for v in metrics.values())


def test_paper_preset_names_its_figures_and_keeps_the_presets_sizes(readme_run, tmp_path):
    folder = readme_run.folder
    doc = json.loads((folder / "runs" / "quick" / "quick.json").read_text())
    cfg = dataclasses.replace(PRESETS["paper"], **{k: v for k, v in SHRINK.items()})
    made = figures(cfg, doc["metrics"])
    for fig in made.values():
        plt.close(fig)
    assert set(made) == {
        "paper-variance_ratio.png",
        "paper-sublinear.png",
    }
    paper = PRESETS["paper"]
    assert (paper.n0, paper.p, paper.sub_relu_p, paper.sub_relu_n0) == (500, 200, 200, 40)
    assert paper.sub_relu_widths == (2, 5, 10, 20) and paper.sub_nuts_warmup >= 400


def test_bench_schema_figures_and_determinism(readme_run):
    """The README run's bench output: schema, claims, figures; seed 0 reproduces `train`."""
    folder = readme_run.folder
    bench_run, train_run = folder / "runs" / "quick" / "seed0", folder / "runs" / "demo"
    assert json.loads((bench_run / "config.json").read_text())["p"] == SHRINK["p"]
    metrics = json.loads((bench_run / "metrics.json").read_text())
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    # same seed and sizes in two runs, same numbers; eval re-scores the saved networks exactly
    assert json.loads((train_run / "metrics.json").read_text()) == metrics
    assert evaluate(PRESETS["demo"], train_run) == {
        "max_abs_diff_vs_train": 0.0,
        "metrics": metrics,
    }
    doc = json.loads((folder / "runs" / "quick" / "quick.json").read_text())
    assert len(doc["metrics"]) >= 2 and len(doc["claims"]) == 5
    assert all(
        isinstance(c["negative_control"]["passes_the_same_check"], bool) for c in doc["claims"]
    )
    row = doc["performance"][0]
    assert row["unit"] == "effective samples/s" and row["ours_value"] > 0 and row["peer_value"] > 0
    assert doc["tuning"]["grid"] == {}
    assert {p.name for p in (folder / "runs" / "quick" / "figures").glob("*.png")} == {
        "variance_ratio.png",
        "sublinear.png",
    }


def quiet_progress():
    return train.Progress(0, "test", True)


def test_linear_width_runs_each_alpha_at_width_p_over_alpha(tiny):
    """E1's load factor is alpha = P / N: at each alpha, the exact posterior and BPKR's u are
    those of the width N = P / alpha, and a tiny alpha is the wide-network (NNGP) limit."""
    cfg = dataclasses.replace(tiny, alphas=(0.001, 0.5, 2.0, 6.0))  # P = 6: N = 6000, 12, 3, 1
    out = train.linear_width(cfg, 0, quiet_progress())
    _, y, _, blocks = train.linear_problem(cfg, cfg.p, 0)
    s2, t = cfg.s2, cfg.temperature
    v_gp = train.nngp_mean_variance(blocks, y, s2, t)
    noise = (cfg.teacher_scale * cfg.teacher_noise) ** 2
    signal = float(np.sum(np.asarray(y) ** 2)) / cfg.p - noise
    for alpha in cfg.alphas:
        width = round(cfg.p / alpha)
        exact = float(np.mean(samplers.exact_linear_posterior(*blocks, y, width, s2, t)[1])) / v_gp
        assert out[f"exact|lin_ratio_a{alpha:g}"] == pytest.approx(exact, rel=1e-9)
        u = renorm.bpkr_u(blocks[0], y, width, s2, t) / s2
        assert out[f"bpkr|lin_u_a{alpha:g}"] == pytest.approx(u, rel=1e-9)
        # Eq. 3 at the same alpha (MP ratio P / N0; signal from the data, the teacher's noise)
        u_mp = renorm.integral_u(cfg.p / cfg.n0, alpha, s2, t, signal, noise)
        mp = renorm.integral_variance_ratio(cfg.p / cfg.n0, u_mp, s2, t)
        assert out[f"mp_integral|lin_ratio_a{alpha:g}"] == pytest.approx(mp, rel=1e-9)
    assert out["exact|lin_ratio_a0.001"] == pytest.approx(1.0, abs=0.02)  # N = 6000: NNGP
    assert abs(out["exact|lin_ratio_a6"] - 1.0) > 0.1  # N = 1: far from it


def test_linear_gibbs_samples_the_full_weights_at_each_prior_variance(tiny):
    """E1's falsifiable check: Gibbs on (a, W) at width N = P / alpha and every s2 in
    gibbs_s2s; BPKR on the kernel whose NNGP is s2^2 X X^T / N0; the old convention differs."""
    cfg = dataclasses.replace(tiny, gibbs_s2s=(0.5, 2.0), gibbs_alphas=(2.0,))
    out = train.linear_gibbs(cfg, 0, quiet_progress())
    t, width = cfg.temperature, round(cfg.p / 2.0)
    for s2 in cfg.gibbs_s2s:
        x, y, x_test, blocks = train.linear_problem(cfg, cfg.p, 0, s2)
        xx = np.asarray(x) @ np.asarray(x).T / cfg.n0
        np.testing.assert_allclose(s2 * np.asarray(blocks[0]), s2**2 * xx, rtol=1e-10)
        v_gp = train.nngp_mean_variance(blocks, y, s2, t)
        post = samplers.gibbs_linear(0, x, y, x_test, width, s2, t, cfg.gibbs_sweeps, cfg.burn_in)
        tag = f"s{s2:g}_a2"
        gibbs = float(np.mean(post.var)) / v_gp
        assert out[f"gibbs|gibbs_ratio_{tag}"] == pytest.approx(gibbs, rel=1e-9)
        u = renorm.bpkr_u(blocks[0], y, width, s2, t)
        ratio = renorm.renormalised_variance_ratio(*blocks, y, u, s2, t)
        assert out[f"bpkr|gibbs_ratio_{tag}"] == pytest.approx(ratio, rel=1e-9)
        assert out[f"bpkr|gibbs_relerr_{tag}"] == pytest.approx(abs(ratio / gibbs - 1), rel=1e-9)
        legacy = out[f"bpkr_legacy_s2|gibbs_ratio_{tag}"]
        assert abs(legacy / ratio - 1) > 0.05


def test_bpkr_is_within_five_percent_of_gibbs_and_the_old_convention_is_not():
    """The linear claim's check at a small linear-width size (P = N = 40, N0 = 80): BPKR within
    5% of the full-weight sampler at s2 = 0.5 and 2; Kb = X X^T / N0 (the old bug) 20% off."""
    cfg = dataclasses.replace(
        PRESETS["quick"], p=40, n0=80, gibbs_alphas=(1.0,), gibbs_sweeps=600, burn_in=100
    )
    out = train.linear_gibbs(cfg, 0, quiet_progress())
    for s2 in cfg.gibbs_s2s:
        assert out[f"bpkr|gibbs_relerr_s{s2:g}_a1"] < 0.05
        assert out[f"bpkr_legacy_s2|gibbs_relerr_s{s2:g}_a1"] > 0.2


def test_relu_width_runs_each_alpha_at_width_relu_p_over_alpha(tiny):
    """E2 the same way (BPKR with the arc-cosine kernel at N = relu_p / alpha); the NUTS ground
    truth is handed in as eval does, so no chain runs here."""
    cfg = dataclasses.replace(tiny, relu_alphas=(0.5, 2.0, 6.0))  # relu_p = 6: N = 12, 3, 1
    saved = {f"nuts_relu|relu_ratio_a{a:g}": 1.0 for a in cfg.relu_alphas}
    out = train.relu_width(cfg, 0, quiet_progress(), saved)
    _, y, _, blocks = train.relu_problem(cfg, 0)
    s2, t = cfg.s2, cfg.relu_temperature
    for alpha in cfg.relu_alphas:
        u = renorm.bpkr_u(blocks[0], y, round(cfg.relu_p / alpha), s2, t)
        ratio = renorm.renormalised_variance_ratio(*blocks, y, u, s2, t)
        assert out[f"bpkr_relu|relu_ratio_a{alpha:g}"] == pytest.approx(ratio, rel=1e-9)
        assert out[f"bpkr_relu|relu_relerr_a{alpha:g}"] == pytest.approx(abs(ratio - 1.0))


def test_eval_rescores_the_networks_train_saved(readme_run, tmp_path, capsys):
    """eval recomputes the sublinear estimator from networks.safetensors (edited networks change
    its numbers, not E1's) against the saved ground truth; damaged files are one line each."""
    run = tmp_path / "run"
    shutil.copytree(readme_run.folder / "runs" / "demo", run)
    saved = json.loads((run / "metrics.json").read_text())
    nets = load_safetensors(run / train.NETWORKS, framework="numpy")
    key = f"n{SHRINK['sub_relu_widths'][0]}/trained/0/w"
    save_safetensors(run / train.NETWORKS, {**nets, key: 3.0 * nets[key]}, framework="numpy")
    report = evaluate(PRESETS["demo"], run)
    width = SHRINK["sub_relu_widths"][0]
    assert report["metrics"][f"sublinear|subrelu_ratio_n{width}"] != pytest.approx(
        saved[f"sublinear|subrelu_ratio_n{width}"], rel=1e-6
    )
    assert report["max_abs_diff_vs_train"] > 0.0
    for k, v in report["metrics"].items():
        if "|lin_" in k or "relu_ratio_a" in k or k.startswith("nuts_relu|"):
            assert v == saved[k], k  # E1, E2 and the ground truths do not use the networks
    del saved[f"nuts_relu|subrelu_ratio_n{width}"]
    (run / "metrics.json").write_text(json.dumps(saved))
    assert main(["eval", "--out", str(run)]) == 2
    assert "metrics.json: no ground truth" in capsys.readouterr().err
    (run / train.NETWORKS).write_bytes(b"\x00garbage")
    assert main(["eval", "--out", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{train.NETWORKS}: corrupt checkpoint" in err and "\n" not in err
