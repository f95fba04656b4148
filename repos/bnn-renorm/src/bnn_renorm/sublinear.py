"""The sublinear-width estimator (N << P with P / (N N0) fixed): our reconstruction of the paper's
estimator of a trained BNN's predictor statistics from the spectrum of its empirical kernel.

What is known of the paper's recipe (its text was not available, see the README): in the
sublinear regime the width-N empirical kernel is rank-deficient; the estimator samples that kernel
several times, keeps the strictly positive part of the spectra (pooled), and feeds the spectrum to
the integral formulas under a spectral-universality assumption on the eigenfunctions, the zero
part entering through a pseudo-inverse. Our choices where the recipe is silent:

1. "Trained BNN": the width-N network trained to the minimum of the Gibbs energy
   |f(X) - Y|^2 / (2T) + (|a|^2 + |W|^2) / (2 s2) (its MAP), from `restarts` prior draws.
2. "Empirical kernel": the prior-weighted tangent kernel of the trained network,
   K = (s2/N) [Phi Phi^T + (Phi' diag(a^2) Phi'^T) o (X X^T / N0)], rank <= N (N0 + 1): the
   number of weights, which is why P / (N N0) sets the regime.
3. "Integral formula": with eigenfunctions universal (Gaussian-equivalent), the mean posterior
   variance at a fresh input of a GP with Gram spectrum rho and noise T is 1 / m(-T) - T, where
   m(z) = int rho(dl) / (l - z) is the Stieltjes transform of the Gram's spectral distribution
   (`spectral_fresh_variance`; exact for Gaussian designs in the proportional limit).
"""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import minimize

from .kernels import check_finite, check_positive

jax.config.update("jax_enable_x64", True)


def spectral_fresh_variance(spectra: list[np.ndarray], p: int, t: float) -> float:
    """Mean fresh-input posterior variance 1/m(-T) - T from pooled Gram spectra.

    `spectra` are the eigenvalues of S sampled P x P kernels; eigenvalues <= 1e-10 of each
    kernel's largest count as the zero part (mass 1 - rank / P each, the pseudo-inverse of a
    rank-deficient kernel), the strictly positive ones are pooled.
    """
    check_positive("temperature", t)
    pooled, zeros = [], 0
    for lam in spectra:
        lam = np.asarray(lam, dtype=np.float64)
        if lam.shape != (p,):
            raise ValueError(f"each spectrum must hold P={p} eigenvalues, got {lam.shape}")
        positive = lam[lam > 1e-10 * max(lam.max(), 1e-300)]
        pooled.append(positive)
        zeros += p - positive.size
    lam = np.concatenate(pooled)
    m = (np.sum(1.0 / (lam + t)) + zeros / t) / (p * len(spectra))
    return float(1.0 / m - t)


def network(params: dict, x: jax.Array, s2: float, activation=jax.nn.relu) -> jax.Array:
    """f(x) = N^{-1/2} sum_i a_i phi(w_i . x / sqrt(N0)) (weights in their natural scale)."""
    width = params["a"].shape[0]
    return activation(x @ params["w"].T / jnp.sqrt(x.shape[1])) @ params["a"] / jnp.sqrt(width)


@lru_cache(maxsize=16)
def _energy(activation):
    def energy(flat, x, y, s2, t, width):
        n0 = x.shape[1]
        params = {"a": flat[:width], "w": flat[width:].reshape(width, n0)}
        resid = network(params, x, s2, activation) - y
        return 0.5 * jnp.sum(resid**2) / t + 0.5 * jnp.sum(flat**2) / s2

    return jax.jit(jax.value_and_grad(energy), static_argnames=("width",))


