"""Meta-World: the held-out split, seeded start states, scripted demonstrations and REGENT acting
on the 39-d observations (one task, a few steps)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from regent.bench import metaworld_claim, metaworld_tables
from regent.config import validate
from regent.meta_world import (
    HELD_OUT,
    TaskPool,
    all_tasks,
    collect_demos,
    evaluate_metaworld,
    pretraining_tasks,
    reload_metaworld,
    score_metaworld,
)
from regent.pretrain import new_model, regent_policy
from regent.retrieval import Retriever


def test_held_out_tasks_are_never_pretraining_tasks():
    assert len(all_tasks()) == 50 and set(HELD_OUT) <= set(all_tasks())
    for n in range(1, 46):
        tasks = pretraining_tasks(n)
        assert len(set(tasks)) == n and not set(tasks) & set(HELD_OUT)
    assert sorted(pretraining_tasks(45)) == sorted(set(all_tasks()) - set(HELD_OUT))
    with pytest.raises(ValueError, match="mw_train_tasks"):
        pretraining_tasks(46)


def test_bad_metaworld_settings_are_named(tiny):
    with pytest.raises(ValueError, match="mw_train_tasks"):
        validate(dataclasses.replace(tiny, mw_train_tasks=46))
    with pytest.raises(ValueError, match="mw_demo_counts"):
        validate(dataclasses.replace(tiny, mw_demo_counts=(0, 5)))
    with pytest.raises(ValueError, match="unknown Meta-World task 'reach-v9'"):
        TaskPool("reach-v9", 1, 5)


def test_seeded_start_states_are_paired():
    pool = TaskPool("reach-v3", 2, 5)
    first, again, other = pool.reset(7), pool.reset(7), pool.reset(8)
    assert first.shape == (2, 39) and first.dtype == np.float32
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first[0], first[1])  # episodes of one batch start apart
    assert not np.allclose(first, other)


def test_scripted_demos_and_regent_act_on_metaworld(tiny):
    pool = TaskPool("reach-v3", 2, 10)
    demos, rate = collect_demos(pool, 3, noise=0.1, seed=0)  # batches of 2 and 1 episodes
    assert demos.obs.shape == (30, 39) and demos.act.shape == (30, 4)
    assert np.abs(demos.act).max() <= 1 and list(np.bincount(demos.episode)) == [10, 10, 10]
    assert demos.rew[0] == 0 and demos.rew[1:10].min() > 0 and 0 <= rate <= 1
    cfg = dataclasses.replace(tiny, metaworld=True)
    model = new_model(39, "metaworld", cfg).eval()
    retriever = Retriever(demos, cfg.normaliser, cfg.n_retrieved)
    act = regent_policy(model, retriever, cfg.n_retrieved, True, cfg)
    # a query that is a demonstration state has d = 0: REGENT plays R&P's action exactly
    np.testing.assert_allclose(
        act(demos.obs[:3], demos.rew[:3], []), retriever.rp_action(demos.obs[:3])
    )
    returns, success, _ = pool.run(lambda o, r: act(o, r, []), seed=3)
    assert returns.shape == (2,) and np.isfinite(returns).all() and success.dtype == bool


def test_metaworld_evaluation_smoke(tiny, tmp_path):
    cfg = dataclasses.replace(tiny, metaworld=True, mw_rp_demo_counts=(2, 3))
    metrics, eps = evaluate_metaworld(cfg, tmp_path)
    for m in ("REGENT", "R&P", "MT-BC", "BC-scratch", "REGENT-untrained"):
        for k in cfg.mw_demo_counts:
            assert eps[f"{m}/k{k}"].shape == (len(HELD_OUT) * cfg.mw_eval_episodes,)
            assert set(np.unique(eps[f"success/{m}/k{k}"])) <= {0.0, 1.0}
            assert np.isfinite(metrics[f"{m}/metaworld/k{k}"])
    np.testing.assert_array_equal(eps["MT-BC/k1"], eps["MT-BC/k2"])  # ignores the demos
    assert np.isfinite(metrics["REGENT/metaworld-seen/k2"]) and "R&P/metaworld-seen/k2" in metrics
    for task in HELD_OUT:
        assert f"success_rate/scripted expert/metaworld/{task}" in metrics
    claim, control, rp_row = metaworld_claim(cfg, _regrouped(metrics), eps)
    assert claim["control"].startswith(control["id"]) and claim["verdict"] != "holds"
    # the paper's R&P row: R&P alone at extra counts, from the same demonstrations' first k
    assert eps["R&P/k3"].shape == eps["R&P/k2"].shape and "REGENT/k3" not in eps
    assert rp_row["id"] == "metaworld-rp-row-matches-paper" and len(rp_row["test"]) == 2
    assert [p["direction"] for p in rp_row["test"]] == [">", "<"]
    assert (
        metaworld_tables(cfg, _regrouped(metrics), eps)["rp_row"]["all"]["k3"]
        == (metrics["R&P/metaworld/k3"])
    )
    assert any("REGENT-untrained" in p["what"] for p in control["test"])
    # eval's path: the saved REGENT and MT-BC checkpoints, reloaded, score the same again
    again, again_eps = score_metaworld(cfg, *reload_metaworld(cfg, tmp_path))
    scored = [k for k in again if not k.startswith("env_steps_per_s/")]
    assert all(again[k] == metrics[k] for k in scored) and "REGENT/metaworld/k2" in scored
    np.testing.assert_array_equal(again_eps["REGENT/k2"], eps["REGENT/k2"])


def _regrouped(metrics):
    from regent.bench import regroup

    return regroup([metrics])
