"""The PointMaze paper-preset world: layout and geometry against gymnasium-robotics, MuJoCo walls
against our wall-contact test, the goal test, a Minari dataset written from the real env and
read back, and one tiny training run on it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from leq import data, maze, pointmaze, train
from leq.config import PRESETS, validate
from leq.world_model import terminal_fn_for


@pytest.mark.parametrize("env", sorted(pointmaze.ENVS))
def test_pointmaze_layout_and_cells_equal_the_jax_maze(env):
    m = pointmaze.layout(env)
    e = pointmaze.make_env(env)
    ref = e.unwrapped.maze
    np.testing.assert_array_equal(np.array(ref.maze_map) == 1, m.walls)
    for cell in m.free_cells:
        xy = pointmaze.cell_xy(m, cell)
        np.testing.assert_allclose(xy, ref.cell_rowcol_to_xy(cell), atol=1e-6)
        np.testing.assert_array_equal(
            pointmaze.rowcol(m, xy + 0.3), ref.cell_xy_to_rowcol(xy + 0.3)
        )
    opts = pointmaze.eval_options(m)
    assert maze.LAYOUTS[env[3:]][opts["reset_cell"][0]][opts["reset_cell"][1]] == "S"
    assert maze.LAYOUTS[env[3:]][opts["goal_cell"][0]][opts["goal_cell"][1]] == "G"
    obs, _ = e.reset(seed=0, options=opts)
    assert obs.shape == (pointmaze.OBS_DIM,)
    assert np.abs(obs[:2] - pointmaze.cell_xy(m, opts["reset_cell"])).max() <= 0.25 + 1e-6
    assert np.abs(obs[4:] - pointmaze.cell_xy(m, opts["goal_cell"])).max() <= 0.25 + 1e-6
    e.close()


def test_mujoco_walls_stop_the_point_where_our_geometry_puts_them():
    """Push the point into the wall left of the umaze start: MuJoCo stops it touching the wall
    (our wall-contact test), never inside a wall cell."""
    m = pointmaze.layout("pm-umaze")
    e = pointmaze.make_env("pm-umaze")
    obs, _ = e.reset(seed=1, options=pointmaze.eval_options(m))
    assert not pointmaze.wall_contact(m, obs[None, :2])[0]
    for _ in range(60):
        obs, reward, term, _, _ = e.step(np.array([-1.0, 0.0], np.float32))
        assert not bool(pointmaze.inside_wall(m, obs[:2]))
    assert pointmaze.wall_contact(m, obs[None, :2])[0]
    assert reward == -1.0 and not term
    e.close()


def test_goal_test_matches_the_env():
    term = terminal_fn_for("pm-umaze")
    goal = np.array([0.3, -0.2])
    for dist, want in ((0.44, 1.0), (0.46, 0.0)):
        obs = np.concatenate([goal + [dist, 0.0], [0.0, 0.0], goal]).astype(np.float32)
        assert float(term(obs)) == want


def test_waypoint_controller_solves_the_real_umaze():
    m = pointmaze.layout("pm-umaze")
    goal = np.round(m.goal[::-1]).astype(int)
    target = int(np.flatnonzero((m.free_cells == goal).all(1))[0])
    ctrl = pointmaze.WaypointController(m, np.random.default_rng(0), 0.0, (0.0, 1))
    out = pointmaze.evaluate("pm-umaze", lambda o: ctrl.act(o, target), 2, 0)
    assert out["success_rate"] == 100.0 and out["episode_steps"] < 300


def test_minari_dataset_from_pointmaze_round_trip(tmp_path):
    ids = ("pointmaze/umaze-tiny-seed0-v0", "pointmaze/umaze-tiny-again-v0")
    for dataset_id in ids:
        pointmaze.collect("pm-umaze", "diverse", 400, 100, 0, (0.05, 20), tmp_path, dataset_id)
    a, b = (data.load_minari(tmp_path, i) for i in ids)
    for k in data.KEYS:  # deterministic in the seed
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
    assert a.observations.shape[1] == pointmaze.OBS_DIM and len(a.rewards) >= 400
    assert set(np.unique(a.rewards)) <= {-1.0, 0.0}
    ends = np.flatnonzero((a.terminals > 0) | (a.timeouts > 0))
    inner = np.setdiff1d(np.arange(len(a.rewards) - 1), ends)
    np.testing.assert_array_equal(a.next_observations[inner], a.observations[inner + 1])
    np.testing.assert_array_equal(a.terminals, (a.rewards == 0.0).astype(np.float32))
    assert (np.abs(a.actions) <= 1.0).all()
    assert 0.0 < pointmaze.wall_contact_fraction("pm-umaze", a.next_observations) < 0.5


def test_pointmaze_config_errors():
    with pytest.raises(ValueError, match="LEQ-oracle needs the JAX maze"):
        validate(dataclasses.replace(PRESETS["paper"], methods=("LEQ", "LEQ-oracle")))
    with pytest.raises(ValueError, match="extra_envs must name mazes"):
        validate(dataclasses.replace(PRESETS["paper"], extra_envs=("pendulum",)))
    cfg = validate(PRESETS["paper"])
    assert (cfg.env, cfg.extra_envs, cfg.horizon) == ("pm-umaze", (), 10)
    # issue 62: >= 10 seeds for success rates, IQL trained where it reaches the paper's range
    assert len(cfg.seeds) >= 10 and cfg.iql_steps == 60_000 and cfg.methods == ("LEQ", "IQL")


@pytest.mark.slow
def test_train_on_pointmaze_writes_minari_data_and_finite_metrics(tiny):
    cfg = dataclasses.replace(
        tiny, env="pm-umaze", n_transitions=600, episode_len=100, eval_episodes=2, explore_len=20
    )
    m = train.train_and_evaluate(cfg, cfg.out + "/leq", which="LEQ")
    assert np.isfinite(list(m.values())).all()
    assert 0.0 <= m["success_rate"] <= 100.0 and "model_err_nocontact" in m
    assert 0.0 <= m["imagined_wall_frac_start"] <= 1.0 and m["data_wall_contact_fraction"] > 0.0
    assert list((Path(cfg.out) / "minari" / "pointmaze").iterdir())


def test_publish_keeps_the_first_copy_and_drops_a_later_one(tmp_path):
    """Two bench workers collecting the same PointMaze dataset: the first rename wins, the
    second reports False and leaves the published folder untouched; no staging folder is left."""
    final = tmp_path / "minari" / "pointmaze" / "umaze-v0"
    for worker, text in enumerate(("first", "second")):
        staged = tmp_path / f"staging{worker}" / "pointmaze" / "umaze-v0"
        (staged / "data").mkdir(parents=True)
        (staged / "data" / "main_data.hdf5").write_text(text)
        assert train.publish(staged, final) is (worker == 0)
    assert (final / "data" / "main_data.hdf5").read_text() == "first"
    assert not (tmp_path / "staging0" / "pointmaze" / "umaze-v0").exists()


def test_pointmaze_data_leaves_no_staging_folder(tiny):
    cfg = dataclasses.replace(tiny, env="pm-umaze", n_transitions=300, episode_len=100)
    ds = train.pointmaze_data(cfg)
    root = Path(cfg.out) / "minari"
    assert len(ds.observations) >= 300 and [p.name for p in root.iterdir()] == ["pointmaze"]
    assert train.pointmaze_data(cfg).observations.shape == ds.observations.shape  # read back
