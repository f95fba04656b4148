"""The benchmark: schema, tuning record, claims with controls, figures; the claim logic on
hand-made numbers (a clear win holds, noise and the shuffled control do not); the paper preset at
tiny size."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from conftest import SHRINK
from flora.bench import NAMES, run_bench, transfer_figure
from flora.claims import SHUFFLED, above_at_every_budget, comparison_claim, paired
from flora.config import PRESETS


def test_bench_writes_schema_tuning_claims_performance_and_figures(tiny):
    doc = run_bench(tiny)
    on_disk = json.loads((Path(tiny.results_dir) / "quick.json").read_text())
    assert on_disk == doc and doc["tuning"]
    names = {"FLoRA", "FLoRA-flat", "LoRA", "DoRA", "LoCon-Tucker", "LoHa", "LoKr", "Full FT",
             "Linear probe", "BitFit", SHUFFLED}  # fmt: skip
    assert names <= set(doc["metrics"])
    assert (
        "vit_r4_mean_acc" in doc["metrics"]["DoRA"]
        and "vit_r4_mean_acc" not in doc["metrics"]["FLoRA-flat"]
    )
    assert doc["tuning"]["chosen"]["cnn"]["r4"]["lora"]["grid"][0][:2] == [3e-3, 1.0]
    budget = doc["budget"]["per_budget"]
    assert "nearest" in doc["budget"]["rule"] and set(budget) == {"cnn", "vit"}
    for backbone, row in ((b, budget[b]["r4"]) for b in budget):
        assert set(row) == {n for n in names if n != "FLoRA-flat" and n != "LoCon-Tucker"} | (
            {"FLoRA-flat", "LoCon-Tucker"} if backbone == "cnn" else set())  # fmt: skip
        assert row["LoRA"]["ratio_to_lora"] == 1.0 and row["LoRA"]["rank"] == 4
        for name in ("FLoRA", "DoRA"):
            key = f"{backbone}_r4_trainable"
            assert row[name]["trainable"] == doc["metrics"][name][key]["mean"]
            assert abs(row[name]["ratio_to_lora"] - 1) <= 0.05  # issue 74: equal budgets
            assert row[name]["rank"] == round(
                doc["metrics"][name][f"{backbone}_r4_rank"]["mean"], 2
            )
    ids = [c["id"] for c in doc["claims"]]
    assert ids == ["cnn-flora-beats-lora", "cnn-flora-beats-dora", "cnn-structure-beats-flat",
                   "cnn-flora-near-full-ft", "vit-linear-flora-not-worse"]  # fmt: skip
    assert all(
        isinstance(c["holds"], bool) and c["paper"] and "control" in c for c in doc["claims"]
    )
    assert not any(c["holds"] for c in doc["claims"])  # one seed: every interval is infinite
    for c in doc["claims"]:
        assert c["verdict"] == "inconclusive" and c["seeds_needed"] >= 3
        assert [p["n"] for p in c["test"]] == [1] and c["readings"]["headline_budget"]["rank"] == 4
    assert {p["id"] for p in doc["performance"]} == {
        "delta-w-reconstruction", "forward-vs-peft-lora", "forward-vs-merged"}  # fmt: skip
    assert all(p["ours_value"] > 0 and p["peer_value"] > 0 for p in doc["performance"])
    assert sorted(f.name for f in (Path(tiny.results_dir) / "figures").iterdir()) == [
        "structure.png", "transfer.png"]  # fmt: skip


def test_paired_interval_and_claim_logic_on_known_numbers():
    iv = paired([90.0, 91.0, 92.0], [80.0, 80.0, 80.0])
    assert iv["mean"] == 11.0 and 8.0 < iv["lo"] < 11.0 < iv["hi"] < 14.0
    assert paired([1.0], [0.0])["lo"] == float("-inf")
    cells = {4: {"FLoRA": [90.0, 91.0, 92.0], "LoRA": [80.0, 80.0, 80.0],
                 SHUFFLED: [20.0, 21.0, 19.0], "FLoRA-flat": [85.0, 75.0, 81.0]}}  # fmt: skip
    assert above_at_every_budget(cells, "FLoRA", "LoRA", 0.0)[0]
    assert not above_at_every_budget(cells, "FLoRA-flat", "LoRA", 0.0)[0]  # noise: interval spans 0
    two = {**cells, 8: {**cells[4], "FLoRA": [80.0, 80.5, 79.0]}}
    assert not above_at_every_budget(two, "FLoRA", "LoRA", 0.0)[0]  # fails at one budget
    c = comparison_claim("x", "s", "p", cells, "LoRA", 0.0, "FLoRA-flat")
    assert c["holds"] and not c["control"]["holds"] and not c["ablation"]["holds"]
    assert c["verdict"] == "holds" and c["control"]["verdict"] == "contradicted"
    assert c["ablation"]["verdict"] == "inconclusive"
    (p,) = c["test"]
    assert p["direction"] == ">" and p["threshold"] == 0.0 and p["n"] == 3
    assert p["estimate"] == 11.0 and 8.0 < p["interval"][0] < 11.0 < p["interval"][1] < 14.0


def test_per_budget_parts_and_both_readings():
    """Fails at r=2, holds at r=8: strict reading contradicted, headline (r=8) holds; a margin
    of -2 (near full FT) lets a 1-point loss hold and a 3-point loss contradict."""
    base = {"LoRA": [80.0, 80.0, 80.0], SHUFFLED: [20.0, 21.0, 19.0]}
    cells = {2: {**base, "FLoRA": [75.0, 76.0, 74.0]}, 8: {**base, "FLoRA": [90.0, 91.0, 92.0]}}
    c = comparison_claim("x", "s", "p", cells, "LoRA", 0.0, "", headline=8)
    assert [p["what"].split("r=")[1][0] for p in c["test"]] == ["2", "8"]
    assert c["verdict"] == "contradicted" and not c["holds"]
    assert c["readings"]["per_budget"] == {"r2": "contradicted", "r8": "holds"}
    assert c["readings"]["headline_budget"] == {"rank": 8, "verdict": "holds"}
    assert comparison_claim("x", "s", "p", cells, "LoRA", 0.0, "", headline=2)["readings"][
        "headline_budget"]["verdict"] == "contradicted"  # fmt: skip
    near = {4: {**base, "FLoRA": [79.0, 79.2, 78.8]}}
    assert comparison_claim("x", "s", "p", near, "LoRA", -2.0, "")["verdict"] == "holds"
    far = {4: {**base, "FLoRA": [77.0, 77.2, 76.8]}}
    assert comparison_claim("x", "s", "p", far, "LoRA", -2.0, "")["verdict"] == "contradicted"
    two = {4: {k: v[:2] for k, v in near[4].items()}}  # two seeds never hold
    assert comparison_claim("x", "s", "p", two, "LoRA", -2.0, "")["verdict"] != "holds"


def test_paper_preset_runs_at_tiny_size(tmp_path):
    paper = PRESETS["paper"]
    assert (paper.seeds, paper.budget_ranks, paper.backbones) == (
        (0, 1, 2, 3, 4),
        (2, 4, 8),
        ("cnn", "vit"),
    )
    shrink = {k: v for k, v in SHRINK.items() if k not in ("seeds", "lr_grid", "scale_grid")}
    cfg = dataclasses.replace(paper, out=str(tmp_path / "runs"), results_dir=str(tmp_path / "res"),
                              seeds=(0, 1), budget_ranks=(2, 4), tune_rank=4, lr_grid=(3e-3,),
                              scale_grid=(0.5, 2.0), **shrink)  # fmt: skip
    doc = run_bench(cfg)
    assert doc["mode"] == "paper" and (tmp_path / "res" / "paper.json").exists()
    assert set(doc["tuning"]["chosen"]["cnn"]) == {"r2", "r4"}
    assert (
        doc["tuning"]["chosen"]["cnn"]["r2"]["flora"]
        == doc["tuning"]["chosen"]["cnn"]["r4"]["flora"]
    )
    assert "r=2" in doc["claims"][0]["ours"] and "r=4" in doc["claims"][0]["ours"]
    assert len(doc["metrics"]["FLoRA"]["cnn_r2_mean_acc"]["values"]) == 2
    assert sorted(f.name for f in (tmp_path / "res" / "figures").iterdir()) == [
        "paper-structure.png", "paper-transfer.png"]  # fmt: skip


def test_transfer_figure_keeps_each_methods_colour_and_names_it_once():
    """The ViT panel lacks FLoRA-flat and LoCon-Tucker: colours must still follow the method, and
    the one legend must name every plotted method once."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cnn = [*NAMES.values(), SHUFFLED]
    vit = [n for n in cnn if n not in ("FLoRA-flat", "LoCon-Tucker")]
    results = {"cnn": {2: {n: [50.0] for n in cnn}, 4: {n: [60.0] for n in cnn}},
               "vit": {2: {n: [40.0] for n in vit}, 4: {n: [45.0] for n in vit}}}  # fmt: skip
    metrics = {n: {f"{b}_r{r}_trainable": {"mean": 100.0 * r} for b in results for r in (2, 4)}
               for n in cnn}  # fmt: skip
    fig = transfer_figure(metrics, results)
    colours: dict = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            colours.setdefault(line.get_label(), set()).add(
                matplotlib.colors.to_hex(line.get_color())
            )
    assert set(colours) == set(cnn) and all(len(c) == 1 for c in colours.values())
    assert len({c.pop() for c in colours.values()}) == len(cnn)  # no two methods share a colour
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert sorted(labels) == sorted(cnn) and len(labels) == len(set(labels))
    plt.close(fig)


