"""The real environment of the paper preset: gymnasium-robotics PointMaze (MuJoCo walls).

`pm-umaze` and `pm-medium` are PointMaze_UMaze-v3 and PointMaze_Medium-v3 with D4RL's eval
start and goal cells (the S and G of `leq.maze.LAYOUTS`, which equal PointMaze's maps, tested).
The agent sees 6 numbers: PointMaze's observation (x, y, vx, vy) and the desired goal (x, y),
which carries the env's +-0.25 goal noise. Reward is the env's sparse reward (1 within 0.45 of
the goal) shifted by -1 as in the paper's AntMaze; reaching the goal terminates
(`continuing_task=False`). Behaviour data is a noisy BFS-waypoint controller with random-action
segments, stepped in the real env through Minari's `DataCollector` and written as a local Minari
dataset; training reads it back through `leq.data.load_minari`.
"""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path

import gymnasium as gym
import jax.numpy as jnp
import numpy as np

from . import maze as mz

ENVS = {"pm-umaze": ("PointMaze_UMaze-v3", "umaze"), "pm-medium": ("PointMaze_Medium-v3", "medium")}
EVAL_STEPS = {"pm-umaze": 300, "pm-medium": 600}  # the registered max_episode_steps
GOAL_DIST = 0.45  # PointMaze's success / termination distance
RADIUS = 0.1  # the point's sphere radius (point.xml): it touches a wall within this distance
OBS_DIM = 6


def layout(env: str) -> mz.Maze:
    if env not in ENVS:
        raise ValueError(f"unknown PointMaze task {env!r}; expected one of {sorted(ENVS)}")
    return mz.make_maze(ENVS[env][1])


def cell_xy(m: mz.Maze, rowcol) -> np.ndarray:
    """PointMaze's xy of cell centres (row, col): x grows with col, y falls with row."""
    rc = np.asarray(rowcol, np.float32)
    rows, cols = m.walls.shape
    return np.stack([rc[..., 1] + 0.5 - cols / 2, rows / 2 - rc[..., 0] - 0.5], -1)


def rowcol(m: mz.Maze, xy):
    """(row, col) of the cell holding PointMaze xy, clipped to the grid (numpy or jax)."""
    lib = jnp if isinstance(xy, jnp.ndarray) else np
    rows, cols = m.walls.shape
    r = lib.clip(lib.floor(rows / 2 - xy[..., 1]).astype(lib.int32), 0, rows - 1)
    c = lib.clip(lib.floor(xy[..., 0] + cols / 2).astype(lib.int32), 0, cols - 1)
    return r, c


def inside_wall(m: mz.Maze, xy: jnp.ndarray) -> jnp.ndarray:
    r, c = rowcol(m, xy)
    return jnp.asarray(m.walls)[r, c]


def wall_contact(m: mz.Maze, xy: np.ndarray, margin: float = 0.02) -> np.ndarray:
    """True where the point at xy (n, 2) touches a wall cell (distance <= radius + margin)."""
    r, c = rowcol(m, xy)
    rows, cols = m.walls.shape
    touch = np.zeros(len(xy), bool)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            rr, cc = np.clip(r + dr, 0, rows - 1), np.clip(c + dc, 0, cols - 1)
            centre = cell_xy(m, np.stack([rr, cc], -1))
            gap = np.maximum(np.abs(xy - centre) - 0.5, 0.0)
            touch |= m.walls[rr, cc] & (np.linalg.norm(gap, axis=-1) <= RADIUS + margin)
    return touch


def terminal_fn(obs: jnp.ndarray) -> jnp.ndarray:
    """The env's goal test on the agent's observation (position vs the desired goal)."""
    return (jnp.linalg.norm(obs[..., :2] - obs[..., 4:6], axis=-1) <= GOAL_DIST).astype(jnp.float32)


def make_env(env: str, max_steps: int | None = None):
    """The gymnasium env, wrapped to give 6-number observations and the -1 reward shift."""
    import gymnasium_robotics

    gym.register_envs(gymnasium_robotics)
    layout(env)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = gym.make(
            ENVS[env][0],
            continuing_task=False,
            reset_target=False,
            max_episode_steps=max_steps or EVAL_STEPS[env],
        )
    return _FlatGoal(base)


def _flat(o: dict) -> np.ndarray:
    return np.concatenate([o["observation"], o["desired_goal"]]).astype(np.float32)


class _FlatGoal(gym.Wrapper):
    """obs = [x, y, vx, vy, goal_x, goal_y]; reward = sparse reward - 1."""

    def __init__(self, env):
        super().__init__(env)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32)

    def reset(self, **kwargs):
        o, info = self.env.reset(**kwargs)
        return _flat(o), info

    def step(self, action):
        o, r, term, trunc, info = self.env.step(action)
        return _flat(o), float(r) - 1.0, term, trunc, info


def eval_options(m: mz.Maze) -> dict:
    """Reset at the eval start cell with the eval goal cell (D4RL's S and G)."""
    start = np.round(m.start[::-1]).astype(int)
    goal = np.round(m.goal[::-1]).astype(int)
    return {"reset_cell": start, "goal_cell": goal}


