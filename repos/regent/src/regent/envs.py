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


@dataclasses.dataclass(frozen=True)
class PointTask:
    goal: tuple[float, float]
    """Goal position; absent from the observation."""
    gain: float
    """Distance moved per step at full action."""


@dataclasses.dataclass(frozen=True)
class GridTask:
    walls: tuple[tuple[int, int], ...]
    """Blocked cells (row, col)."""
    goal: tuple[int, int]
    """Goal cell; absent from the observation."""


class PointReach(gym.Env):
    """Continuous reach: s' = clip(s + gain * a), reward -||s' - goal|| per step."""

    horizon = 25

    def __init__(self, task: PointTask):
        self.task = task
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self._pos = np.zeros(2)
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._pos = self.np_random.uniform(-1.0, 1.0, size=2)
        self._t = 0
        return self._pos.astype(np.float32), {}

    def step(self, action):
        a = np.clip(np.asarray(action, dtype=float).reshape(2), -1.0, 1.0)
        self._pos = np.clip(self._pos + self.task.gain * a, -1.0, 1.0)
        self._t += 1
        reward = -float(np.linalg.norm(self._pos - np.asarray(self.task.goal)))
        return self._pos.astype(np.float32), reward, False, self._t >= self.horizon, {}

    def expert_action(self, obs: np.ndarray) -> np.ndarray:
        """Move straight to the goal, slowing down to land on it."""
        delta = (np.asarray(self.task.goal) - obs) / self.task.gain
        return np.clip(delta, -1.0, 1.0).astype(np.float32)


MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))  # up, down, left, right


class GridNav(gym.Env):
    """Discrete navigation; reward 1 - 0.9 t / horizon on reaching the goal (MiniGrid's form)."""

    size = 7
    horizon = 30

    def __init__(self, task: GridTask):
        self.task = task
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


def make_tasks(family: str, n: int, seed: int) -> list:
    """n tasks of a family, a deterministic function of the seed."""
    rng = np.random.default_rng(seed)
    if family == "point":
        return [
            PointTask(
                goal=tuple(rng.uniform(-0.8, 0.8, 2).round(4)), gain=float(rng.uniform(0.12, 0.2))
            )
            for _ in range(n)
        ]
    if family == "grid":
        tasks = []
        while len(tasks) < n:
            cells = [(r, c) for r in range(GridNav.size) for c in range(GridNav.size)]
            picks = rng.permutation(len(cells))
            walls = {cells[i] for i in picks[:8]}
            goal = cells[picks[8]]
            if len(bfs_distances(GridNav.size, walls, goal)) >= 30:  # most cells reachable
                tasks.append(GridTask(walls=tuple(sorted(walls)), goal=goal))
        return tasks
    raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")


def make_env(task) -> gym.Env:
    if isinstance(task, PointTask):
        return PointReach(task)
    if isinstance(task, GridTask):
        return GridNav(task)
    raise ValueError(f"unknown task type {type(task).__name__}; expected PointTask or GridTask")
