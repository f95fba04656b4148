"""The benchmark writes a results file in the meta-repo schema with paired, controlled claims."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from sparsyfed.bench import compute_claims, label, paired, run_bench
from sparsyfed.config import PRESETS


def test_bench_writes_schema(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc
    # 6 headline + 2 at s=0.95 + 3 at alpha=1000 + 4 with GroupNorm
    assert len(doc["metrics"]) == 15
    assert "SparsyFed (alpha=0.1, s=0.9, mlp_gn)" in doc["metrics"]
    assert all(isinstance(c["control"]["holds"], bool) for c in doc["claims"])
    for row in doc["performance"]:
        assert {"id", "what", "unit", "higher_is_better", "ours_value", "peer_value"} <= set(row)
    assert [s["id"] for s in doc["skipped"]] == ["round-time-inprocess-vs-flower"]
    assert (Path(tiny.results_dir) / "figures" / "quick-curves.png").stat().st_size > 0


def test_bench_without_results_dir_writes_runs_not_results(tiny, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_bench(dataclasses.replace(tiny, results_dir="", rounds=1, bench_norm_arch=""))
    assert json.loads((tmp_path / "runs/quick/quick.json").read_text())["mode"] == "quick"
    assert (tmp_path / "runs/quick/figures/quick-curves.png").exists()
    assert not (tmp_path / "results").exists()


def fake_metrics(acc: dict[str, list[float]], regrowth: dict[str, list[float]]) -> dict:
    """Per-seed metrics for the headline rows (alpha 0.1, s 0.9 and 0.95) of the quick preset."""
    out = {}
    for method, accs in acc.items():
        rg = regrowth.get(method, [0.0] * len(accs))
        for s in (0.9, 0.95):
            out[label(method, 0.1, s)] = {
                "accuracy": {"values": accs, "mean": sum(accs) / len(accs)},
                "accuracy_untrained": {"values": [0.1] * len(accs)},
                "mean_regrowth": {"values": rg, "mean": sum(rg) / len(rg)},
            }
    return out


def verdicts(cfg, acc, rg):
    claims = compute_claims(cfg, fake_metrics(acc, rg))
    return {c["id"]: c["holds"] for c in claims}, {c["id"]: c["control"]["holds"] for c in claims}


def test_claims_follow_the_metrics_and_controls_fail():
    """Flipping the per-seed numbers flips the verdicts; the negative controls fail on both."""
    cfg = dataclasses.replace(PRESETS["quick"], seeds=(0, 1, 2))
    good_acc = {
        "dense": [0.90, 0.91, 0.92],
        "sparsyfed": [0.895, 0.905, 0.915],
        "topk": [0.80, 0.82, 0.81],
        "sparsyfed_b1": [0.79, 0.83, 0.81],
    }
    good_rg = {"sparsyfed": [1e-5, 2e-5, 1e-5], "topk": [1e-3, 2e-3, 1.5e-3]}
    good_rg["sparsyfed_b1"] = good_rg["topk"]
    holds, controls = verdicts(cfg, good_acc, good_rg)
    assert all(holds.values()) and not any(controls.values())
    bad_acc = dict(good_acc, sparsyfed=[0.80, 0.86, 0.78])
    bad_rg = dict(good_rg, sparsyfed=[5e-4, 3e-3, 1e-3])
    holds, controls = verdicts(cfg, bad_acc, bad_rg)
    assert not any(holds.values()) and not any(controls.values())


def test_claims_of_three_seeds_are_strict_json():
    """Intervals over 3 seeds are numpy-backed: every verdict must still be a JSON bool."""
    cfg = dataclasses.replace(PRESETS["quick"], seeds=(0, 1, 2))
    acc = {m: [0.8, 0.85, 0.9] for m in ("dense", "sparsyfed", "topk", "sparsyfed_b1")}
    claims = compute_claims(cfg, fake_metrics(acc, {"topk": [1e-3, 2e-3, 3e-3]}))
    assert json.loads(json.dumps(claims, allow_nan=False)) == claims


def test_reuse_runs_takes_finished_runs_and_only_those(tiny):
    first = run_bench(tiny)
    again = run_bench(dataclasses.replace(tiny, reuse_runs=True))
    assert again["metrics"] == first["metrics"]
    other = finished_run_of(tiny, dataclasses.replace(tiny, lr0=0.3))
    assert other is None


def finished_run_of(bench_cfg, run_cfg):
    from sparsyfed.bench import finished_run

    workdir = Path(bench_cfg.out) / "dense_a0.1_s0.9" / "seed0"
    run = dataclasses.replace(run_cfg, method="dense", alpha=0.1, sparsity=0.9, seed=0)
    return finished_run(workdir, run)


def test_paired_interval_is_a_t_interval():
    iv = paired(__import__("numpy").array([0.01, 0.02, 0.03]))
    assert iv["mean"] == pytest.approx(0.02)
    assert iv["hi"] - iv["mean"] == pytest.approx(4.303 * 0.01 / 3**0.5, rel=1e-3)


TIMING = ("seconds_per_round", "train_seconds")
"""Wall-clock metrics: they differ between any two runs, split or not."""


def test_seeds_as_partial_files_merge_to_the_one_process_bench(tmp_path, monkeypatch):
    """bench over seeds (0, 1) in one process, and the same seeds as two --partial-out jobs
    merged with --merge: the same per-seed metrics and the same claims (issue 58)."""
    from sparsyfed import cli

    monkeypatch.chdir(tmp_path)
    common = ["bench", "--preset", "quick", "--rounds", "2", "--n-clients", "4",
              "--clients-per-round", "2", "--bench-alphas", "0.1", "--bench-sparsities", "0.9",
              "--bench-norm-arch", "", "--quiet"]  # fmt: skip
    one_dir, merged_dir = tmp_path / "one", tmp_path / "merged"
    argv = [*common, "--seeds", "0", "1", "--out", "r01", "--results-dir", str(one_dir)]
    assert cli.main(argv) == 0
    parts = [str(tmp_path / f"part{seed}.json") for seed in (0, 1)]
    for seed, part in zip((0, 1), parts):
        argv = [*common, "--seeds", str(seed), "--out", f"r{seed}", "--partial-out", part]
        assert cli.main(argv) == 0
        assert sorted(json.loads(Path(part).read_text())["per_seed"]) == [str(seed)]
    assert cli.main([*common, "--merge", *parts, "--results-dir", str(merged_dir)]) == 0
    one = json.loads((one_dir / "quick.json").read_text())
    merged = json.loads((merged_dir / "quick.json").read_text())
    assert merged["seeds"] == one["seeds"] == [0, 1]
    assert merged["metrics"].keys() == one["metrics"].keys()
    for row, metrics in one["metrics"].items():
        for name, summary in metrics.items():
            if name not in TIMING:
                assert merged["metrics"][row][name]["values"] == pytest.approx(summary["values"])
    assert merged["claims"] == one["claims"]
    assert merged["performance"] == one["performance"] and merged["grid"] == one["grid"]
    assert (merged_dir / "figures" / "quick-curves.png").exists()


def test_merge_refuses_partial_files_of_another_grid(tmp_path, monkeypatch, capsys):
    from sparsyfed import cli

    monkeypatch.chdir(tmp_path)
    part = str(tmp_path / "part.json")
    common = ["bench", "--preset", "quick", "--rounds", "1", "--n-clients", "4",
              "--clients-per-round", "2", "--bench-alphas", "0.1", "--quiet"]  # fmt: skip
    argv = [*common, "--bench-sparsities", "0.9", "--bench-norm-arch", "", "--seeds", "0"]
    assert cli.main([*argv, "--partial-out", part]) == 0
    assert cli.main([*common, "--merge", part, "--results-dir", str(tmp_path / "res")]) == 2
    assert "not this preset's grid" in capsys.readouterr().err


def tune_metrics(
    val: dict[str, dict[float, list[float]]], test: dict[str, dict[float, list[float]]]
):
    """Metrics of the equal-tuning rows of the paper preset from per-method, per-lr0 values."""
    from sparsyfed.bench import tuning_extra

    cfg = PRESETS["paper"]
    out = {}
    for method, by_lr in test.items():
        for lr, accs in by_lr.items():
            vals = val[method][lr]
            out[label(method, 0.1, 0.9, "", tuning_extra(cfg, lr))] = {
                "accuracy": {"values": accs, "mean": sum(accs) / len(accs)},
                "val_accuracy": {"values": vals, "mean": sum(vals) / len(vals)},
                "accuracy_untrained": {"values": [0.1] * len(accs)},
            }
    return cfg, out


def test_equal_tuning_picks_by_validation_never_by_test():
    """Each method keeps the lr0 of best validation accuracy, even where another lr0 has the
    better test accuracy (a test-data leak would pick that one)."""
    from sparsyfed.bench import compute_claims, tuned_rows

    lrs = (0.25, 0.5, 1.0)
    val = {
        m: {lr: [0.5 + 0.1 * (lr == 0.25)] * 3 for lr in lrs}
        for m in ("dense", "topk", "sparsyfed")
    }
    test = {m: {lr: [0.9 if lr == 1.0 else 0.6, 0.61, 0.6] for lr in lrs} for m in val}
    cfg, metrics = tune_metrics(val, test)
    tuned = tuned_rows(metrics, cfg)
    assert {m: t["lr0"] for m, t in tuned.items()} == {
        "dense": 0.25,
        "topk": 0.25,
        "sparsyfed": 0.25,
    }
    # the tuned claims read the chosen rows: dense 0.6-ish vs SparsyFed 0.6-ish, gap ~0
    test["dense"][0.25] = [0.80, 0.81, 0.82]
    cfg, metrics = tune_metrics(val, test)
    cfg = dataclasses.replace(cfg, bench_sparsities=(0.9,), bench_splits=())
    from sparsyfed.bench import beats_topk, near_dense

    rows = {m: t["row"] for m, t in tuned_rows(metrics, cfg).items()}
    nd = near_dense(metrics, cfg, 0.9, (rows["dense"], rows["sparsyfed"]), "-tuned")
    assert nd["id"] == "sparsyfed-near-dense-s0.9-tuned" and nd["verdict"] == "contradicted"
    bt = beats_topk(metrics, cfg, (rows["sparsyfed"], rows["topk"]), "-tuned")
    assert bt["verdict"] == "inconclusive" and bt["test"][0]["n"] == 3
    assert callable(compute_claims)


def test_claims_carry_structured_tests_and_three_way_verdicts():
    cfg = dataclasses.replace(PRESETS["quick"], seeds=(0, 1, 2))
    acc = {
        "dense": [0.90, 0.91, 0.92],
        "sparsyfed": [0.60, 0.62, 0.61],
        "topk": [0.80, 0.82, 0.81],
        "sparsyfed_b1": [0.79, 0.83, 0.81],
    }
    rg = {"sparsyfed": [1e-5, 2e-5, 1e-5], "topk": [1e-3, 2e-3, 1.5e-3]}
    rg["sparsyfed_b1"] = rg["topk"]
    claims = {c["id"]: c for c in compute_claims(cfg, fake_metrics(acc, rg))}
    assert claims["sparsyfed-near-dense-s0.9"]["verdict"] == "contradicted"
    assert claims["sparsyfed-beats-topk"]["verdict"] == "contradicted"
    assert claims["regrowth-5x-lower"]["verdict"] == "holds"
    for c in claims.values():
        (p,) = c["test"]
        assert {"estimate", "interval", "threshold", "direction", "n"} <= set(p)


def test_reused_runs_are_named_and_wall_time_is_the_bench_own(tiny):
    """A --reuse-runs pass does not pose as the training run: its wall_seconds is its own, the
    runs it took from disk are listed, and their training seconds are counted apart."""
    cfg = dataclasses.replace(
        tiny, bench_alphas=(0.1,), bench_sparsities=(0.9,), bench_norm_arch=""
    )
    first = run_bench(cfg)
    assert first["reused_runs"] == [] and first["run_seconds"]["reused_runs"] == 0
    again = run_bench(dataclasses.replace(cfg, reuse_runs=True))
    assert len(again["reused_runs"]) == len(first["metrics"])
    assert again["run_seconds"]["all_runs"] == pytest.approx(first["run_seconds"]["all_runs"])
    assert again["wall_seconds"] < first["run_seconds"]["all_runs"]


def test_flower_timing_is_time_limited_and_skips_with_the_reason(tiny):
    """A Flower timing that runs over flower_timeout_s is killed with its process group and
    recorded as skipped (here the child cannot even import torch in 0.2 s)."""
    from sparsyfed.bench import flower_timing

    cfg = dataclasses.replace(tiny, flower_rounds=1, flower_timeout_s=0.2)
    rows, skipped = flower_timing(cfg)
    assert rows == []
    assert skipped[0]["id"] == "round-time-inprocess-vs-flower"
    assert "timed out after 0.2 s" in skipped[0]["why"]


def test_split_and_tuning_rows_run_on_the_bench(tiny):
    """The extra rows of the paper preset (the official equal-size split, the lr0 grid on a
    validation hold-out) run through the bench and give their claims."""
    cfg = dataclasses.replace(
        tiny, bench_alphas=(0.1,), bench_sparsities=(0.9,), bench_norm_arch="", rounds=1,
        bench_splits=("lda_equal",), bench_tune_lr0s=(0.25, 0.5), seeds=(0, 1),
        val_fraction=0.15,
    )  # fmt: skip
    doc = run_bench(cfg)
    ids = [c["id"] for c in doc["claims"]]
    assert "sparsyfed-near-dense-s0.9-lda-equal" in ids and "sparsyfed-beats-topk-tuned" in ids
    assert set(doc["tuning"]) == {"dense", "topk", "sparsyfed"}
    assert all(c["verdict"] != "holds" for c in doc["claims"])  # 2 seeds never hold
    assert "val_accuracy" in doc["metrics"]["SparsyFed (alpha=0.1, s=0.9, lr0=0.25)"]
    # lr0 = 0.5 is the plain row (same hold-out split), not a second run of it
    assert "val_accuracy" in doc["metrics"]["SparsyFed (alpha=0.1, s=0.9)"]
    assert doc["tuning"]["dense"]["val_accuracy"].keys() == {"0.25", "0.5"}


def test_paper_grid_tunes_three_lr0s_with_22_runs_a_seed():
    """The paper preset's equal tuning fits its time budget: lr0 0.25 / 0.5 / 1.0 for dense,
    Top-K and SparsyFed, where 0.5 (the paper's schedule) is the plain row, every run on the
    paper's 10% validation hold-out: 13 + 3 (lda_equal) + 6 runs a seed, no duplicates."""
    from sparsyfed.bench import grid, tuned_rows

    cfg = PRESETS["paper"]
    runs = grid(cfg)
    assert len(runs) == 22 and len({label(*r) for r in runs}) == 22
    extra_lrs = sorted({dict(r[4]).get("lr0") for r in runs if dict(r[4]).get("lr0")})
    assert extra_lrs == [0.25, 1.0] and cfg.val_fraction == 0.1 and cfg.lr0 == 0.5
    metrics = {
        label(*r): {"val_accuracy": {"mean": 0.5 + 0.1 * (dict(r[4]).get("lr0") == 1.0)}}
        for r in runs
    }
    tuned = tuned_rows(metrics, cfg)
    assert tuned["sparsyfed"]["row"] == "SparsyFed (alpha=0.1, s=0.9, lr0=1)"
    metrics = {k: {"val_accuracy": {"mean": 0.5}} for k in metrics}
    assert tuned_rows(metrics, cfg)["dense"]["row"] == "FedAvg (dense) (alpha=0.1, lr0=0.25)"


def test_tuning_needs_a_validation_hold_out():
    from sparsyfed.config import validate

    with pytest.raises(ValueError, match="val-fraction"):
        validate(dataclasses.replace(PRESETS["paper"], val_fraction=0.0))


def test_bench_never_reuses_run_folders_by_default(tiny):
    """No preset reuses finished run folders unless --reuse-runs is given: a second bench over
    the same folders trains every run again, and its wall time covers that training."""
    from sparsyfed.config import PRESETS as presets

    assert not any(p.reuse_runs for p in presets.values())
    cfg = dataclasses.replace(
        tiny, bench_alphas=(0.1,), bench_sparsities=(0.9,), bench_norm_arch=""
    )
    run_bench(cfg)
    stamp = Path(cfg.out, "dense_a0.1_s0.9", "seed0", "metrics.json").stat().st_mtime_ns
    again = run_bench(cfg)
    assert again["reused_runs"] == [] and again["run_seconds"]["reused_runs"] == 0
    assert Path(cfg.out, "dense_a0.1_s0.9", "seed0", "metrics.json").stat().st_mtime_ns > stamp
    assert again["wall_seconds"] >= again["run_seconds"]["all_runs"]
