"""Demonstrations: collected from the scripted experts (deterministic in the seed), saved and
loaded as flat .npz files (one row per step, with an episode id), the layout of Minari/JAT rows.

Row t of an episode holds the observation s_t, the reward r_t received on arriving in s_t (0 at
reset: the paper's (s, r_prev) pairing) and the action a_t the demonstrator took in s_t.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from .envs import GridNav, make_env


@dataclasses.dataclass(frozen=True)
class Demos:
    obs: np.ndarray
    """(N, obs_dim) float32 observations."""
    act: np.ndarray
    """(N, act_dim) float32 continuous actions, or (N,) int64 discrete actions."""
    rew: np.ndarray
    """(N,) float32 reward received on arriving in each observation."""
    episode: np.ndarray
    """(N,) int64 episode id of each row."""

    def __len__(self) -> int:
        return len(self.obs)

    @property
    def discrete(self) -> bool:
        return self.act.ndim == 1

    @property
    def n_episodes(self) -> int:
        return len(np.unique(self.episode))


def rollout_expert(task, n_episodes: int, seed: int, noise: float) -> Demos:
    """Noisy expert demonstrations: Gaussian action noise (continuous) or epsilon-random actions
    (discrete, epsilon = noise). Episode e starts from reset(seed=seed * 100_003 + e)."""
    env = make_env(task)
    rng = np.random.default_rng(seed)
    obs_rows, act_rows, rew_rows, ep_rows = [], [], [], []
    for e in range(n_episodes):
        obs, _ = env.reset(seed=seed * 100_003 + e)
        reward, done = 0.0, False
        while not done:
            action = env.expert_action(obs)
            if isinstance(env, GridNav):
                if rng.random() < noise:
                    action = int(rng.integers(4))
            else:
                action = action + noise * rng.standard_normal(action.shape)
                action = np.clip(action, -1, 1).astype(np.float32)
            obs_rows.append(obs)
            act_rows.append(action)
            rew_rows.append(reward)
            ep_rows.append(e)
            obs, reward, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
    act = np.asarray(act_rows, dtype=np.int64 if isinstance(env, GridNav) else np.float32)
    return Demos(
        obs=np.asarray(obs_rows, dtype=np.float32),
        act=act,
        rew=np.asarray(rew_rows, dtype=np.float32),
        episode=np.asarray(ep_rows, dtype=np.int64),
    )


def take_episodes(demos: Demos, k: int) -> Demos:
    """The first k episodes of a demonstration set."""
    keep = demos.episode < k
    return Demos(demos.obs[keep], demos.act[keep], demos.rew[keep], demos.episode[keep])


def save_demos(path: str | Path, demos: Demos) -> None:
    np.savez(path, **dataclasses.asdict(demos))


def load_demos(path: str | Path) -> Demos:
    """Read a .npz with arrays obs, act, rew, episode (one row per step); checks their shapes."""
    try:
        archive = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (OSError, ValueError, EOFError):
        raise ValueError(f"{path}: not an .npz archive of arrays obs, act, rew, episode") from None
    if not hasattr(archive, "files"):
        raise ValueError(
            f"{path}: holds a single array, expected an .npz with obs, act, rew, episode"
        )
    with archive as f:
        missing = {"obs", "act", "rew", "episode"} - set(f.files)
        if missing:
            raise ValueError(
                f"{path}: missing arrays {sorted(missing)}; expected obs, act, rew, episode"
            )
        try:
            demos = Demos(f["obs"], f["act"], f["rew"], f["episode"])
        except ValueError:  # object arrays, which would need pickle
            raise ValueError(f"{path}: obs, act, rew, episode must be numeric arrays") from None
    n = len(demos.obs)
    if demos.obs.ndim != 2 or not (len(demos.act) == len(demos.rew) == len(demos.episode) == n):
        raise ValueError(
            f"{path}: obs must be (N, d) and act/rew/episode must have N rows; got shapes "
            f"{demos.obs.shape}, {demos.act.shape}, {demos.rew.shape}, {demos.episode.shape}"
        )
    if not np.issubdtype(demos.episode.dtype, np.integer) or (n and demos.episode.min() < 0):
        raise ValueError(f"{path}: episode must hold non-negative integer ids")
    return demos
