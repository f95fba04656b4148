"""Two Gymnasium task families with scripted experts (the CPU stand-ins for Meta-World / BabyAI).

* ``PointReach``: a 2-D point mass with continuous actions in [-1, 1]^2. Each task has its own goal
  and speed gain; the observation is the position only, so the goal can be inferred only from
  demonstrations (the paper's "unseen environment" setting in miniature).
* ``GridNav``: a 7 x 7 grid with per-task walls and goal, four discrete actions, and a BFS expert.
  The observation is the normalised position plus four wall sensors; the goal is again absent.

Normalised return is (R - R_random) / (R_expert - R_random), as in the paper's evaluation.
"""

from __future__ import annotations

import dataclasses
from collections import deque

import gymnasium as gym
import numpy as np
from gymnasium import spaces

FAMILIES = ("point", "grid")

REGIMES: dict[str, dict[str, float]] = {
    "easy": {
        "point_horizon": 25,
        "point_gain_lo": 0.12,
        "point_gain_hi": 0.2,
        "point_inertia": 0.0,
        "point_distractors": 0,
        "grid_size": 7,
        "grid_walls": 8,
        "grid_horizon": 30,
    },
    "hard": {
        "point_horizon": 60,
        "point_gain_lo": 0.04,
        "point_gain_hi": 0.08,
        "point_inertia": 0.8,
        "point_distractors": 4,
        "grid_size": 9,
        "grid_walls": 12,
        "grid_horizon": 60,
    },
}
"""Task-family settings. "easy" is the first pass's world, where R&P nearly solves the point family
from 5 demos. "hard" (used with noisier demonstrators): a slow point mass with momentum (observed
as position and velocity) and 4 irrelevant sensors redrawn every step, 60 steps; a 9 x 9 grid
with 12 walls and 60 steps. Measured with demo noise 0.3 (4 tasks, 30 episodes): R&P's
normalised return at 1/2/5/20 demos is 0.49/0.63/0.71/0.82 (point) and about 0.2-0.46 (grid)."""


@dataclasses.dataclass(frozen=True)
class PointTask:
    goal: tuple[float, float]
    """Goal position; absent from the observation."""
    gain: float
    """Distance moved per step at full action."""
    horizon: int = 25
    """Episode length."""
    inertia: float = 0.0
    """Share of the velocity kept each step; 0: the action sets the velocity (no momentum, the
    observation is the position); > 0: a double integrator observed as (position, velocity)."""
    distractors: int = 0
    """Extra observation entries redrawn uniformly in [-0.5, 0.5] every step (irrelevant
    sensors: they blur L2 retrieval, which a model of the context can learn to ignore)."""


@dataclasses.dataclass(frozen=True)
class GridTask:
    walls: tuple[tuple[int, int], ...]
    """Blocked cells (row, col)."""
    goal: tuple[int, int]
    """Goal cell; absent from the observation."""
    size: int = 7
    """Side of the square grid."""
    horizon: int = 30
    """Step limit of an episode."""


VEL_SCALE = 5.0
"""Velocity's scale in the observation (speeds of ~0.1-0.2 per step become ~0.5-1)."""


class PointReach(gym.Env):
    """Continuous reach, reward -||p' - goal|| per step. Without inertia p' = clip(p + gain a);
    with it v' = inertia v + gain a, p' = clip(p + v') (a wall stops that velocity component)."""

    def __init__(self, task: PointTask):
        self.task = task
        self.horizon = task.horizon
        dim = (4 if task.inertia > 0 else 2) + task.distractors
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(dim,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self._pos, self._vel = np.zeros(2), np.zeros(2)
        self._t = 0

    def observe(self) -> np.ndarray:
        parts = [self._pos]
        if self.task.inertia > 0:
            parts.append(np.clip(VEL_SCALE * self._vel, -1.0, 1.0))
        if self.task.distractors:
            parts.append(self.np_random.uniform(-0.5, 0.5, size=self.task.distractors))
        return np.concatenate(parts).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._pos = self.np_random.uniform(-1.0, 1.0, size=2)
        self._vel = np.zeros(2)
        self._t = 0
        return self.observe(), {}

    def step(self, action):
        a = np.clip(np.asarray(action, dtype=float).reshape(2), -1.0, 1.0)
        self._vel = self.task.inertia * self._vel + self.task.gain * a
        moved = self._pos + self._vel
        self._pos = np.clip(moved, -1.0, 1.0)
        self._vel[moved != self._pos] = 0.0
        self._t += 1
        reward = -float(np.linalg.norm(self._pos - np.asarray(self.task.goal)))
        return self.observe(), reward, False, self._t >= self.horizon, {}

    def expert_action(self, obs: np.ndarray) -> np.ndarray:
        """Head for the goal, slowing down to land on it: the velocity that covers a third of
        the remaining distance (all of it without inertia), as far as one action reaches."""
        pos = obs[:2]
        vel = obs[2:4] / VEL_SCALE if self.task.inertia > 0 else np.zeros(2)
        share = 1 / 3 if self.task.inertia > 0 else 1.0
        wanted = share * (np.asarray(self.task.goal) - pos)
        return np.clip((wanted - self.task.inertia * vel) / self.task.gain, -1.0, 1.0).astype(
            np.float32
        )


MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))  # up, down, left, right


