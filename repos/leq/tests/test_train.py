"""Smoke run of the entry point: artefacts, finite metrics, determinism, full preset at tiny size."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from flax import serialization

from leq import train
from leq.cli import main
from leq.config import PRESETS
from leq.networks import Actor
from leq.train import evaluate, train_and_evaluate


def test_smoke_writes_config_checkpoint_and_finite_metrics(tiny, tmp_path):
    metrics = train_and_evaluate(tiny, tmp_path / "run", which="LEQ")
    assert json.loads((tmp_path / "run" / "config.json").read_text())["steps"] == tiny.steps
    assert metrics and all(math.isfinite(v) for v in metrics.values())
    assert 0.0 <= metrics["success_rate"] <= 100.0
    # issue 29's diagnostics: blocked moves in the data, model error, imagination in walls
    assert 0.0 < metrics["data_blocked_fraction"] < 1.0
    assert 0.0 <= metrics["imagined_wall_frac_start"] <= 1.0
    assert 0.0 <= metrics["imagined_goal_rate_start"] <= 100.0
    assert metrics["model_holdout_err"] > 0.0 and metrics["model_err_blocked"] > 0.0
    assert 0.0 <= metrics["bc_success_rate"] <= 100.0
    again = evaluate(tiny, tmp_path / "run")  # reloads the saved actor and evaluates it again
    assert again["success_rate"] == metrics["success_rate"] and again["method"] == "LEQ"
    blob = serialization.msgpack_restore((tmp_path / "run" / "checkpoint.msgpack").read_bytes())
    assert set(blob) == {"actor", "critic"}


def test_eval_evaluates_the_saved_actor_not_the_metrics_file(tiny, tmp_path, capsys, monkeypatch):
    """eval reloads checkpoint.msgpack and evaluates that actor (train's numbers come back without
    metrics.json; an edited actor is what gets evaluated); a damaged checkpoint is one line."""
    run = tmp_path / "run"
    metrics = train_and_evaluate(tiny, run, which="IQL")
    (run / "metrics.json").unlink()  # eval does not need it
    assert main(["eval", "--out", str(run)]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["success_rate"] == metrics["success_rate"]
    assert again["episode_steps"] == metrics["episode_steps"] and again["method"] == "IQL"
    blob = serialization.msgpack_restore((run / "checkpoint.msgpack").read_bytes())
    last = blob["actor"]["params"]["MLP_0"][f"Dense_{tiny.layers}"]
    last["kernel"], last["bias"] = 0.0 * last["kernel"], 0.0 * last["bias"] + 0.25
    (run / "checkpoint.msgpack").write_bytes(serialization.msgpack_serialize(blob))
    seen = []
    real = train.evaluate_actor
    monkeypatch.setattr(train, "evaluate_actor", lambda c, p, *a: seen.append(p) or real(c, p, *a))
    evaluate(tiny, run)
    policy = Actor((tiny.hidden,) * tiny.layers, 2)
    np.testing.assert_allclose(policy.apply(seen[0], np.ones((3, 4))), np.tanh(0.25), rtol=1e-6)
    (run / "checkpoint.msgpack").write_bytes(b"\x00garbage")
    assert main(["eval", "--out", str(run)]) == 2
    err = capsys.readouterr().err
    assert "checkpoint.msgpack: corrupt checkpoint" in err and len(err.strip().splitlines()) == 1


def test_same_seed_same_numbers(tiny, tmp_path):
    for method in ("LEQ", "IQL"):
        a = train_and_evaluate(tiny, tmp_path / f"a{method}", which=method)
        b = train_and_evaluate(tiny, tmp_path / f"b{method}", which=method)
        assert a == b


@pytest.mark.slow
def test_pendulum_and_ablations_run(tiny, tmp_path):
    cfg = dataclasses.replace(tiny, env="pendulum", n_transitions=1000)
    m = train_and_evaluate(cfg, tmp_path / "p", which="LEQ-onestep")
    assert math.isfinite(m["normalized_return"])
    m = train_and_evaluate(tiny, tmp_path / "t", which="LEQ-tau0.5")
    assert math.isfinite(m["success_rate"])


@pytest.mark.slow
def test_full_preset_runs_one_step_at_tiny_size(tmp_path):
    """The full preset's structure (H = 10, 7 members / 5 elites, large maze) at tiny widths."""
    full = dataclasses.replace(
        PRESETS["full"], device="cpu", quiet=True, n_transitions=2000, episode_len=50,
        eval_episodes=4, hidden=8, layers=1, model_hidden=8, model_layers=1, model_steps=100,
        bc_steps=1, steps=1, batch=8, rollout_every=1, rollout_states=16,
    )  # fmt: skip
    assert full.horizon == 10 and full.env == "large"
    metrics = train_and_evaluate(full, tmp_path, which="LEQ")
    assert math.isfinite(metrics["success_rate"])