class WaypointController:
    """Noisy BFS-waypoint controller in PointMaze coordinates: aim for the centre of the next
    cell on a shortest path to a target cell with a speed-limited velocity, plus Gaussian
    action noise; random-action segments (one uniform action held `seg_len` steps, started
    with probability `prob` per step) make it run into walls."""

    def __init__(self, m: mz.Maze, rng: np.random.Generator, noise: float, explore):
        self.m, self.rng, self.noise = m, rng, noise
        self.prob, self.seg_len = explore
        self.index = -np.ones(m.walls.shape, np.int32)
        self.index[m.free_cells[:, 0], m.free_cells[:, 1]] = np.arange(len(m.free_cells))
        self.left, self.seg = 0, np.zeros(2)

    def act(self, obs: np.ndarray, target: int) -> np.ndarray:
        if self.left == 0 and self.rng.uniform() < self.prob:
            self.left, self.seg = self.seg_len, self.rng.uniform(-1, 1, 2)
        if self.left > 0:
            self.left -= 1
            return self.seg.astype(np.float32)
        r, c = rowcol(self.m, obs[:2])
        here = self.index[r, c]
        nxt = self.m.next_cell[target, here] if here >= 0 else target
        waypoint = cell_xy(self.m, self.m.free_cells[nxt])
        v_des = np.clip(4.0 * (waypoint - obs[:2]), -2.5, 2.5)
        a = 0.8 * (v_des - obs[2:4]) + self.noise * self.rng.normal(size=2)
        return np.clip(a, -1.0, 1.0).astype(np.float32)


def collect(
    env: str,
    kind: str,
    n_transitions: int,
    episode_len: int,
    seed: int,
    explore: tuple[float, int],
    root: str | Path,
    dataset_id: str,
) -> Path:
    """Step the waypoint controller in the real env through Minari's DataCollector and write
    a local Minari dataset `dataset_id` under `root` (MINARI_DATASETS_PATH). "diverse": start
    in any cell but the eval start, targets anywhere; "play": a fixed checkerboard of cells,
    never the eval start or goal. Episodes run `episode_len` steps or end at the eval goal."""
    os.environ["MINARI_DATASETS_PATH"] = str(Path(root).resolve())
    import minari

    m = layout(env)
    cells = m.free_cells
    opts = eval_options(m)
    not_start = ~(cells == opts["reset_cell"]).all(1)
    if kind == "play":
        starts = np.flatnonzero(((cells.sum(1) % 2) == 0) & not_start & ~(cells == opts["goal_cell"]).all(1))  # fmt: skip
        targets, noise = starts, 0.3
    elif kind == "diverse":
        starts, targets, noise = np.flatnonzero(not_start), np.arange(len(cells)), 0.5
    else:
        raise ValueError(f"PointMaze dataset must be play or diverse, got {kind!r}")
    rng = np.random.default_rng(seed)
    ctrl = WaypointController(m, rng, noise, explore)
    collector = minari.DataCollector(make_env(env, episode_len), record_infos=False)
    steps, episode = 0, 0
    while steps < n_transitions:
        start = cells[rng.choice(starts)]
        obs, _ = collector.reset(
            seed=seed * 100_003 + episode, options={**opts, "reset_cell": start}
        )
        target, done = int(rng.choice(targets)), False
        while not done:
            obs, _, term, trunc, _ = collector.step(ctrl.act(obs, target))
            steps += 1
            done = term or trunc
            if np.linalg.norm(obs[:2] - cell_xy(m, cells[target])) < 0.3:
                target = int(rng.choice(targets))
        episode += 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        collector.create_dataset(
            dataset_id=dataset_id,
            algorithm_name="noisy BFS-waypoint controller with random-action segments",
            author="leq (iclr25-repro)",
            author_email="none",
            code_permalink="https://github.com/kwanyoungpark/LEQ",
            description=f"{ENVS[env][0]} {kind}, seed {seed}; obs [x, y, vx, vy, goal], reward - 1",
        )
    collector.close()
    return Path(root) / dataset_id


def evaluate(env: str, policy, episodes: int, seed: int) -> dict[str, float]:
    """Success rate (percent) and mean steps of `policy` (obs (6,) -> action (2,)) over
    `episodes` episodes from the eval start to the eval goal in the real env."""
    m = layout(env)
    e = make_env(env)
    success, lengths = [], []
    for i in range(episodes):
        obs, _ = e.reset(seed=seed * 1000 + i, options=eval_options(m))
        done, t, hit = False, 0, False
        while not done:
            obs, _, term, trunc, info = e.step(np.asarray(policy(obs)))
            t, hit, done = t + 1, hit or bool(info["success"]), term or trunc
        success.append(hit)
        lengths.append(t)
    e.close()
    return {
        "success_rate": 100.0 * float(np.mean(success)),
        "episode_steps": float(np.mean(lengths)),
    }


def wall_contact_fraction(env: str, next_observations: np.ndarray) -> float:
    """Fraction of transitions that end touching a wall (the MuJoCo analogue of a blocked move)."""
    return float(wall_contact(layout(env), np.asarray(next_observations)[:, :2]).mean())


@functools.cache
def eval_start(env: str) -> np.ndarray:
    """The eval start state without noise: start cell centre, zero velocity, goal cell centre."""
    m = layout(env)
    opts = eval_options(m)
    return np.concatenate(
        [cell_xy(m, opts["reset_cell"]), np.zeros(2), cell_xy(m, opts["goal_cell"])]
    ).astype(np.float32)
