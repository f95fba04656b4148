"""Ground truth: exact quadrature over the readout scale for linear one-hidden-layer BNNs (with an
exact blocked Gibbs sampler as its check) and NUTS (numpyro) for ReLU nets; the samplers report
Rao-Blackwellised predictive statistics.

Given the hidden weights W the readout a is Bayesian linear regression, so every sample of W
contributes the exact conditional mean and variance of f(x*); the predictive variance is
E_W[var(f*|W)] + Var_W[E(f*|W)].
"""

from __future__ import annotations

import time
from functools import lru_cache, partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.linalg import cho_solve, solve_triangular
from numpyro.infer import MCMC, NUTS

from . import renorm
from .kernels import check_finite, check_positive

jax.config.update("jax_enable_x64", True)


class Posterior(NamedTuple):
    """Predictive statistics at the test inputs and a raw trace for effective sample sizes."""

    mean: jax.Array
    var: jax.Array
    trace: jax.Array
    within: jax.Array
    """E_W[var(f*|W)], the readout's share of `var` (the rest is Var_W[E(f*|W)])."""


def readout_given_features(feat: jax.Array, y: jax.Array, s2: float, t: float):
    """Cholesky factor and mean of a | features (precision Id/s2 + F^T F / T)."""
    prec = jnp.eye(feat.shape[1]) / s2 + feat.T @ feat / t
    chol = jnp.linalg.cholesky(prec)
    return chol, cho_solve((chol, True), feat.T @ y / t)


def conditional_prediction(feat, feat_test, y, s2, t):
    """Exact E[f*|W] and var[f*|W] with a integrated out (features F = phi(XW^T/sqrt N0)/sqrt N)."""
    chol, mean_a = readout_given_features(feat, y, s2, t)
    half = solve_triangular(chol, feat_test.T, lower=True)
    return feat_test @ mean_a, jnp.sum(half**2, axis=0)


def _summarise(means: jax.Array, variances: jax.Array, trace: jax.Array) -> Posterior:
    within = variances.mean(0)
    return Posterior(means.mean(0), within + means.var(0), trace, within)


def _check(x, y, s2, t):
    check_finite("inputs", x)
    check_finite("targets", y)
    check_positive("prior variance s2", s2)
    check_positive("temperature", t)


@partial(jax.jit, static_argnames=("width", "sweeps"))
def _gibbs_scan(key, x, y, x_test, s2, t, width: int, sweeps: int):
    n0 = x.shape[1]
    # X^T X = Q diag(d) Q^T once: the v-step precision is then diagonal in the Q basis.
    d, q = jnp.linalg.eigh(x.T @ x)
    qty = q.T @ (x.T @ y)
    scale = 1.0 / jnp.sqrt(n0 * width)

    def sweep(w, key):
        k_a, k_v, k_w = jax.random.split(key, 3)
        feat, feat_test = x @ w.T * scale, x_test @ w.T * scale
        chol, mean_a = readout_given_features(feat, y, s2, t)
        half = solve_triangular(chol, feat_test.T, lower=True)
        m_star, v_star = feat_test @ mean_a, jnp.sum(half**2, axis=0)
        a = mean_a + solve_triangular(chol.T, jax.random.normal(k_a, (width,)), lower=False)
        norm = jnp.linalg.norm(a)
        a_hat, c = a / norm, norm * scale
        prec_v = 1.0 / s2 + c**2 * d / t
        v_q = c * qty / t / prec_v + jax.random.normal(k_v, (n0,)) / jnp.sqrt(prec_v)
        z = jnp.sqrt(s2) * jax.random.normal(k_w, w.shape)
        w_new = z - jnp.outer(a_hat, a_hat @ z) + jnp.outer(a_hat, q @ v_q)
        return w_new, (m_star, v_star, feat_test[0] @ a)

    k_init, k_run = jax.random.split(key)
    w0 = jnp.sqrt(s2) * jax.random.normal(k_init, (width, n0))
    return jax.lax.scan(sweep, w0, jax.random.split(k_run, sweeps))[1]


def gibbs_linear(
    seed: int,
    x: jax.Array,
    y: jax.Array,
    x_test: jax.Array,
    width: int,
    s2: float,
    t: float,
    sweeps: int,
    burn_in: int,
) -> Posterior:
    """Blocked Gibbs for f(x) = a^T W x / sqrt(N N0), exact for the linear network.

    (1) a | W: Bayesian linear regression in N dimensions. (2) W | a: only v = W^T a_hat enters
    the likelihood (f = c v.x, c = |a| / sqrt(N N0)), so v is Bayesian linear regression in N0
    dimensions (precision Id/s2 + c^2 X^T X / T) and the complement of a_hat comes from the prior.
    """
    _check(x, y, s2, t)
    if not 0 <= burn_in < sweeps:
        raise ValueError(f"need 0 <= burn_in < sweeps, got burn_in={burn_in}, sweeps={sweeps}")
    # Threefry dominated the sweep time on CPU (about 4x); RBG bits are fine for MCMC noise.
    key = jax.random.key(seed, impl="unsafe_rbg")
    means, variances, trace = _gibbs_scan(key, x, y, x_test, s2, t, width, sweeps)
    return _summarise(means[burn_in:], variances[burn_in:], trace[burn_in:])


def _features(x, z, s2, width, activation):
    pre = jnp.sqrt(s2) * x @ z.T / jnp.sqrt(x.shape[1])
    return activation(pre) / jnp.sqrt(width)


