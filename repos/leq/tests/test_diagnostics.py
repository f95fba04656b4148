"""Issue 29: blocked moves in the data, the diagnostics, the official expansion and the paired
claims with their negative control."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from leq import agents, data, maze, train
from leq.bench import gap_parts
from leq.config import validate
from leq.results import verdict


def test_blocked_flags_a_move_into_a_wall_and_not_a_free_one():
    m = maze.make_maze("umaze")
    start = jnp.array([*m.start, 0.0, 0.0])  # cell (1, 1): wall to the west, free to the east
    obs = jnp.stack([start, start])
    act = jnp.array([[-1.0, 0.0], [1.0, 0.0]])
    for _ in range(5):  # accelerate until the westward move crosses into the wall cell
        hit = np.asarray(maze.blocked(m.walls, obs, act))
        if hit[0]:
            break
        obs = jax.vmap(lambda o, a: maze.move(jnp.asarray(m.walls), o, a)[0])(obs, act)
    assert hit[0] == 1.0 and hit[1] == 0.0
    nxt, flags = maze.move(jnp.asarray(m.walls), obs[0], act[0])
    assert float(nxt[2]) == 0.0 and bool(flags[0])  # stopped against the wall


def test_controller_alone_never_blocks_and_random_segments_do():
    """The issue's finding (0 blocked transitions) and its fix, at a small size."""
    plain = data.maze_dataset("umaze", "diverse", 2000, 50, seed=0)
    mixed = data.maze_dataset("umaze", "diverse", 2000, 50, seed=0, explore=(0.05, 10))
    assert data.blocked_fraction(plain, "umaze") == 0.0
    assert data.blocked_fraction(mixed, "umaze") > 0.03
    assert mixed.terminals.sum() > 0  # the data still reaches the goal
    with pytest.raises(ValueError, match="explore must be"):
        data.maze_dataset("umaze", "diverse", 400, 50, seed=0, explore=(1.5, 10))


def test_bad_explore_flags_are_clear_errors(tiny):
    with pytest.raises(ValueError, match="explore_prob"):
        validate(dataclasses.replace(tiny, explore_prob=-0.1))


def test_expansion_buffer_holds_the_rollout_start_states(tiny):
    """As the official `_rollout`: the buffer stores the states each step starts from, so its
    first block is the sampled dataset states themselves."""
    ds = train.load_data(tiny)
    wm = train.fit_world_model(tiny, ds)
    hp = train.make_hp(tiny, "LEQ", 4, 2)
    actor_p, _, _ = train.init_params(tiny, ds, jax.random.PRNGKey(0))
    states = agents.expansion_fn(hp, 8, 3, 1.0)(
        actor_p, wm, train.as_arrays(tiny, ds), jax.random.PRNGKey(1)
    )
    assert states.shape == (24, 4)
    first = np.asarray(states[:8])
    assert all(np.isclose(ds.observations, row, atol=0).all(1).any() for row in first)
    assert not np.allclose(np.asarray(states[8:16]), first)  # later steps moved on


def test_critic_normalises_state_and_action_jointly(tiny):
    ds = train.load_data(tiny)
    _, critic_p, value_p = train.init_params(tiny, ds, jax.random.PRNGKey(0))
    assert critic_p["params"]["obs_mean"].shape == (6,)  # [x, y, vx, vy, ax, ay]
    np.testing.assert_allclose(critic_p["params"]["obs_mean"][4:], ds.actions.mean(0), rtol=1e-5)
    assert value_p["params"]["obs_mean"].shape == (4,)


def gate(a, b, kind, floor=None):
    return verdict(gap_parts(a, b, kind, "LEQ", "other", floor))


def test_gates_fail_on_noise_and_on_the_negative_control():
    assert gate([90.0, 95.0, 92.0], [0.0, 0.0, 4.0], "beats") == "holds"
    assert gate([100.0, 0.0, 0.0], [0.0, 0.0, 0.0], "beats") == "inconclusive"  # one lucky seed
    assert gate([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], "beats") == "contradicted"  # no gap at all
    assert gate([25.0, 18.0, 26.0], [0.0, 0.0, 4.0], "beats") == "inconclusive"  # margin 20
    assert gate([90.0, 88.0, 94.0], [92.0, 90.0, 90.0], "not-worse") == "holds"
    assert gate([0.0, 2.0, 0.0], [92.0, 90.0, 90.0], "not-worse") == "contradicted"
    assert gate([90.0, 95.0], [0.0, 0.0], "beats") == "inconclusive"  # 2 seeds never hold
    assert gate([90.0], [0.0], "beats") == "inconclusive"  # one seed: no interval


def test_non_inferiority_needs_both_methods_above_the_bc_floor():
    """Both failing together (0 vs 0, or below the BC floor) is not non-inferiority."""
    assert gate([0.0] * 3, [0.0] * 3, "not-worse") == "holds"  # the bare margin is fooled
    assert gate([0.0] * 3, [0.0] * 3, "not-worse", floor=[0.0] * 3) == "inconclusive"
    floor = [60.0, 70.0, 65.0]
    assert gate([10.0, 5.0, 0.0], [8.0, 6.0, 0.0], "not-worse", floor) == "contradicted"
    assert gate([90.0, 88.0, 94.0], [92.0, 90.0, 90.0], "not-worse", floor) == "holds"
    parts = gap_parts([90.0, 88.0, 94.0], [92.0, 90.0, 90.0], "not-worse", "LEQ", "IQL", floor)
    assert [p["what"].split(" success")[0] for p in parts] == [
        "LEQ - IQL", "LEQ - BC floor", "IQL - BC floor"
    ]  # fmt: skip
    assert parts[1]["estimate"] == pytest.approx(77 / 3) == parts[2]["estimate"]


def test_oracle_imagines_with_the_true_maze_step(tiny):
    hp = train.make_hp(tiny, "LEQ-oracle", 4, 2)
    step = agents.dynamics_fn(hp, None)
    m = maze.make_maze("umaze")
    s, a = jnp.array([*m.start, 0.1, 0.0]), jnp.array([1.0, -0.5])
    ref = maze.step(jnp.asarray(m.walls), jnp.asarray(m.goal), s, a)
    for got, want in zip(step(s, a, jax.random.PRNGKey(0)), ref):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="needs a maze env"):
        agents.dynamics_fn(hp._replace(env="pendulum"), None)


def test_contact_weight_repeats_the_blocked_transitions_in_the_model_fit(tiny, monkeypatch):
    ds = train.load_data(tiny)
    flags = train.wall_rows(tiny.env, ds)
    assert flags.mean() == pytest.approx(data.blocked_fraction(ds, tiny.env)) and flags.any()
    seen = {}
    monkeypatch.setattr(train.wmod, "fit", lambda *a, **k: seen.setdefault("repeat", k["repeat"]))
    train.fit_world_model(dataclasses.replace(tiny, model_contact_weight=5, seed=123), ds)
    np.testing.assert_array_equal(seen["repeat"], np.where(flags, 5, 1))
