"""SINDyCP baseline (pysindy's parameterised library), with TRENDy's fit/predict interface.

SINDyCP regresses dS/dt on (quadratic) polynomial features of S times polynomial features of theta with
sequentially thresholded least squares. Derivatives come from pysindy's finite differences of
the measured (possibly noisy) trajectories, which is where noise hurts it.
"""

from __future__ import annotations

import numpy as np
import pysindy as ps
import torch


def fit_sindycp(
    s: torch.Tensor, theta: torch.Tensor, *, degree: int = 2, threshold: float
) -> ps.SINDy:
    """Fit dS/dt = Theta(S) x Theta(theta) Xi on trajectories s (batch, frames, dim), t in [0, 1]."""
    frames, dim = s.shape[1], s.shape[2]
    library = ps.ParameterizedLibrary(
        parameter_library=ps.PolynomialLibrary(degree=1),
        feature_library=ps.PolynomialLibrary(degree=degree),
        num_parameters=theta.shape[1],
        num_features=dim,
    )
    model = ps.SINDy(feature_library=library, optimizer=ps.STLSQ(threshold=threshold))
    xs = [traj.double().numpy() for traj in s]
    us = [np.repeat(th.double().numpy()[None], frames, 0) for th in theta]
    model.fit(xs, t=1.0 / (frames - 1), u=us)
    return model


def predict_sindycp(
    model: ps.SINDy, s0: torch.Tensor, theta: torch.Tensor, steps: int, frames: int, bound: float
) -> torch.Tensor:
    """Forward Euler of the identified model over [0, 1], like the neural ODE.

    States are clipped to [-bound, bound] so a diverging polynomial model gives a large but finite
    error instead of overflow.
    """
    x = s0.double().numpy().copy()
    th = theta.double().numpy()
    out, stride = [x.copy()], steps // (frames - 1)
    for step in range(1, steps + 1):
        x = np.clip(x + model.predict(x, u=th) / steps, -bound, bound)
        if step % stride == 0:
            out.append(x.copy())
    return torch.tensor(np.stack(out, 1), dtype=torch.float32)
