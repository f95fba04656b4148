"""Maze and pendulum dynamics, dataset generation, the Minari round trip and bad datasets."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import h5py
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from leq import agents, data, maze, pendulum, train
from leq.config import PRESETS


@pytest.mark.parametrize("name", ["umaze", "medium", "large"])
def test_maze_walls_are_never_crossed(name):
    m = maze.make_maze(name)
    walls, goal = jnp.asarray(m.walls), jnp.asarray(m.goal) + 100.0  # no termination
    free = m.free_cells
    xy = jnp.asarray(free[np.arange(64) % len(free)][:, ::-1], jnp.float32)
    obs = jnp.concatenate([xy, jnp.zeros_like(xy)], 1)
    step = jax.jit(jax.vmap(maze.step, in_axes=(None, None, 0, 0)))
    key = jax.random.PRNGKey(0)
    for _ in range(300):
        key, k = jax.random.split(key)
        obs, _, _ = step(walls, goal, obs, jax.random.uniform(k, (64, 2), minval=-1, maxval=1))
        assert not np.asarray(maze.is_wall(walls, obs[:, :2])).any()
    assert float(jnp.abs(obs[:, 2:]).max()) < 0.5  # a step never covers a whole cell


def test_goal_terminates_with_shifted_reward():
    m = maze.make_maze("umaze")
    walls, goal = jnp.asarray(m.walls), jnp.asarray(m.goal)
    near = jnp.array([*m.goal, 0.0, 0.0]) + jnp.array([0.3, 0.0, 0.0, 0.0])
    _, r, d = maze.step(walls, goal, near, jnp.array([-1.0, 0.0]))
    assert float(r) == 0.0 and float(d) == 1.0
    far = jnp.array([*m.start, 0.0, 0.0])
    _, r, d = maze.step(walls, goal, far, jnp.zeros(2))
    assert float(r) == -1.0 and float(d) == 0.0


def test_maze_data_is_deterministic_and_needs_stitching():
    a = data.maze_dataset("umaze", "diverse", 2000, 50, seed=3)
    b = data.maze_dataset("umaze", "diverse", 2000, 50, seed=3)
    c = data.maze_dataset("umaze", "diverse", 2000, 50, seed=4)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not np.array_equal(a.observations, c.observations)
    m = maze.make_maze("umaze")
    starts = [a.observations[s] for s, _ in data._episode_bounds(a)]
    assert all(np.linalg.norm(s[:2] - m.start) > 0.5 for s in starts)  # none starts at S
    ends = (a.terminals > 0) == np.asarray(maze.at_goal(jnp.asarray(m.goal), a.next_observations))
    assert ends.all()
    play = data.maze_dataset("umaze", "play", 2000, 50, seed=3)
    assert np.isin(play.rewards, [-1.0, 0.0]).all()


def test_pendulum_data_is_deterministic_per_seed():
    a, b = data.pendulum_dataset(400, seed=5), data.pendulum_dataset(400, seed=5)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not np.array_equal(a.actions, data.pendulum_dataset(400, seed=6).actions)


def test_pendulum_matches_gymnasium():
    env = gym.make("Pendulum-v1")
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(50):
        a = rng.uniform(-1, 1, size=1)
        ref_obs, ref_r, *_ = env.step(2.0 * a)
        ours, r, _ = pendulum.step(jnp.asarray(obs), jnp.asarray(a, jnp.float32))
        np.testing.assert_allclose(ours, ref_obs, atol=1e-4)
        assert abs(float(r) - ref_r) < 1e-3
        obs = ref_obs


def test_minari_round_trip(tmp_path):
    ds = data.maze_dataset("umaze", "play", 600, 30, seed=0)
    data.write_minari(ds, tmp_path, "pointmaze/umaze-play-v0")
    back = data.load_minari(tmp_path, "pointmaze/umaze-play-v0")
    for name in data.KEYS:
        np.testing.assert_array_equal(getattr(back, name), getattr(ds, name), err_msg=name)


def test_bad_datasets_raise_clear_errors(tmp_path):
    ds = data.maze_dataset("umaze", "play", 600, 30, seed=0)
    arrays = ds._asdict()
    with pytest.raises(ValueError, match=r"missing keys \['actions'\]"):
        data.validate({k: v for k, v in arrays.items() if k != "actions"})
    with pytest.raises(ValueError, match="rewards has"):
        data.validate({**arrays, "rewards": arrays["rewards"][:-1]})
    data.write_minari(ds, tmp_path, "pointmaze/bad-v0")
    files = list((tmp_path / "pointmaze" / "bad-v0").rglob("*.hdf5"))
    with h5py.File(files[0], "a") as fh:
        del fh["episode_0"]["actions"]
    with pytest.raises(ValueError, match="cannot read|episode"):
        data.load_minari(tmp_path, "pointmaze/bad-v0")
    with pytest.raises(ValueError, match="cannot read"):
        data.load_minari(tmp_path, "pointmaze/absent-v0")


@pytest.mark.parametrize(
    ("key", "cut", "message"),
    [
        ("rewards", lambda v: v[:-3], "episode 1 has 27 rewards for 30 actions"),
        ("observations", lambda v: v[:, :3], r"expected \(31, 4\) for 30 actions"),
        ("observations", lambda v: v[:-1], r"expected \(31, 4\) for 30 actions"),
    ],
)
def test_minari_file_with_mismatched_shapes_is_a_clear_error(tmp_path, key, cut, message):
    ds = data.maze_dataset("umaze", "play", 600, 30, seed=0)
    data.write_minari(ds, tmp_path, "pointmaze/shapes-v0")
    files = list((tmp_path / "pointmaze" / "shapes-v0").rglob("*.hdf5"))
    with h5py.File(files[0], "a") as fh:
        value = fh["episode_1"][key][:]
        del fh["episode_1"][key]
        fh["episode_1"][key] = cut(value)
    with pytest.raises(ValueError, match=message):
        data.load_minari(tmp_path, "pointmaze/shapes-v0")


@pytest.mark.slow  # integration: data + eval of the scripted controller
def test_umaze_data_reaches_goal_and_eval_is_solvable():
    """The behaviour data reaches the eval goal, the scripted goal controller solves the eval,
    a do-nothing policy does not (the success metric is neither always 0 nor always 100)."""
    ds = data.maze_dataset("umaze", "diverse", 4000, 50, seed=0)
    assert ds.terminals.sum() > 0 and (ds.rewards[ds.terminals > 0] == 0).all()
    m = maze.make_maze("umaze")
    key = jax.random.PRNGKey(0)
    assert maze.evaluate_policy(m, maze.goal_controller(m), key, 16)["success_rate"] == 100.0
    still = maze.evaluate_policy(m, lambda o: jnp.zeros((o.shape[0], 2)), key, 16)
    assert still["success_rate"] == 0.0


@pytest.mark.slow  # integration: BC training + eval
def test_bc_of_goal_controller_solves_eval_through_evaluate_actor():
    """A trained actor is evaluated deterministically with its own observation normalisation:
    cloning the scripted goal controller on dataset states must score > 0 via evaluate_actor."""
    ds = data.maze_dataset("umaze", "diverse", 4000, 50, seed=0)
    m = maze.make_maze("umaze")
    ds = ds._replace(actions=np.asarray(maze.goal_controller(m)(jnp.asarray(ds.observations))))
    cfg = dataclasses.replace(PRESETS["quick"], hidden=32, layers=2, eval_episodes=16)
    actor_p, _, _ = train.init_params(cfg, ds, jax.random.PRNGKey(0))
    actor_p = agents.bc_fn((32, 32), 2, 64, 1500, 3e-3)(
        actor_p, train.as_arrays(cfg, ds), jax.random.PRNGKey(1)
    )
    assert train.evaluate_actor(cfg, actor_p, 2, jax.random.PRNGKey(2))["success_rate"] > 50.0


# gymnasium-robotics 1.4.2 `gymnasium_robotics/envs/maze/maps.py` (U_MAZE, MEDIUM_MAZE,
# LARGE_MAZE; 1 = wall), transcribed: the JAX maze must have PointMaze's layouts.
POINTMAZE_MAPS = {
    "umaze": ["11111", "10001", "11101", "10001", "11111"],
    "medium": ["11111111", "10011001", "10010001", "11000111", "10010001", "10100101",
               "10001001", "11111111"],
    "large": ["111111111111", "100001000001", "101101010101", "100000010001", "101111011101",
              "100101000001", "110101010111", "100100010001", "111111111111"],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(POINTMAZE_MAPS))
def test_maze_layouts_equal_pointmaze_maps(name):
    ref = np.array([[c == "1" for c in row] for row in POINTMAZE_MAPS[name]])
    np.testing.assert_array_equal(maze.make_maze(name).walls, ref)
