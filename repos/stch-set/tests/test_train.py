"""Entry point: artefacts, finite metrics, determinism, the schedule-free swap, full preset tiny."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
import schedulefree
import torch

from stch_set.config import PRESETS
from stch_set.train import averaged_weights, evaluate, run_seeds, smoothing, train_and_evaluate


@pytest.mark.parametrize("method", ["stch-set", "tch-set", "som", "stch", "tch", "ls", "nsga3"])
def test_smoke_every_method_writes_config_and_finite_metrics(tiny, tmp_path, method):
    cfg = dataclasses.replace(tiny, method=method)
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["method"] == method
    assert set(metrics) == {"worst", "average", "seconds"}
    assert all(math.isfinite(v) for v in metrics.values())
    assert 0 <= metrics["average"] <= metrics["worst"]
    again = evaluate(tiny, tmp_path / "run")  # reloads the saved solutions, rebuilds the problem
    assert again == {"worst": metrics["worst"], "average": metrics["average"]}


@pytest.mark.parametrize("problem", ["linear", "nonlinear"])
def test_same_seed_same_numbers(tiny, tmp_path, problem):
    cfg = dataclasses.replace(tiny, problem=problem)
    a, b = train_and_evaluate(cfg, tmp_path / "a"), train_and_evaluate(cfg, tmp_path / "b")
    assert (a["worst"], a["average"]) == (b["worst"], b["average"])
    c = train_and_evaluate(dataclasses.replace(cfg, seed=1), tmp_path / "c")
    assert c["worst"] != a["worst"]


@pytest.mark.parametrize("problem", ["quadratic", "nonlinear"])
@pytest.mark.parametrize("method", ["stch-set", "tch-set", "stch"])
def test_seeds_batched_together_equal_each_seed_alone(tiny, problem, method):
    """The seed batch is one tensor program, but no seed sees another (SGD-SF and AdamW-SF)."""
    together = run_seeds(tiny, problem, method, (0, 1, 2), tiny.m, tiny.k)
    for i, seed in enumerate((0, 1, 2)):
        alone = run_seeds(tiny, problem, method, (seed,), tiny.m, tiny.k)
        for key in ("worst", "average"):
            assert together[key][i] == pytest.approx(alone[key][0], rel=1e-4, abs=1e-6)


def test_eval_scores_the_saved_solutions_not_the_metrics_file(tiny, tmp_path):
    from safetensors.torch import load_file, save_file

    cfg = dataclasses.replace(tiny, problem="nonlinear", seed=1)
    metrics = train_and_evaluate(cfg, tmp_path)
    (tmp_path / "metrics.json").unlink()
    # eval takes the problem from the run's config.json, not from its own flags
    assert evaluate(PRESETS["quick"], tmp_path)["worst"] == metrics["worst"]
    saved = load_file(str(tmp_path / "solutions.safetensors"))
    save_file({k: v * 0 for k, v in saved.items()}, str(tmp_path / "solutions.safetensors"))
    assert evaluate(tiny, tmp_path)["worst"] != metrics["worst"]
    save_file({"param0": saved["param0"][:1]}, str(tmp_path / "solutions.safetensors"))
    with pytest.raises(ValueError, match="solutions.safetensors: solutions do not fit"):
        evaluate(tiny, tmp_path)


def test_official_init_is_a_different_start_of_the_same_problem(tiny, tmp_path):
    ours = run_seeds(tiny, "linear", "stch-set", (1,), tiny.m, tiny.k, init="ours")
    official = run_seeds(tiny, "linear", "stch-set", (1,), tiny.m, tiny.k, init="official")
    assert ours["untrained"] != official["untrained"] and ours["truth"] == official["truth"]
    cfg = dataclasses.replace(tiny, problem="linear", init="official", seed=1)
    assert train_and_evaluate(cfg, tmp_path)["worst"] == pytest.approx(official["worst"][0])


def test_train_pins_torch_threads(tiny, tmp_path):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        train_and_evaluate(dataclasses.replace(tiny, threads=1), tmp_path)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_train_on_a_csv_problem(tiny, tmp_path):
    rows = torch.rand(12, 5, generator=torch.Generator().manual_seed(0))
    path = tmp_path / "mine.csv"
    path.write_text("\n".join(",".join(f"{v:.6f}" for v in r) for r in rows.tolist()))
    cfg = dataclasses.replace(tiny, problem_file=str(path), m=None, k=3, steps=200)
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    untrained = run_seeds(dataclasses.replace(cfg, steps=1), "user", "stch-set", (0,), None, 3)
    assert 0 <= metrics["worst"] < untrained["untrained"]["worst"][0]


def test_schedule_free_evaluates_at_averaged_weights():
    x = torch.nn.Parameter(torch.tensor([3.0, -1.0]))
    opt = schedulefree.SGDScheduleFree([x], lr=0.1)
    opt.train()
    for _ in range(5):
        opt.zero_grad()
        (x**2).sum().backward()
        opt.step()
    train_point = x.detach().clone()
    with averaged_weights(opt):
        averaged = x.detach().clone()
    assert not torch.allclose(train_point, averaged)
    assert torch.equal(x.detach(), train_point)  # swapped back for further training


def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    full = dataclasses.replace(
        PRESETS["full"], device="cpu", problem="deep", m=6, k=2, n_dim=3, steps=1, quiet=True
    )
    metrics = train_and_evaluate(full, tmp_path)
    assert math.isfinite(metrics["worst"])
    assert json.loads((tmp_path / "config.json").read_text())["k_sweep"] == [3, 5, 10, 15, 20]


def test_history_steps_and_its_last_point_is_the_final_set(tiny):
    """The history records the averaged weights after steps every, 2 every, ..., steps; its last
    point is the returned set's worst case."""
    res = run_seeds(
        dataclasses.replace(tiny, steps=20), "quadratic", "stch-set", (0, 1), check_every=5
    )
    assert [step for step, _ in res["history"]] == [5, 10, 15, 20]
    assert res["history"][-1][1] == pytest.approx(res["worst"], rel=1e-6)


def test_annealed_mu_starts_at_one_on_step_zero_as_the_official_script():
    cfg = PRESETS["quick"]
    assert smoothing(cfg, True, 0) == 1.0
    assert smoothing(cfg, True, 1000) == pytest.approx(math.exp(-0.3))
    assert smoothing(cfg, False, 1000) == cfg.mu