def test_bench_without_results_dir_writes_runs_not_results(tiny, tmp_path, monkeypatch):
    """With no --results-dir the benchmark writes runs/<preset>/<preset>.json and its figures:
    the committed results/ is written only when asked for."""
    monkeypatch.chdir(tmp_path)
    cfg = dataclasses.replace(tiny, results_dir="", backbones=("cnn",), out="runs/quick")
    doc = run_bench(cfg)
    assert json.loads((tmp_path / "runs" / "quick" / "quick.json").read_text()) == doc
    assert (tmp_path / "runs" / "quick" / "figures" / "transfer.png").exists()
    assert not (tmp_path / "results").exists()


# The argument list proposed for meta.toml's gpu_smoke (the full preset at tiny size).
GPU_SMOKE_ARGS = [
    "bench", "--preset", "full", "--seeds", "0", "--budget-ranks", "2", "--tune-rank", "2",
    "--lr-grid", "0.003", "--scale-grid", "1", "--convnext-depths", "1", "1",
    "--convnext-dims", "8", "16", "--image-size", "16", "--pretrain-epochs", "1", "--epochs", "1",
    "--struct-channels", "8", "--teacher-tucker-ranks", "2", "2", "3", "3",
    "--teacher-matrix-rank", "2", "--struct-levels", "1", "2", "--struct-steps", "5",
    "--struct-batch", "8", "--quiet",
]  # fmt: skip


def test_full_preset_bench_runs_end_to_end_at_tiny_size(tmp_path, monkeypatch):
    """The gpu_smoke command on the CPU: ConvNeXt (every method, pointwise and downsampling layers)
    and ViT, claims with structured parts, one results file."""
    from flora.cli import main

    monkeypatch.chdir(tmp_path)
    argv = [*GPU_SMOKE_ARGS, "--device", "cpu", "--results-dir", "res", "--out", "run"]
    assert main(argv) == 0
    doc = json.loads((tmp_path / "res" / "full.json").read_text())
    assert doc["mode"] == "full" and doc["environment"]["device"] == "cpu"
    assert doc["claims"][0]["id"] == "convnext-flora-beats-lora"
    assert doc["claims"][-1]["id"] == "vit-linear-flora-not-worse"
    assert all(c["verdict"] == "inconclusive" and c["test"] for c in doc["claims"])
    assert set(doc["budget"]["per_budget"]["convnext"]["r2"]) >= {"FLoRA", "LoRA", "DoRA", "LoHa"}
