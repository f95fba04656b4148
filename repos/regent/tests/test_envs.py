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


@pytest.mark.parametrize("regime", ["easy", "hard"])
@pytest.mark.parametrize("family", ["point", "grid"])
def test_expert_beats_random(family, regime):
    for task in make_tasks(family, 3, seed=5, regime=regime):
        expert = run_episodes(task, expert_policy, 6, seed=11).mean()
        rand = run_episodes(task, random_policy(0), 6, seed=11).mean()
        assert expert > rand + 0.1
        assert normalise(expert, rand, expert) == pytest.approx(1.0)


@pytest.mark.parametrize("regime", ["easy", "hard"])
def test_grid_expert_reaches_goal_by_shortest_path(regime):
    env = make_env(make_tasks("grid", 1, seed=2, regime=regime)[0])
    obs, _ = env.reset(seed=0)
    start_dist = env._dist[env._cell]
    for t in range(1, env.horizon + 1):
        obs, reward, terminated, _truncated, _ = env.step(env.expert_action(obs))
        if terminated:
            break
    assert terminated and t == start_dist and reward == pytest.approx(1 - 0.9 * t / env.horizon)


def test_hard_regime_has_longer_horizons_and_larger_grids():
    easy_p, hard_p = (make_tasks("point", 1, 0, r)[0] for r in ("easy", "hard"))
    easy_g, hard_g = (make_tasks("grid", 1, 0, r)[0] for r in ("easy", "hard"))
    assert hard_p.horizon > 2 * easy_p.horizon and hard_p.gain < easy_p.gain
    assert hard_g.size > easy_g.size and hard_g.horizon >= 2 * easy_g.horizon
    assert make_env(hard_g).observation_space.shape == (6,)
    env = make_env(hard_p)  # position, velocity, 4 distractors redrawn every step
    first, _ = env.reset(seed=0)
    second = env.step(np.zeros(2))[0]
    assert first.shape == (8,) and (first[4:] != second[4:]).all()
    assert np.array_equal(first[2:4], np.zeros(2)) and hard_p.inertia > 0
    with pytest.raises(ValueError, match="regime must be one of"):
        make_tasks("grid", 1, 0, "medium")


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


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (lambda p: p.write_bytes(b"not a zip"), "not an .npz archive"),
        (
            lambda p: (
                np.save(p.with_suffix(".npy"), np.zeros(3)) or p.with_suffix(".npy").rename(p)
            ),
            "holds a single array",
        ),
        (
            lambda p: np.savez(
                p,
                obs=np.array([{}], dtype=object),
                act=np.zeros(1),
                rew=np.zeros(1),
                episode=np.zeros(1, int),
            ),
            "must be numeric arrays",
        ),
        (
            lambda p: np.savez(
                p, obs=np.zeros((2, 2)), act=np.zeros(2), rew=np.zeros(2), episode=-np.ones(2, int)
            ),
            "non-negative integer ids",
        ),
    ],
)
def test_junk_npz_is_a_one_line_error_naming_the_file(tmp_path, write, message):
    path = tmp_path / "junk.npz"
    write(path)
    with pytest.raises(ValueError, match=message) as info:
        load_demos(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ValueError, match="no such file"):
        load_demos(tmp_path / "missing.npz")


def test_normalise_maps_random_to_0_and_expert_to_1():
    assert normalise(np.array([2.0, 6.0, 4.0]), 2.0, 6.0).tolist() == [0.0, 1.0, 0.5]
    assert normalise(-1.0, -3.0, 1.0) == 0.5  # negative returns (the point family's)


def test_take_episodes_keeps_exactly_the_first_k():
    from regent.data import take_episodes

    demos = rollout_expert(make_tasks("point", 1, seed=0)[0], 4, seed=0, noise=0.1)
    few = take_episodes(demos, 2)
    assert few.n_episodes == 2 and set(few.episode.tolist()) == {0, 1}
    assert len(few) == int((demos.episode < 2).sum())
