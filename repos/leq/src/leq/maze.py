"""A pure-JAX point-mass maze with D4RL's AntMaze layouts (the CPU stand-in for AntMaze).

State `(x, y, vx, vy)` in cell units (cell (row, col) has its centre at x=col, y=row); action
in [-1, 1]^2 accelerates a damped point mass. Each axis moves separately and a move into a wall
cell is cancelled, so the agent never leaves the free cells. Reward is the sparse goal reward
shifted by -1 (IQL's AntMaze convention): 0 on reaching the goal (which terminates), else -1.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

# D4RL locomotion/maze_env.py layouts; S marks the eval start, G the eval goal.
LAYOUTS = {
    "umaze": ["#####", "#S..#", "###.#", "#G..#", "#####"],
    "medium": [
        "########",
        "#S.##..#",
        "#..#...#",
        "##...###",
        "#..#...#",
        "#.#..#.#",
        "#...#.G#",
        "########",
    ],
    "large": [
        "############",
        "#S...#.....#",
        "#.##.#.#.#.#",
        "#......#...#",
        "#.####.###.#",
        "#..#.#.....#",
        "##.#.#.#.###",
        "#..#...#.G.#",
        "############",
    ],
}
EVAL_HORIZON = {"umaze": 200, "medium": 400, "large": 600}
GOAL_RADIUS = 0.5
DAMPING = 0.8
ACCEL = 0.06


class Maze(NamedTuple):
    walls: np.ndarray  # (rows, cols) bool
    start: np.ndarray  # (2,) xy of the eval start cell centre
    goal: np.ndarray  # (2,) xy of the eval goal cell centre
    free_cells: np.ndarray  # (n, 2) (row, col)
    next_cell: np.ndarray  # (n_free, n_free) index of the next cell on a shortest path
    horizon: int


def make_maze(name: str) -> Maze:
    if name not in LAYOUTS:
        raise ValueError(f"unknown maze {name!r}; expected one of {sorted(LAYOUTS)}")
    rows = LAYOUTS[name]
    walls = np.array([[c == "#" for c in r] for r in rows])
    find = {ch: next((i, r.index(ch)) for i, r in enumerate(rows) if ch in r) for ch in "SG"}
    free = np.argwhere(~walls)
    return Maze(
        walls=walls,
        start=np.array(find["S"][::-1], dtype=np.float32),
        goal=np.array(find["G"][::-1], dtype=np.float32),
        free_cells=free,
        next_cell=_bfs_table(walls, free),
        horizon=EVAL_HORIZON[name],
    )


def _bfs_table(walls: np.ndarray, free: np.ndarray) -> np.ndarray:
    """table[goal, cell] = index of the neighbour of `cell` one step closer to `goal`."""
    index = {tuple(c): i for i, c in enumerate(free)}
    n = len(free)
    table = np.zeros((n, n), dtype=np.int32)
    for g in range(n):
        table[g, g] = g
        queue, seen = deque([tuple(free[g])]), {tuple(free[g])}
        while queue:
            r, c = queue.popleft()
            for nb in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
                if nb in index and nb not in seen:
                    seen.add(nb)
                    table[g, index[nb]] = index[(r, c)]
                    queue.append(nb)
    return table


def cell_of(walls: jnp.ndarray, xy: jnp.ndarray) -> jnp.ndarray:
    """(row, col) of the cell containing xy, clipped to the grid."""
    rc = jnp.round(xy[..., ::-1]).astype(jnp.int32)
    return jnp.clip(rc, 0, jnp.array(walls.shape) - 1)


def is_wall(walls: jnp.ndarray, xy: jnp.ndarray) -> jnp.ndarray:
    rc = cell_of(walls, xy)
    return walls[rc[..., 0], rc[..., 1]]


def at_goal(goal: jnp.ndarray, obs: jnp.ndarray) -> jnp.ndarray:
    """The known goal test used for termination, in the env and in imagination."""
    return jnp.linalg.norm(obs[..., :2] - goal, axis=-1) < GOAL_RADIUS


def move(walls: jnp.ndarray, obs: jnp.ndarray, action: jnp.ndarray):
    """Damped point-mass move of one state: returns (next_obs, blocked (2,) per axis).

    Each axis moves separately; a move that would end in a wall cell is cancelled and that
    axis's velocity zeroed (the agent slides along a wall and stops against it)."""
    a = jnp.clip(action, -1.0, 1.0)
    vel = DAMPING * obs[2:] + ACCEL * a
    x_try = obs[:2] + jnp.array([vel[0], 0.0])
    blocked_x = is_wall(walls, x_try)
    xy = jnp.where(blocked_x, obs[:2], x_try)
    y_try = xy + jnp.array([0.0, vel[1]])
    blocked_y = is_wall(walls, y_try)
    xy = jnp.where(blocked_y, xy, y_try)
    vel = vel * jnp.array([1.0 - blocked_x, 1.0 - blocked_y])
    return jnp.concatenate([xy, vel]), jnp.stack([blocked_x, blocked_y])


