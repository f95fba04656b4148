"""TRENDy's model: measurement -> frozen PCA -> parameterised neural ODE (paper Sec. 3).

- `Reducer`: standardise the measurement and project on PCA components fitted on training
  data only, then frozen (the official `PCALayer`).
- `ParamODE`: dS/dt = g_pi(S, theta), an MLP on [S; theta] (paper Eq. 3). theta is held fixed
  during integration (the official code lets it drift; see the README's Deviations).
- `integrate`: forward Euler via torchdiffeq over rescaled time [0, 1].
- `trajectory_loss`: paper Eq. 4, state error plus beta times first-difference error.
- `normalised_mse`: trajectory MSE divided by the targets' variance, comparable across
  measurements whose PCA coordinates live on different scales (`per_trajectory_nmse`: the same
  per test trajectory, for paired intervals).
- `jacobian_spectrum`: eigenvalues of d g_pi / d S, used to locate bifurcations.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from sklearn.decomposition import PCA
from torchdiffeq import odeint

from .runtime import progress, stage


class Reducer:
    """Standardise features with training statistics, then project on k PCA components.

    sklearn fits the components; the projection is applied here with sklearn's own formula
    (x @ C^T - mu @ C^T), so a reducer rebuilt from its saved arrays (`from_state`) maps
    features exactly as the fitted one did."""

    def __init__(self, features: torch.Tensor, k: int):
        flat = features.reshape(-1, features.shape[-1]).double().numpy()
        self.mean = flat.mean(0)
        self.std = flat.std(0) + 1e-8
        pca = PCA(n_components=min(k, flat.shape[1])).fit((flat - self.mean) / self.std)
        self.components, self.center = pca.components_, pca.mean_

    STATE = ("mean", "std", "components", "center")

    def state(self) -> dict[str, torch.Tensor]:
        """The arrays that define the reducer (for a checkpoint)."""
        return {
            f"reducer.{k}": torch.from_numpy(np.ascontiguousarray(getattr(self, k)))
            for k in self.STATE
        }

    @classmethod
    def from_state(cls, state: dict[str, torch.Tensor]) -> Reducer:
        """A reducer from `state()`'s arrays; ValueError when one is missing or misshapen."""
        missing = [k for k in cls.STATE if f"reducer.{k}" not in state]
        if missing:
            raise ValueError(f"reducer arrays missing: {missing}")
        obj = cls.__new__(cls)
        for k in cls.STATE:
            setattr(obj, k, state[f"reducer.{k}"].double().numpy())
        n = obj.components.shape[-1] if obj.components.ndim == 2 else -1
        if not (obj.mean.shape == obj.std.shape == obj.center.shape == (n,)):
            raise ValueError("reducer arrays have inconsistent shapes")
        return obj

    def __call__(self, features: torch.Tensor) -> torch.Tensor:
        flat = features.reshape(-1, features.shape[-1]).double().numpy()
        x = (flat - self.mean) / self.std
        z = x @ self.components.T
        z -= self.center.reshape(1, -1) @ self.components.T
        return torch.tensor(z, dtype=torch.float32).reshape(*features.shape[:-1], -1)

    def inverse(self, s: torch.Tensor) -> torch.Tensor:
        """Measurement features back from reduced states (exact on the kept PCA subspace)."""
        flat = s.reshape(-1, s.shape[-1]).double().cpu().numpy()
        x = (flat @ self.components + self.center) * self.std + self.mean
        return torch.tensor(x, dtype=torch.float32).reshape(*s.shape[:-1], -1)