@lru_cache(maxsize=32)
def _collapsed_mcmc(width: int, n0: int, activation, warmup: int, samples: int) -> MCMC:
    """One NUTS sampler per static shape, compiled once with the data as arguments (seeds reuse it)."""

    def model(x, y, s2, t):
        z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([width, n0]).to_event(2))
        # Y ~ N(0, s2 F F^T + T Id): the low-rank form costs O(P N^2), not O(P^3), per gradient.
        factor = jnp.sqrt(s2) * _features(x, z, s2, width, activation)
        diag = t * jnp.ones(x.shape[0])
        obs = dist.LowRankMultivariateNormal(jnp.zeros(x.shape[0]), factor, diag)
        numpyro.sample("y", obs, obs=y)

    return MCMC(
        NUTS(model), num_warmup=warmup, num_samples=samples, progress_bar=False, jit_model_args=True
    )


@lru_cache(maxsize=32)
def _full_linear_mcmc(width: int, n0: int, warmup: int, samples: int) -> MCMC:
    """NUTS on (a, W) of the linear network, compiled once per static shape."""

    def model(x, y, s2, t):
        scale = jnp.sqrt(s2) / jnp.sqrt(n0 * width)
        a = numpyro.sample("a", dist.Normal(0.0, jnp.sqrt(s2)).expand([width]).to_event(1))
        z = numpyro.sample("z", dist.Normal(0.0, 1.0).expand([width, n0]).to_event(2))
        numpyro.sample("y", dist.Normal(x @ z.T @ a * scale, jnp.sqrt(t)).to_event(1), obs=y)

    return MCMC(
        NUTS(model), num_warmup=warmup, num_samples=samples, progress_bar=False, jit_model_args=True
    )


def nuts_collapsed(
    seed: int,
    x: jax.Array,
    y: jax.Array,
    x_test: jax.Array,
    width: int,
    s2: float,
    t: float,
    warmup: int,
    samples: int,
    activation=jax.nn.relu,
) -> Posterior:
    """NUTS on the hidden weights with the readout integrated out (Y ~ N(0, s2 F F^T + T Id))."""
    _check(x, y, s2, t)
    mcmc = _collapsed_mcmc(width, x.shape[1], activation, warmup, samples)
    mcmc.run(jax.random.PRNGKey(seed), x, y, s2, t)
    zs = mcmc.get_samples()["z"]

    def predict(z):
        return conditional_prediction(
            _features(x, z, s2, width, activation),
            _features(x_test, z, s2, width, activation),
            y,
            s2,
            t,
        )

    means, variances = jax.vmap(predict)(zs)
    return _summarise(means, variances, means[:, 0])


def nuts_linear_full(
    seed: int,
    x: jax.Array,
    y: jax.Array,
    x_test: jax.Array,
    width: int,
    s2: float,
    t: float,
    warmup: int,
    samples: int,
) -> tuple[jax.Array, float]:
    """NUTS on (a, W) of the linear network, the same posterior as gibbs_linear.

    Returns the raw trace of f(x_test[0]) and the wall time of a second, already compiled run
    (warm-up included), for effective-samples-per-second comparisons.
    """
    _check(x, y, s2, t)
    n0 = x.shape[1]
    scale = jnp.sqrt(s2) / jnp.sqrt(n0 * width)
    mcmc = _full_linear_mcmc(width, n0, warmup, samples)
    mcmc.run(jax.random.PRNGKey(seed), x, y, s2, t)  # compiles (or hits the cache)
    start = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(seed + 1), x, y, s2, t)
    s = jax.block_until_ready(mcmc.get_samples())
    seconds = time.perf_counter() - start
    return jax.vmap(lambda a, z: x_test[0] @ z.T @ a * scale)(s["a"], s["z"]), seconds


def exact_linear_posterior(
    k_train: jax.Array,
    k_cross: jax.Array,
    k_diag: jax.Array,
    y: jax.Array,
    width: int,
    s2: float,
    temperature: float,
    grid: int = 2001,
) -> tuple[jax.Array, jax.Array]:
    """Exact predictive mean and variance of a one-hidden-layer linear net (quadrature over u).

    Readout a ~ N(0, s2 Id_N) makes u = |a|^2 / N ~ s2 chi2_N / N; given u the network is a GP
    with kernel u Kb (exact for one-hidden-layer linear nets). The posterior of log u,
    (N/2) log u - N u/(2 s2) - 1/2 sum_k [log(u lam_k + T) + y_k^2 / (u lam_k + T)], is a function
    of the kernel's spectrum (lam_k, y_k = e_k^T Y) only; BPKR is exactly its mode, the ground
    truth integrates over it (1-D quadrature on a log grid around the mode). Kb must be K0 (the
    NNGP is s2 Kb). Exact for linear nets only: a ReLU net's kernel is not a scaled fixed matrix.
    """
    u_star = renorm.bpkr_u(k_train, y, width, s2, temperature)
    lam, vec, proj = renorm.spectrum(k_train, y)
    log_u = np.log(u_star) + np.linspace(-5.0, 5.0, grid)
    u = np.exp(log_u)[:, None]
    denom = u * lam[None, :] + temperature
    log_post = 0.5 * width * (log_u - np.exp(log_u) / s2) - 0.5 * np.sum(
        np.log(denom) + proj[None, :] ** 2 / denom, axis=1
    )
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    c = np.asarray(k_cross) @ vec  # M x P projections of the test kernel rows
    means = u * ((proj[None, :] / denom) @ c.T)  # grid x M
    variances = u * np.asarray(k_diag)[None, :] - u**2 * ((1.0 / denom) @ (c**2).T)
    mean = w @ means
    var = w @ variances + w @ means**2 - mean**2
    return jnp.asarray(mean), jnp.asarray(var)