def step(walls: jnp.ndarray, goal: jnp.ndarray, obs: jnp.ndarray, action: jnp.ndarray):
    """One transition of a single point mass: returns (next_obs, reward, terminal)."""
    nxt, _ = move(walls, obs, action)
    done = at_goal(goal, nxt)
    return nxt, done.astype(jnp.float32) - 1.0, done.astype(jnp.float32)


def blocked(walls, obs, action) -> jnp.ndarray:
    """1.0 where the transition (obs, action) of a batch (n, 4), (n, 2) hits a wall."""
    _, hit = jax.vmap(move, in_axes=(None, 0, 0))(jnp.asarray(walls), obs, action)
    return hit.any(-1).astype(jnp.float32)


def reset(maze: Maze, key: jax.Array, n: int) -> jnp.ndarray:
    """n start states: the eval start cell centre plus uniform noise of +-0.1."""
    xy = jnp.asarray(maze.start) + jax.random.uniform(key, (n, 2), minval=-0.1, maxval=0.1)
    return jnp.concatenate([xy, jnp.zeros((n, 2))], axis=1)


def evaluate_policy(maze: Maze, policy, key: jax.Array, episodes: int) -> dict[str, float]:
    """Success rate (percent, the AntMaze normalised score) and mean steps to the goal."""
    return {k: float(v) for k, v in episode_stats(maze, policy, key, episodes).items()}


def episode_stats(maze: Maze, policy, key: jax.Array, episodes: int) -> dict[str, jax.Array]:
    """`evaluate_policy` as arrays, so that it can run inside `jax.jit`."""
    walls, goal = jnp.asarray(maze.walls), jnp.asarray(maze.goal)
    obs0 = reset(maze, key, episodes)

    def body(carry, _):
        obs, done, t = carry
        nxt, _, term = jax.vmap(step, in_axes=(None, None, 0, 0))(walls, goal, obs, policy(obs))
        obs = jnp.where(done[:, None], obs, nxt)
        t = t + (1.0 - done)
        return (obs, jnp.maximum(done, term), t), None

    init = (obs0, jnp.zeros(episodes), jnp.zeros(episodes))
    (_, done, t), _ = jax.lax.scan(body, init, None, length=maze.horizon)
    return {"success_rate": 100.0 * done.mean(), "episode_steps": t.mean()}


def goal_controller(maze: Maze):
    """Scripted BFS-waypoint controller to the eval goal (the data controller without noise).

    Returns a batched policy obs (n, 4) -> action (n, 2); used to check that the evaluation
    can be solved at all (it reaches the umaze goal in every episode)."""
    walls, cells = jnp.asarray(maze.walls), jnp.asarray(maze.free_cells)
    index = -np.ones(maze.walls.shape, dtype=np.int32)
    index[maze.free_cells[:, 0], maze.free_cells[:, 1]] = np.arange(len(maze.free_cells))
    gr, gc = np.round(maze.goal[::-1]).astype(int)
    goal_idx, index, table = int(index[gr, gc]), jnp.asarray(index), jnp.asarray(maze.next_cell)

    def one(obs):
        here = cell_of(walls, obs[:2])
        waypoint = cells[table[goal_idx, index[here[0], here[1]]]][::-1].astype(jnp.float32)
        v_des = jnp.clip(0.5 * (waypoint - obs[:2]), -0.3, 0.3)
        return jnp.clip(10.0 * (v_des - DAMPING * obs[2:]), -1.0, 1.0)

    return jax.vmap(one)