@pytest.mark.parametrize(("steps", "every"), [(3000, 500), (20, 10), (25, 10), (7, 10), (1, 1)])
def test_update_chunks_add_up_to_the_steps(steps, every):
    """Training runs exactly cfg.steps updates, in chunks of at most rollout_every."""
    chunks = train.chunk_lengths(steps, every)
    assert sum(chunks) == steps and all(0 < c <= every for c in chunks)
    assert len(chunks) == -(-steps // every)  # one world-model expansion per chunk


def test_each_method_trains_with_its_own_tau_and_beta():
    """LEQ and its ablations use --tau/--beta (LEQ-tau0.5: tau 0.5), the one-step model-based
    baseline --mb-tau/--mb-beta: the numbers handed to the jitted update."""
    cfg = dataclasses.replace(PRESETS["quick"], tau=0.2, beta=0.3, mb_tau=0.6, mb_beta=0.9)
    expected = {
        "LEQ": (0.2, 0.3),
        "LEQ-onestep": (0.2, 0.3),
        "LEQ-oracle": (0.2, 0.3),
        "LEQ-tau0.5": (0.5, 0.3),
        "MB-onestep": (0.6, 0.9),
    }
    assert {m: train.tau_beta(cfg, m) for m in expected} == expected


def other_sized_dataset(obs_dim: int = 7, act_dim: int = 3, n: int = 600) -> train.Dataset:
    """Random episodes of 30 steps in a space of other dimensions (like a D4RL AntMaze
    conversion: 29-D observations, 8-D actions), with a sparse terminal reward."""
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(n, obs_dim)).astype(np.float32)
    act = rng.uniform(-1, 1, size=(n, act_dim)).astype(np.float32)
    nxt = obs + 0.1 * np.pad(act, ((0, 0), (0, max(0, obs_dim - act_dim))))[:, :obs_dim]
    ends = (np.arange(n) % 30) == 29
    term = (ends & (rng.uniform(size=n) < 0.5)).astype(np.float32)
    return train.Dataset(obs, act, term - 1.0, nxt, term, (ends & (term == 0)).astype(np.float32))


@pytest.mark.parametrize("method", ["LEQ", "IQL"])
def test_user_minari_dataset_of_other_dimensions_trains_and_eval_says_why_not(
    tiny, tmp_path, method, capsys
):
    """A user's Minari dataset whose dimensions fit no built-in env trains (generic networks,
    world model and expansion; no termination) and `eval` refuses it in one line."""
    from leq import data

    data.write_minari(other_sized_dataset(), tmp_path / "minari", "user/other-v0")
    cfg = dataclasses.replace(
        tiny, dataset_path=str(tmp_path / "minari"), dataset_id="user/other-v0", method=method
    )
    out = tmp_path / method
    metrics = train_and_evaluate(cfg, out)
    assert metrics["evaluated"] == 0.0 and "success_rate" not in metrics
    assert all(math.isfinite(v) for v in metrics.values())
    if method == "LEQ":
        assert metrics["model_holdout_err"] > 0 and "bc_success_rate" not in metrics
    with pytest.raises(ValueError, match=r"7-D observations and 3-D actions.*no environment"):
        evaluate(cfg, out)
    assert main(["eval", "--out", str(out)]) == 2
    assert "no environment here to evaluate it in" in capsys.readouterr().err