class GridNav(gym.Env):
    """Discrete navigation; reward 1 - 0.9 t / horizon on reaching the goal (MiniGrid's form)."""

    def __init__(self, task: GridTask):
        self.task = task
        self.size, self.horizon = task.size, task.horizon
        self.walls = set(task.walls)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(6,), dtype=np.float32)
        self.action_space = spaces.Discrete(4)
        self._cell = (0, 0)
        self._t = 0
        self._dist = bfs_distances(self.size, self.walls, task.goal)

    def free(self, cell: tuple[int, int]) -> bool:
        r, c = cell
        return 0 <= r < self.size and 0 <= c < self.size and cell not in self.walls

    def observe(self) -> np.ndarray:
        r, c = self._cell
        sensors = [0.0 if self.free((r + dr, c + dc)) else 1.0 for dr, dc in MOVES]
        scale = self.size - 1
        return np.asarray([r / scale, c / scale, *sensors], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        starts = [cell for cell in self._dist if cell != self.task.goal]
        self._cell = starts[int(self.np_random.integers(len(starts)))]
        self._t = 0
        return self.observe(), {}

    def step(self, action):
        if not self.action_space.contains(int(action)):
            raise ValueError(f"GridNav action must be in 0..3, got {action!r}")
        dr, dc = MOVES[int(action)]
        nxt = (self._cell[0] + dr, self._cell[1] + dc)
        if self.free(nxt):
            self._cell = nxt
        self._t += 1
        done = self._cell == self.task.goal
        reward = 1.0 - 0.9 * self._t / self.horizon if done else 0.0
        return self.observe(), reward, done, self._t >= self.horizon and not done, {}

    def expert_action(self, obs: np.ndarray) -> int:
        """A shortest-path (BFS) step towards the goal."""
        r, c = self._cell
        options = [(self._dist.get((r + dr, c + dc), 10**6), k) for k, (dr, dc) in enumerate(MOVES)]
        return int(min(options)[1])


def bfs_distances(size: int, walls: set, goal: tuple[int, int]) -> dict[tuple[int, int], int]:
    """Shortest-path length from every reachable cell to the goal."""
    dist = {goal: 0}
    queue = deque([goal])
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVES:
            nxt = (r + dr, c + dc)
            inside = 0 <= nxt[0] < size and 0 <= nxt[1] < size
            if inside and nxt not in walls and nxt not in dist:
                dist[nxt] = dist[(r, c)] + 1
                queue.append(nxt)
    return dist


def make_tasks(family: str, n: int, seed: int, regime: str = "easy") -> list:
    """n tasks of a family in a regime of REGIMES, a deterministic function of the seed."""
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {sorted(REGIMES)}, got {regime!r}")
    cfg = REGIMES[regime]
    rng = np.random.default_rng(seed)
    if family == "point":
        return [
            PointTask(
                goal=tuple(rng.uniform(-0.8, 0.8, 2).round(4)),
                gain=float(rng.uniform(cfg["point_gain_lo"], cfg["point_gain_hi"])),
                horizon=int(cfg["point_horizon"]),
                inertia=float(cfg["point_inertia"]),
                distractors=int(cfg["point_distractors"]),
            )
            for _ in range(n)
        ]
    if family == "grid":
        size, n_walls = int(cfg["grid_size"]), int(cfg["grid_walls"])
        tasks = []
        while len(tasks) < n:
            cells = [(r, c) for r in range(size) for c in range(size)]
            picks = rng.permutation(len(cells))
            walls = {cells[i] for i in picks[:n_walls]}
            goal = cells[picks[n_walls]]
            # most free cells must reach the goal (30 of 41 in the easy 7 x 7 world)
            if len(bfs_distances(size, walls, goal)) >= int(0.75 * (size * size - n_walls)):
                tasks.append(
                    GridTask(
                        walls=tuple(sorted(walls)),
                        goal=goal,
                        size=size,
                        horizon=int(cfg["grid_horizon"]),
                    )
                )
        return tasks
    raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")


def make_env(task) -> gym.Env:
    if isinstance(task, PointTask):
        return PointReach(task)
    if isinstance(task, GridTask):
        return GridNav(task)
    raise ValueError(f"unknown task type {type(task).__name__}; expected PointTask or GridTask")
