"""The benchmark: results schema, claims from paired per-seed metrics, presets, workers."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import SHRINK, as_flags
from stch_set import bench
from stch_set.bench import Job, main_jobs, run_bench, run_jobs
from stch_set.claims import FLOOR, OFFICIAL_KEY, compute_claims
from stch_set.config import METHODS, PRESETS
from stch_set.stats import lower_with_confidence, paired


def test_bench_writes_schema_claims_performance_and_figures(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == json.loads(json.dumps(doc))
    assert doc["mode"] == "quick"
    labels = {"STCH-Set", "TCH-Set", "SoM", "NSGA-III + greedy K", FLOOR, "ground-truth centres"}
    assert labels <= set(doc["metrics"])
    assert len(doc["metrics"]["STCH-Set"]["quadratic/worst"]["values"]) == 2
    assert "linear/official-protocol/worst" in doc["metrics"]["TCH-Set"]
    assert "quadratic-K4-m12/worst" in doc["metrics"]["LS (random pref)"]
    ids = {c["id"] for c in doc["claims"]}
    assert {"lowest-worst-quadratic", "worst-1.5x-linear", "average-beats-tch-set-nonlinear"} <= ids
    assert {"official-lowest-worst-quadratic", "official-average-beats-tch-set-linear"} <= ids
    assert "k-sweep-lowest-worst-quadratic" in ids
    assert doc["init_check"]["linear"]["seeds"] == 100
    for c in doc["claims"]:
        assert isinstance(c["holds"], bool) and c["paper"] and "negative_control" in c
        assert c["verdict"] in ("holds", "contradicted", "inconclusive") and c["test"]
        assert c["holds"] == (c["verdict"] == "holds")
        assert ("seeds_needed" in c) == (c["verdict"] == "inconclusive")
    assert doc["tuning"]["grid"]["lr"] == list(tiny.tune_lrs)
    assert set(doc["tuning"]["chosen"]["linear"]) >= {"STCH-Set", "SoM"}
    assert doc["tuning"]["used"]["linear"]["SoM"] in tiny.tune_lrs
    rows = {p["id"]: p for p in doc["performance"]}
    assert {"step-quadratic", "step-nonlinear", "seed-step-linear"} <= set(rows)
    assert all(
        r["unit"] == "s" and r["ours_value"] > 0 and r["peer_value"] > 0 for r in rows.values()
    )
    phases = doc["phase_seconds"]  # where the time goes, measured by the bench itself
    for key in ("tuning", "evaluation", "performance", "init_check", "tuning_job_seconds"):
        assert phases[key] >= 0, key
    assert {"main_job_seconds", "official_protocol_job_seconds", "k_sweep_job_seconds"} <= set(
        phases
    )
    figures = sorted(p.name for p in (Path(tiny.results_dir) / "figures").glob("*.png"))
    assert figures == [
        "quick_curves.png",
        "quick_step_cost.png",
        "quick_worst.png",
        "quick_worst_vs_k.png",
    ]


def fake(per_seed: dict[str, list[float]], problems=("quadratic",)) -> dict:
    """metrics with the same per-seed values for worst and average."""
    return {
        label: {
            f"{p}/{key}": {"mean": sum(v) / len(v), "values": v}
            for p in problems
            for key in ("worst", "average")
        }
        for label, v in per_seed.items()
    }


BASE = {
    "TCH-Set": [1.0, 1.1, 0.9, 1.0, 1.05],
    "SoM": [2.0, 2.2, 1.9, 2.1, 2.0],
    "STCH (random pref)": [5.0, 6.0, 5.5, 5.2, 5.8],
    "TCH (random pref)": [5.0, 6.0, 5.5, 5.2, 5.8],
    "LS (random pref)": [4.0, 4.4, 4.1, 4.3, 4.2],
    FLOOR: [9.0, 8.0, 10.0, 9.5, 8.5],
}


def by_id(claims: list[dict]) -> dict[str, dict]:
    return {c["id"]: c for c in claims}


def test_claims_hold_on_a_clear_win_and_the_negative_control_fails():
    claims = by_id(
        compute_claims(("quadratic",), fake({"STCH-Set": [0.5, 0.52, 0.45, 0.5, 0.55], **BASE}))
    )
    for cid in (
        "lowest-worst-quadratic",
        "worst-1.5x-quadratic",
        "average-beats-tch-set-quadratic",
    ):
        assert claims[cid]["holds"], cid
        assert claims[cid]["verdict"] == "holds", cid
        assert claims[cid]["negative_control"]["verdict"] == "contradicted", cid
        assert "seeds_needed" not in claims[cid]


def test_claims_fail_on_noise_a_split_and_a_small_ratio():
    # 3 of 5 seeds better with one large loss: a mean win that the paired interval rejects
    noisy = [0.5, 0.5, 0.5, 3.0, 0.8]
    claims = by_id(compute_claims(("quadratic",), fake({"STCH-Set": noisy, **BASE})))
    assert not claims["lowest-worst-quadratic"]["holds"]
    # clearly better than SoM, but only by 1.2x: the 1.5x gate fails, the ordering holds
    close = [v / 1.2 for v in BASE["SoM"]]
    base = {**BASE, "TCH-Set": [v * 2 for v in BASE["TCH-Set"]]}
    claims = by_id(compute_claims(("quadratic",), fake({"STCH-Set": close, **base})))
    assert claims["lowest-worst-quadratic"]["holds"]
    assert not claims["worst-1.5x-quadratic"]["holds"]


def test_paired_interval_and_wins():
    cmp = paired([2.0, 2.2, 1.8], [1.0, 1.1, 0.9])
    assert cmp["ratio"]["gm"] == pytest.approx(2.0) and cmp["wins"] == 3
    assert lower_with_confidence(cmp) and lower_with_confidence(cmp, 1.5)
    assert not lower_with_confidence(paired([1.0], [0.5]))  # one seed: no interval
    assert not lower_with_confidence(paired([1.0, 2.0, 1.0], [1.0, 2.0, 1.0]))
    signed = paired([1.0, 0.0, 2.0], [-1.0, -2.0, 0.5])  # objectives <= 0: difference only
    assert signed["ratio"] is None and lower_with_confidence(signed)
    assert not lower_with_confidence(signed, 1.5)
    with pytest.raises(ValueError, match="equal seed lists"):
        paired([1.0, 2.0], [1.0])


def test_a_diverging_run_scores_inf_when_tuning_and_falls_back_when_evaluating(tiny):
    cfg = dataclasses.replace(tiny, tune_lrs=(0.01, 1e12))
    job = Job("quadratic", "tch-set", "ours", 1e12, (0, 1), 20, tiny.m, tiny.k)
    tuned = run_jobs(cfg, [dataclasses.replace(job, tuning=True)])[0]
    assert tuned["diverged"] and tuned["worst"] == [float("inf")] * 2
    evaluated = run_jobs(cfg, [job])[0]
    assert evaluated["lr"] == 0.01 and max(evaluated["worst"]) < tuned["worst"][0]
    with pytest.raises(ValueError, match="diverged .NaN. on quadratic at every learning rate"):
        run_jobs(dataclasses.replace(cfg, tune_lrs=(1e12,)), [job])


@pytest.mark.slow  # two spawned workers each import torch and torch._dynamo (~20 s without .pyc)
def test_workers_give_the_same_numbers_as_one_process(tiny):
    jobs = [
        Job(p, meth, init, 0.01, (0, 1), 15, tiny.m, tiny.k)
        for p, meth, init in [("quadratic", "stch-set", "ours"), ("nonlinear", "som", "official")]
    ]
    serial = run_jobs(tiny, jobs)
    parallel = run_jobs(dataclasses.replace(tiny, workers=2), jobs)
    for a, b in zip(serial, parallel):
        assert (a["worst"], a["average"], a["untrained"]) == (
            b["worst"],
            b["average"],
            b["untrained"],
        )


def test_paper_preset_is_the_official_scale():
    paper = PRESETS["paper"]
    assert paper.name == "paper" and paper.steps == 10_000 and len(paper.seeds) >= 10
    assert set(paper.problems) == {"quadratic", "linear", "nonlinear"}
    assert not set(paper.seeds) & set(paper.tune_seeds)
    assert set(PRESETS["quick"].tune_lrs) < set(paper.tune_lrs)  # quick: a part of the same grid


def test_paper_preset_writes_paper_json_and_figures_into_results_dir(tmp_path):
    cfg = dataclasses.replace(
        PRESETS["paper"],
        seeds=(0, 1),
        problems=("quadratic",),
        methods=("stch-set", "som"),
        results_dir=str(tmp_path / "elsewhere"),
        **SHRINK,
    )
    doc = run_bench(cfg)
    assert doc["mode"] == "paper" and (tmp_path / "elsewhere" / "paper.json").exists()
    names = sorted(p.name for p in (tmp_path / "elsewhere" / "figures").glob("*.png"))
    assert names == [
        "paper-curves.png",
        "paper-step_cost.png",
        "paper-worst.png",
        "paper-worst_vs_k.png",
    ]


def test_bench_without_results_dir_writes_runs_not_results(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = dataclasses.replace(
        PRESETS["quick"], seeds=(0,), problems=("quadratic",), methods=("stch-set", "som"), **SHRINK
    )
    assert cfg.results_dir == ""
    run_bench(cfg)
    assert json.loads((tmp_path / "runs/quick/quick.json").read_text())["mode"] == "quick"
    assert (tmp_path / "runs/quick/figures/quick_worst.png").exists()
    assert not (tmp_path / "results").exists()


def run_cli(*argv: str) -> None:
    from stch_set import cli

    assert cli.main(list(argv)) == 0


def test_seeds_as_partial_files_merge_to_the_one_process_bench(tmp_path, monkeypatch):
    """bench over seeds (0, 1) in one process, and the same seeds as two --partial-out jobs merged
    with --merge: the same tuned learning rates, the same per-seed metrics up to float rounding
    (a batch of two seeds against each seed alone) and the same claims (issue 58)."""
    monkeypatch.chdir(tmp_path)
    common = ["bench", "--preset", "quick", *as_flags(SHRINK)]
    run_cli(*common, "--seeds", "0", "1", "--out", "r01", "--results-dir", "one")
    parts = [f"part{seed}.json" for seed in (0, 1)]
    for seed, part in zip((0, 1), parts):
        run_cli(*common, "--seeds", str(seed), "--out", f"r{seed}", "--partial-out", part)
        assert list(json.loads(Path(part).read_text())["per_seed"]) == [str(seed)]
    run_cli(*common, "--merge", *parts, "--results-dir", "merged")
    one = json.loads(Path("one/quick.json").read_text())
    merged = json.loads(Path("merged/quick.json").read_text())
    assert merged["seeds"] == one["seeds"] == [0, 1]
    assert merged["tuning"]["chosen"] == one["tuning"]["chosen"]
    assert merged["tuning"]["used"] == one["tuning"]["used"]
    assert merged["metrics"].keys() == one["metrics"].keys()
    for label, metrics in one["metrics"].items():
        assert merged["metrics"][label].keys() == metrics.keys()
        for key, summary in metrics.items():
            if not key.endswith("seconds_per_seed"):  # wall clock: differs between any two runs
                got = merged["metrics"][label][key]["values"]
                assert got == pytest.approx(summary["values"], rel=1e-5, abs=1e-9), (label, key)
    verdicts = lambda doc: [(c["id"], c["verdict"], c["negative_control"]) for c in doc["claims"]]
    assert verdicts(merged) == verdicts(one)


def test_verdicts_are_three_way_with_seeds_needed():
    stch = [0.5, 0.52, 0.45, 0.5, 0.55]
    # TCH-Set clearly better than STCH-Set on every seed: the ordering is contradicted
    base = {**BASE, "TCH-Set": [v / 2 for v in stch]}
    claims = by_id(compute_claims(("quadratic",), fake({"STCH-Set": stch, **base})))
    assert claims["lowest-worst-quadratic"]["verdict"] == "contradicted"
    assert "seeds_needed" not in claims["lowest-worst-quadratic"]
    # lower on every seed but by a varying margin on 3 seeds: inconclusive, more seeds would decide
    three = {lab: v[:3] for lab, v in BASE.items()}
    close = {**three, "TCH-Set": [0.51, 0.6, 0.46]}
    claim = by_id(compute_claims(("quadratic",), fake({"STCH-Set": stch[:3], **close})))[
        "lowest-worst-quadratic"
    ]
    assert claim["verdict"] == "inconclusive" and claim["seeds_needed"] > 3
    part = next(p for p in claim["test"] if "TCH-Set /" in p["what"])
    assert part["threshold"] == 0.0 and part["direction"] == ">" and part["n"] == 3
    assert part["estimate"] == pytest.approx(
        np.mean(np.log(np.array([0.51, 0.6, 0.46]) / stch[:3]))
    )
    # the 1.5x gate is a log-ratio threshold of log 1.5
    gate = by_id(compute_claims(("quadratic",), fake({"STCH-Set": stch, **BASE})))[
        "worst-1.5x-quadratic"
    ]
    assert [p["threshold"] for p in gate["test"]] == pytest.approx([np.log(1.5)] * 4)


def test_official_protocol_claims_and_the_k_sweep_claim():
    stch = [0.5, 0.52, 0.45, 0.5, 0.55]
    metrics = fake(
        {"STCH-Set": stch, **BASE}, problems=("quadratic", "quadratic/official-protocol")
    )
    sweeps = {"quadratic": [(3, 12), (5, 12)]}
    sweep = fake({"STCH-Set": stch, **BASE}, problems=("quadratic-K3-m12", "quadratic-K5-m12"))
    for lab, entries in sweep.items():
        metrics[lab].update(entries)
    claims = by_id(compute_claims(("quadratic",), metrics, sweeps))
    assert claims["official-lowest-worst-quadratic"]["verdict"] == "holds"
    assert len(claims["official-lowest-worst-quadratic"]["test"]) == 2  # TCH-Set and SoM
    assert claims["official-average-beats-tch-set-quadratic"]["verdict"] == "holds"
    k = claims["k-sweep-lowest-worst-quadratic"]
    assert k["verdict"] == "holds" and len(k["test"]) == 4
    assert k["negative_control"]["verdict"] == "contradicted"
    assert [b["verdict"] for b in k["by_k"]] == ["holds", "holds"]
    # TCH-Set wins at K=5 only: the sweep claim is contradicted, and says at which K
    metrics["TCH-Set"]["quadratic-K5-m12/worst"]["values"] = [v / 3 for v in stch]
    claims = by_id(compute_claims(("quadratic",), metrics, sweeps))
    k = claims["k-sweep-lowest-worst-quadratic"]
    assert k["verdict"] == "contradicted"
    assert k["by_k"][1] == {
        "k": 5,
        "m": 12,
        "verdict": "contradicted",
        "contradicted_by": ["TCH-Set"],
    }
    assert k["ours"].startswith("By K: contradicted at K=5 (TCH-Set); holds at K=3.")
    # every number labelled with its scale: the ratio 1/3 as a ratio, its log as a log ratio
    assert "K=5 m=12: TCH-Set / STCH-Set ratio 0.333x [0.333, 0.333] (log ratio -1.1 " in k["ours"]
    assert "STCH-Set lower on 0/5 seeds, contradicted" in k["ours"]
    assert "log(" not in k["ours"]


def test_the_sweep_point_at_the_presets_k_is_the_main_run(tiny, monkeypatch):
    cfg = dataclasses.replace(
        tiny, problems=("quadratic",), methods=("stch-set", "tch-set", "som"), k_sweep=(2, 3)
    )
    ran = []
    real = bench.run_job

    def counting(cfg, job):
        ran.append(job)
        return real(cfg, job)

    monkeypatch.setattr(bench, "run_job", counting)
    per_seed = bench.run_batch(cfg)
    runs = {(r["prefix"], r["label"]): r for r in per_seed[cfg.seeds[0]]["runs"]}
    evaluation = [job for job in ran if not job.tuning]
    # 3 main + 3 official-protocol + 3 at K=2; K=3 (the preset's K at m=12) reuses the main runs
    assert len(evaluation) == 9 and len(set(evaluation)) == 9
    assert len([job for job in ran if job.tuning]) == len(cfg.tune_lrs) * 3  # every rate runs
    for label in ("STCH-Set", "TCH-Set", "SoM"):
        main, point = runs[("quadratic", label)], runs[("quadratic-K3-m12", label)]
        assert point["worst"] == main["worst"] and point["lr"] == main["lr"]
        assert main["history"] and not point["history"]
    other_k = runs[("quadratic-K2-m12", "STCH-Set")]
    assert other_k["average"] != runs[("quadratic", "STCH-Set")]["average"]


def test_official_protocol_runs_untuned_from_the_official_init_and_the_sweep_at_its_k(tiny):
    cfg = dataclasses.replace(tiny, problems=("quadratic", "linear"), official_lr=0.02)
    lrs = {p: {METHODS[m]: 0.3 for m in cfg.methods} for p in cfg.problems}
    runs = main_jobs(cfg, cfg.problems, lrs)
    official = [job for prefix, _, job in runs if OFFICIAL_KEY in prefix]
    assert {(job.problem, job.method) for job in official} == {
        (p, m) for p in ("quadratic", "linear") for m in cfg.compare_init_methods
    }
    assert all(job.lr == 0.02 and job.init == "official" for job in official)
    tuned = [job for prefix, _, job in runs if prefix in cfg.problems and job.method != "nsga3"]
    assert all(job.lr == 0.3 and job.init == "ours" for job in tuned)
    sweep = [(prefix, job) for prefix, _, job in runs if "-K" in prefix]
    assert {(j.k, j.m) for _, j in sweep} == {(2, 12), (4, 12)}
    assert all(prefix == f"quadratic-K{j.k}-m{j.m}" for prefix, j in sweep)
    assert all(j.lr == 0.3 and j.seeds == cfg.seeds for _, j in sweep)
    assert {j.method for _, j in sweep} == set(cfg.methods) - {"nsga3"}


def test_tuning_sees_the_validation_seeds_only(tiny, monkeypatch):
    seen = []

    def fake_run_jobs(cfg, jobs, desc="jobs"):
        seen.extend(jobs)
        return [{"worst": [job.lr] * len(job.seeds), "job_seconds": 0.0} for job in jobs]

    monkeypatch.setattr(bench, "run_jobs", fake_run_jobs)
    chosen, record = bench.tune(tiny, ("quadratic",))
    assert seen and all(job.seeds == tiny.tune_seeds and job.tuning for job in seen)
    assert not set(tiny.tune_seeds) & set(tiny.seeds)
    assert chosen["quadratic"]["STCH-Set"] == min(tiny.tune_lrs)  # lowest score wins
    assert record["validation_seeds"] == list(tiny.tune_seeds)
