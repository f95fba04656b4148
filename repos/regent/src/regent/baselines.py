"""Baselines without retrieval: multi-task behaviour cloning (the JAT/Gato analogue, trained on
all training tasks) and behaviour cloning from scratch on a new task's few demonstrations.

Both are MLP policies state -> action trained with MSE (continuous) or cross-entropy (discrete).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .data import Demos


class MLPPolicy(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, discrete: bool, hidden: int = 128):
        super().__init__()
        self.discrete = discrete
        self.net = nn.Sequential(
            nn.Linear(obs_dim, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, act_dim),
        )

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)

    def loss(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        out = self(obs)
        return F.cross_entropy(out, act) if self.discrete else F.mse_loss(out, act)

    @torch.no_grad()
    def act(self, obs: np.ndarray) -> np.ndarray:
        out = self(torch.as_tensor(obs, dtype=torch.float32))
        return out.argmax(-1).numpy() if self.discrete else out.clamp(-1, 1).numpy()


def fit_bc(
    demos: Demos, act_dim: int, steps: int, lr: float, batch_size: int, seed: int
) -> MLPPolicy:
    """Behaviour cloning on the rows of `demos` (minibatch Adam); act_dim counts the discrete
    actions or the continuous action dimensions."""
    if len(demos) == 0:
        raise ValueError("behaviour cloning needs at least one demonstration row")
    torch.manual_seed(seed)
    policy = MLPPolicy(demos.obs.shape[1], act_dim, demos.discrete)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    obs = torch.as_tensor(demos.obs)
    act = torch.as_tensor(demos.act)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        rows = torch.randint(len(obs), (min(batch_size, len(obs)),), generator=gen)
        loss = policy.loss(obs[rows], act[rows])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return policy.eval()
