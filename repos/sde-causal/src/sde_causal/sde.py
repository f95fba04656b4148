"""SDE models with known dependence graphs, simulated by Euler-Maruyama (paper Sec. 2 and Sec. 4).

`dX^k_t = mu^k(X_[0,t]) dt + sigma^k(X_[0,t]) dW^k_t`, independent Brownian motions and initial
values. `drift[j, k] != 0` means X^j enters mu^k; `diffusion[j, k] != 0` means X^j enters sigma^k.
Either makes j a parent of k. Generators are deterministic functions of their seed.
"""

from __future__ import annotations

import dataclasses

import numpy as np

FAMILIES = ("linear", "tanh", "diffusion", "path", "quadratic")
DRIFT_FAMILIES = tuple(f for f in FAMILIES if f != "diffusion")
# Families whose coupling a linear model of the parent's lagged values cannot represent: an
# even function of the parent (quadratic) or a coupling through the noise level (diffusion).
LINEAR_MISSPECIFIED = ("diffusion", "quadratic")


@dataclasses.dataclass(frozen=True)
class SDEModel:
    """A d-variable SDE; matrices are (d, d), entry [parent, child]."""

    family: str
    """linear (OU), tanh drift, diffusion-only coupling, path (drift on the parent's running
    mean), or quadratic (drift on the parent's square: no linear trace)."""
    self_drift: np.ndarray
    """(d,) mean-reversion rates a_k: mu^k contains -a_k X^k."""
    drift: np.ndarray
    """(d, d) drift couplings."""
    diffusion: np.ndarray
    """(d, d) diffusion couplings: sigma^k = base + sum_j |diffusion[j, k]| |X^j|."""
    base_noise: float = 0.3
    """Diffusion level of every variable without parents in sigma."""
    delay: float = 0.0
    """Couplings (drift and diffusion) read the parent at time t - delay (0: no delay)."""

    @property
    def graph(self) -> np.ndarray:
        """Boolean (d, d) adjacency of the dependence graph without self-loops."""
        g = (self.drift != 0) | (self.diffusion != 0)
        np.fill_diagonal(g, False)
        return g


def random_dag(d: int, rng: np.random.Generator, edge_prob: float = 0.4) -> np.ndarray:
    """A random DAG over d nodes (upper triangular in a random order), at least one edge."""
    while True:
        upper = np.triu(rng.random((d, d)) < edge_prob, 1)
        if upper.any():
            break
    order = rng.permutation(d)
    g = np.zeros((d, d), dtype=bool)
    g[np.ix_(order, order)] = upper
    return g


def model_from_graph(
    graph: np.ndarray, family: str, rng: np.random.Generator, delay: float = 0.0
) -> SDEModel:
    """Parameters as in the paper's generator: self-drift in [-0.5, 0.5], couplings +-[1, 2]."""
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    d = len(graph)
    weights = rng.uniform(1.0, 2.0, (d, d)) * rng.choice([-1.0, 1.0], (d, d)) * graph
    if family == "diffusion":
        drift, diffusion = np.zeros((d, d)), np.abs(weights)
    else:
        drift, diffusion = weights, np.zeros((d, d))
    return SDEModel(family, rng.uniform(-0.5, 0.5, d), drift, diffusion, delay=delay)


def simulate(
    model: SDEModel, n_paths: int, fine_steps: int, seed: int, horizon: float = 1.0
) -> np.ndarray:
    """Euler-Maruyama on [0, horizon] with `fine_steps` steps; returns (n_paths, fine_steps + 1, d).

    With `model.delay > 0` every coupling (drift and diffusion) reads the parents at time
    t - delay, rounded to the fine grid and clamped at 0 (a delayed SDE with constant history
    X_u = X_0 for u < 0); a variable's own mean reversion always reads the present.
    """
    if model.delay < 0:
        raise ValueError(f"delay must be >= 0, got {model.delay}")
    rng = np.random.default_rng(seed)
    d, dt = len(model.self_drift), horizon / fine_steps
    lag = round(model.delay / dt)
    x = np.empty((n_paths, fine_steps + 1, d))
    x[:, 0] = rng.normal(0.0, np.sqrt(0.2), (n_paths, d))
    running_sum = np.empty_like(x)  # running_sum[:, t] = sum of x[:, 0..t]
    running_sum[:, 0] = x[:, 0]
    for t in range(fine_steps):
        now, seen = x[:, t], max(t - lag, 0)
        parent = x[:, seen]
        if model.family == "tanh":
            parent = np.tanh(parent)
        elif model.family == "quadratic":
            parent = parent**2
        elif model.family == "path":
            parent = running_sum[:, seen] / (seen + 1)
        mu = -model.self_drift * now + parent @ model.drift
        sigma = model.base_noise + np.abs(x[:, seen]) @ model.diffusion
        x[:, t + 1] = now + mu * dt + sigma * np.sqrt(dt) * rng.normal(size=(n_paths, d))
        running_sum[:, t + 1] = running_sum[:, t] + x[:, t + 1]
    return x


def observe(
    fine: np.ndarray, n_obs: int, seed: int, irregular: bool = False, horizon: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Subsample to n_obs times: a uniform grid, or per-path sorted random times (both with 0 and T).

    Returns (paths (n, n_obs, d), times (n, n_obs)).
    """
    n, steps = fine.shape[0], fine.shape[1] - 1
    if not 2 <= n_obs <= steps + 1:
        raise ValueError(f"n_obs must be in [2, {steps + 1}], got {n_obs}")
    if irregular:
        rng = np.random.default_rng(seed)
        inner = np.stack(
            [np.sort(rng.choice(np.arange(1, steps), n_obs - 2, replace=False)) for _ in range(n)]
        )
        idx = np.concatenate([np.zeros((n, 1), int), inner, np.full((n, 1), steps)], axis=1)
    else:
        idx = np.tile(np.linspace(0, steps, n_obs).round().astype(int), (n, 1))
    paths = np.take_along_axis(fine, idx[..., None], axis=1)
    return paths, idx * (horizon / steps)


def ou_variance(a: float, noise: float, x0_var: float, t: np.ndarray) -> np.ndarray:
    """Var X_t of dX = -a X dt + noise dW, X_0 ~ N(0, x0_var): closed form (the mean stays 0)."""
    decay = np.exp(-2 * a * t)
    return x0_var * decay + noise**2 * (1 - decay) / (2 * a)