def train_map(
    key: jax.Array,
    x: jax.Array,
    y: jax.Array,
    width: int,
    s2: float,
    t: float,
    activation=jax.nn.relu,
    max_iter: int = 3000,
) -> dict:
    """Minimum of the Gibbs energy (the posterior mode) by L-BFGS from one prior draw."""
    n0 = x.shape[1]
    flat0 = np.sqrt(s2) * np.asarray(jax.random.normal(key, (width * (n0 + 1),)))
    fun = _energy(activation)

    def objective(flat):
        value, grad = fun(jnp.asarray(flat), x, y, s2, t, width)
        return float(value), np.asarray(grad, dtype=np.float64)

    res = minimize(objective, flat0, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    return {"a": jnp.asarray(res.x[:width]), "w": jnp.asarray(res.x[width:].reshape(width, n0))}


def prior_draw(key: jax.Array, width: int, n0: int, s2: float) -> dict:
    """Untrained weights from the prior (the negative control's 'network')."""
    k_a, k_w = jax.random.split(key)
    return {
        "a": jnp.sqrt(s2) * jax.random.normal(k_a, (width,)),
        "w": jnp.sqrt(s2) * jax.random.normal(k_w, (width, n0)),
    }


@lru_cache(maxsize=16)
def _tangent(activation):
    def features(a, w, x, s2):
        def f_single(flat, xi):
            p = {"a": flat[: a.shape[0]], "w": flat[a.shape[0] :].reshape(w.shape)}
            return network(p, xi[None, :], s2, activation)[0]

        flat = jnp.concatenate([a, w.ravel()])
        return jnp.sqrt(s2) * jax.vmap(jax.grad(f_single), in_axes=(None, 0))(flat, x)

    return jax.jit(features)


def tangent_features(params: dict, x: jax.Array, s2: float, activation=jax.nn.relu) -> jax.Array:
    """sqrt(s2) * df/dtheta at every input (rows), so that K = J J^T is the prior-weighted kernel."""
    return _tangent(activation)(params["a"], params["w"], x, s2)


def empirical_kernel_spectrum(params: dict, x: jax.Array, s2: float, activation=jax.nn.relu):
    """Eigenvalues of the P x P empirical (tangent) kernel of one network, via the smaller Gram."""
    j = np.asarray(tangent_features(params, x, s2, activation))
    p = j.shape[0]
    small = np.linalg.eigvalsh(j.T @ j) if j.shape[1] < p else np.linalg.eigvalsh(j @ j.T)
    lam = np.zeros(p)
    top = np.clip(np.sort(small)[::-1][:p], 0.0, None)
    lam[: top.size] = top
    return lam


def laplace_fresh_variance(params: dict, x, y, x_test, s2, t, activation=jax.nn.relu) -> float:
    """Ablation: the same kernel's exact GP variance at the test inputs (no spectral step)."""
    j, j_test = (np.asarray(tangent_features(params, z, s2, activation)) for z in (x, x_test))
    prec = np.eye(j.shape[1]) + j.T @ j / t
    return float(np.mean(np.sum(j_test * np.linalg.solve(prec, j_test.T).T, axis=1)))


def sublinear_networks(
    seed: int,
    x: jax.Array,
    y: jax.Array,
    width: int,
    s2: float,
    t: float,
    restarts: int,
    activation=jax.nn.relu,
) -> tuple[list[dict], list[dict]]:
    """The estimator's networks: `restarts` width-N networks trained to the Gibbs energy's minimum
    (choice 1 above) and as many untrained prior draws (the negative control)."""
    check_finite("inputs", x)
    check_finite("targets", y)
    check_positive("prior variance s2", s2)
    if restarts < 1:
        raise ValueError(f"restarts must be >= 1, got {restarts}")
    keys = jax.random.split(jax.random.PRNGKey(seed), 2 * restarts)
    trained = [train_map(k, x, y, width, s2, t, activation) for k in keys[:restarts]]
    untrained = [prior_draw(k, width, x.shape[1], s2) for k in keys[restarts:]]
    return trained, untrained


def estimate_from_networks(
    trained: list[dict],
    untrained: list[dict],
    x: jax.Array,
    y: jax.Array,
    x_test: jax.Array,
    s2: float,
    t: float,
    activation=jax.nn.relu,
) -> dict[str, float]:
    """Mean fresh-input variances of the estimator, its control and its ablation.

    "estimator": the integral formula on the trained networks' pooled kernel spectra;
    "untrained": the same on prior draws (the estimator without training, a negative control);
    "laplace": the trained kernels' exact GP variance at the test inputs (no spectral step).
    Divide the first two by `spectral_fresh_variance([nngp_spectrum], P, T)` and the third by
    the exact NNGP variance, so that each ratio compares like with like.
    """
    p = x.shape[0]
    spec = [empirical_kernel_spectrum(q, x, s2, activation) for q in trained]
    spec0 = [empirical_kernel_spectrum(q, x, s2, activation) for q in untrained]
    laplace = np.mean([laplace_fresh_variance(q, x, y, x_test, s2, t, activation) for q in trained])
    return {
        "estimator": spectral_fresh_variance(spec, p, t),
        "untrained": spectral_fresh_variance(spec0, p, t),
        "laplace": float(laplace),
    }


def sublinear_estimate(
    seed: int,
    x: jax.Array,
    y: jax.Array,
    x_test: jax.Array,
    width: int,
    s2: float,
    t: float,
    restarts: int,
    activation=jax.nn.relu,
) -> dict[str, float]:
    """`estimate_from_networks` on the networks of `sublinear_networks` (trained here)."""
    trained, untrained = sublinear_networks(seed, x, y, width, s2, t, restarts, activation)
    return estimate_from_networks(trained, untrained, x, y, x_test, s2, t, activation)
