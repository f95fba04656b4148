"""Issue 29: blocked moves in the data, the diagnostics, the official expansion and the paired
claims with their negative control."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from leq import agents, data, maze, train
from leq.bench import gap_check
from leq.config import validate


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


def test_gates_fail_on_noise_and_on_the_negative_control():
    assert gap_check([90.0, 95.0, 92.0], [0.0, 0.0, 4.0], "beats")[0]
    assert not gap_check([100.0, 0.0, 0.0], [0.0, 0.0, 0.0], "beats")[0]  # one lucky seed
    assert not gap_check([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], "beats")[0]  # no signal
    assert gap_check([90.0, 88.0, 94.0], [92.0, 90.0, 90.0], "not-worse")[0]
    assert not gap_check([0.0, 2.0, 0.0], [92.0, 90.0, 90.0], "not-worse")[0]  # a floor fails
    assert gap_check([90.0], [0.0], "beats")[1] == "one seed: no interval"


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