class ParamODE(torch.nn.Module):
    """Vector field g_pi(S, theta): MLP with `depth` hidden ReLU layers (paper Eq. 3)."""

    def __init__(self, dim: int, n_params: int, hidden: int, depth: int, theta_box: torch.Tensor):
        super().__init__()
        layers, width = [], dim + n_params
        for _ in range(depth):
            layers += [torch.nn.Linear(width, hidden), torch.nn.ReLU()]
            width = hidden
        layers.append(torch.nn.Linear(width, dim))
        self.net = torch.nn.Sequential(*layers)
        self.register_buffer("theta_box", theta_box.float())
        self.theta = torch.zeros(1, n_params)

    def forward(self, t: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return self.field(s, self.theta)

    def field(self, s: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        """g_pi(S, theta) with theta rescaled to [-1, 1] over the training box."""
        lo, hi = self.theta_box
        z = 2 * (theta - lo) / (hi - lo) - 1
        return self.net(torch.cat([s, z.expand(*s.shape[:-1], -1)], -1))


def check_range(theta: torch.Tensor, box: torch.Tensor) -> None:
    """Warn when parameters leave the training box (the model extrapolates there)."""
    outside = ((theta < box[0]) | (theta > box[1])).any(-1)
    if outside.any():
        warnings.warn(
            f"{int(outside.sum())} parameter vectors lie outside the trained range "
            f"{box[0].tolist()}..{box[1].tolist()}, e.g. {theta[outside][0].tolist()}; "
            "predictions there are extrapolations",
            stacklevel=2,
        )


def integrate(model: ParamODE, s0: torch.Tensor, theta: torch.Tensor, steps: int) -> torch.Tensor:
    """Forward Euler of dS/dt = g(S, theta) over t in [0, 1]: (batch, steps+1, dim)."""
    check_range(theta, model.theta_box)
    model.theta = theta
    t = torch.linspace(0.0, 1.0, steps + 1, device=s0.device)
    return odeint(model, s0, t, method="euler").transpose(0, 1)


def trajectory_loss(pred: torch.Tensor, true: torch.Tensor, beta: float) -> torch.Tensor:
    """Paper Eq. 4: mean over batch and time of sum_features (S_hat - S)^2 plus beta times the
    same on first differences divided by the frame spacing dt = 1 / (frames - 1)."""
    dt = 1.0 / (true.shape[1] - 1)
    state = (pred - true).pow(2).sum(-1).mean()
    slope = ((pred.diff(dim=1) - true.diff(dim=1)) / dt).pow(2).sum(-1).mean()
    return state + beta * slope


def normalised_mse(pred: torch.Tensor, true: torch.Tensor) -> float:
    """MSE over (batch, frames, dim) divided by the mean per-coordinate variance of `true` over
    batch and frames: 0 for a perfect fit, 1 for predicting each coordinate's mean.

    The raw MSE is in the units of the reduced measurement: standardised PCA coordinates carry
    the variance the components explain (about 25 per coordinate for 162 scattering features, 1
    for the 2 mean-only features), so raw MSEs of different measurements are not comparable.
    """
    var = true.reshape(-1, true.shape[-1]).var(0, unbiased=False).mean()
    return float((pred - true).pow(2).mean() / var)


def per_trajectory_nmse(pred: torch.Tensor, true: torch.Tensor) -> np.ndarray:
    """Each trajectory's share of `normalised_mse`: its mean squared error over frames and
    coordinates divided by the same variance of `true`; their mean is normalised_mse."""
    var = true.reshape(-1, true.shape[-1]).var(0, unbiased=False).mean()
    return ((pred - true).pow(2).mean((1, 2)) / var).double().cpu().numpy()


def fit_node(
    s: torch.Tensor,
    theta: torch.Tensor,
    *,
    steps: int,
    hidden: int,
    depth: int,
    epochs: int,
    lr: float,
    beta: float,
    seed: int,
    box: torch.Tensor,
    quiet: bool = True,
) -> ParamODE:
    """Regress the neural ODE on trajectories s (batch, frames, dim) with full-batch Adam;
    `box` (2, n_params) is the trained parameter range, rows low and high."""
    torch.manual_seed(seed)
    threads = torch.get_num_threads()
    # The MLP is tiny: on CPU, thread synchronisation costs more than it saves (4x measured).
    torch.set_num_threads(1)
    try:
        return _adam_loop(s, theta, steps, hidden, depth, epochs, lr, beta, box, quiet)
    finally:
        torch.set_num_threads(threads)


def _adam_loop(s, theta, steps, hidden, depth, epochs, lr, beta, box, quiet) -> ParamODE:
    model = ParamODE(s.shape[-1], theta.shape[-1], hidden, depth, box).to(s.device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    stride = steps // (s.shape[1] - 1)
    loss = None
    for _ in progress(range(epochs), f"neural ODE (lr={lr:g})", quiet):
        opt.zero_grad()
        pred = integrate(model, s[:, 0], theta, steps)[:, ::stride]
        loss = trajectory_loss(pred, s, beta)
        loss.backward()
        opt.step()
    if loss is not None:
        stage(f"neural ODE (lr={lr:g}): {epochs} Adam steps, final loss {loss.item():.4g}", quiet)
    return model


def predict(model: ParamODE, s0: torch.Tensor, theta: torch.Tensor, steps: int, frames: int):
    """Predicted trajectories at the saved frames, without gradients."""
    with torch.no_grad():
        return integrate(model, s0, theta, steps)[:, :: steps // (frames - 1)]


def jacobian_spectrum(model: ParamODE, s: torch.Tensor, theta: torch.Tensor) -> np.ndarray:
    """Eigenvalues of d g_pi / d S at states s (batch, dim) for parameters theta: (batch, dim)."""
    check_range(theta.to(model.theta_box.device), model.theta_box)

    def one(si, ti):
        return torch.func.jacrev(lambda x: model.field(x, ti))(si)

    device = model.theta_box.device
    jac = torch.func.vmap(one)(s.to(device), theta.to(device))
    return torch.linalg.eigvals(jac.double().cpu()).detach().numpy()
