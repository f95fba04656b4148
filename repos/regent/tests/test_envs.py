"""Environments, experts and the demonstration files."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from regent.data import load_demos, rollout_expert, save_demos
from regent.envs import make_env, make_tasks
from regent.train import expert_policy, normalise, random_policy, run_episodes


@pytest.mark.parametrize("family", ["point", "grid"])
def test_envs_pass_gymnasium_checker(family):
    check_env(make_env(make_tasks(family, 1, seed=0)[0]), skip_render_check=True)


@pytest.mark.parametrize("family", ["point", "grid"])
def test_expert_beats_random(family):
    for task in make_tasks(family, 3, seed=5):
        expert = run_episodes(task, expert_policy, 6, seed=11)
        rand = run_episodes(task, random_policy(0), 6, seed=11)
        assert expert > rand + 0.1
        assert normalise(expert, rand, expert) == pytest.approx(1.0)


def test_grid_expert_reaches_goal_by_shortest_path():
    env = make_env(make_tasks("grid", 1, seed=2)[0])
    obs, _ = env.reset(seed=0)
    start_dist = env._dist[env._cell]
    for t in range(1, env.horizon + 1):
        obs, reward, terminated, _truncated, _ = env.step(env.expert_action(obs))
        if terminated:
            break
    assert terminated and t == start_dist and reward == pytest.approx(1 - 0.9 * t / env.horizon)


def test_goal_is_absent_from_observation():
    a, b = make_tasks("point", 2, seed=0)
    oa, _ = make_env(a).reset(seed=4)
    ob, _ = make_env(b).reset(seed=4)
    np.testing.assert_array_equal(oa, ob)  # same start, different goals, same observation


def test_demos_are_deterministic_and_round_trip(tmp_path):
    task = make_tasks("grid", 1, seed=1)[0]
    a, b = rollout_expert(task, 3, seed=9, noise=0.2), rollout_expert(task, 3, seed=9, noise=0.2)
    assert all(
        np.array_equal(getattr(a, f), getattr(b, f)) for f in ("obs", "act", "rew", "episode")
    )
    save_demos(tmp_path / "d.npz", a)
    c = load_demos(tmp_path / "d.npz")
    assert c.discrete and all(
        np.array_equal(getattr(a, f), getattr(c, f)) for f in ("obs", "act", "rew")
    )


def test_load_demos_rejects_bad_files(tmp_path):
    np.savez(tmp_path / "bad.npz", obs=np.zeros((3, 2)), act=np.zeros(3))
    with pytest.raises(ValueError, match=r"missing arrays \['episode', 'rew'\]"):
        load_demos(tmp_path / "bad.npz")
    np.savez(
        tmp_path / "bad2.npz",
        obs=np.zeros((3, 2)),
        act=np.zeros(2),
        rew=np.zeros(3),
        episode=np.zeros(3),
    )
    with pytest.raises(ValueError, match="must have N rows"):
        load_demos(tmp_path / "bad2.npz")
