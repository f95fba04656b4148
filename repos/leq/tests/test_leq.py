"""LEQ's equations against slow, obvious references."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy.optimize import brentq

from leq import leq


def test_expectile_loss_at_half_is_half_mse():
    u = jax.random.normal(jax.random.PRNGKey(0), (100,))
    np.testing.assert_allclose(leq.expectile_loss(u, 0.5), 0.5 * u**2, rtol=1e-6)


@pytest.mark.parametrize("tau", [0.1, 0.3, 0.9])
def test_expectile_minimiser_is_root_of_first_order_condition(tau):
    y = np.asarray(jax.random.gamma(jax.random.PRNGKey(1), 2.0, (400,)))

    def foc(m):  # derivative of sum_i l_tau(y_i - m) up to a factor -2
        w = np.where(y - m < 0, 1 - tau, tau)
        return float((w * (y - m)).sum())

    expectile = brentq(foc, y.min(), y.max())
    opt = optax.adam(0.05)

    @jax.jit
    def minimise(m):
        def body(_, carry):
            m, state = carry
            g = jax.grad(lambda m: leq.expectile_loss(y - m, tau).mean())(m)
            upd, state = opt.update(g, state)
            return optax.apply_updates(m, upd), state

        return jax.lax.fori_loop(0, 3000, body, (m, opt.init(m)))[0]

    m = minimise(jnp.array(0.0))
    assert abs(float(m) - expectile) < 1e-2
    assert (float(m) < y.mean()) == (tau < 0.5)


def closed_form(q, r, alive, gamma, lam):
    """Q^lambda_t = sum_n lam^n G^(n)_t / sum_n lam^n with masked n-step returns (slow loop)."""
    horizon = len(r)
    out = []
    for t in range(horizon + 1):
        num = den = 0.0
        for n in range(horizon - t + 1):
            g = sum(gamma**k * alive[t + k] * r[t + k] for k in range(n))
            g += gamma**n * (alive[t + n] if n else 1.0) * q[t + n]
            num, den = num + lam**n * g, den + lam**n
        out.append(num / den)
    return np.array(out)


@pytest.mark.parametrize("term_at", [None, 1, 3])
def test_lambda_returns_equal_closed_form(term_at):
    rng = np.random.default_rng(0)
    horizon, gamma, lam = 5, 0.97, 0.8
    q, r = rng.normal(size=horizon + 1), rng.normal(size=horizon)
    term = np.zeros(horizon)
    if term_at is not None:
        term[term_at] = 1.0
    alive = np.concatenate([[1.0], np.cumprod(1 - term)])
    got = leq.lambda_returns(jnp.asarray(q), jnp.asarray(r), jnp.asarray(alive), gamma, lam)
    np.testing.assert_allclose(got, closed_form(q, r, alive, gamma, lam), rtol=1e-5, atol=1e-5)


def test_lambda_returns_limits_and_batch_dims():
    rng = np.random.default_rng(1)
    q, r = rng.normal(size=(4, 3)), rng.normal(size=(3, 3))
    alive = np.ones((4, 3))
    one = leq.onestep_returns(jnp.asarray(q), jnp.asarray(r), jnp.asarray(alive), 0.9)
    np.testing.assert_allclose(one[:-1], r + 0.9 * q[1:], rtol=1e-5)
    batched = leq.lambda_returns(jnp.asarray(q), jnp.asarray(r), jnp.asarray(alive), 0.9, 0.7)
    for b in range(3):
        np.testing.assert_allclose(
            batched[:, b], closed_form(q[:, b], r[:, b], alive[:, b], 0.9, 0.7), rtol=1e-5
        )


def _linear_toy(obs_dim=3, act_dim=2, seed=0):
    rng = np.random.default_rng(seed)
    A, B = rng.normal(size=(obs_dim, obs_dim)) * 0.3, rng.normal(size=(obs_dim, act_dim))
    K, c, d, e = (rng.normal(size=s) for s in ((act_dim, obs_dim), obs_dim, act_dim, obs_dim))
    policy = lambda s: jnp.tanh(K @ s)
    q_fn = lambda s, a: c @ s + d @ a + 0.1 * (a @ a)
    model = lambda s, a, k: (A @ s + B @ a, e @ s, jnp.zeros(()))
    return policy, q_fn, model, jnp.asarray(rng.normal(size=obs_dim))


@pytest.mark.parametrize("kind", ["lambda", "onestep"])
def test_action_gradient_equals_finite_differences(kind):
    jax.config.update("jax_enable_x64", True)
    try:
        policy, q_fn, model, s0 = _linear_toy()
        horizon, gamma, lam, key = 3, 0.9, 0.7, jax.random.PRNGKey(0)
        g, ret, _ = leq.action_gradients(s0, key, 2, horizon, policy, q_fn, model, gamma, lam, kind)

        def ret_of(delta):
            ro = leq.imagine(s0, key, delta, policy, q_fn, model)
            return leq.targets(ro, gamma, lam, kind)

        ret_of = jax.jit(ret_of)
        zero, eps = jnp.zeros((horizon + 1, 2)), 1e-6
        np.testing.assert_allclose(ret, ret_of(zero), rtol=1e-10)
        for t in range(horizon + 1):
            for j in range(2):
                dp = ret_of(zero.at[t, j].set(eps))[t]
                dm = ret_of(zero.at[t, j].set(-eps))[t]
                assert abs(float(g[t, j]) - float(dp - dm) / (2 * eps)) < 1e-6
        # the diagonal block differs from the gradient of the summed returns
        total = jax.grad(lambda d: ret_of(d).sum())(zero)
        assert not np.allclose(total, g)
    finally:
        jax.config.update("jax_enable_x64", False)


def test_critic_loss_beta_split_and_expectile_weights():
    q = jnp.zeros(4)
    y = jnp.array([1.0, -1.0, 2.0, 0.0])
    w = jnp.ones(4)
    only_data = leq.critic_loss(q, y, q, 100 * y, w, q, q, 0.1, 0.0)
    np.testing.assert_allclose(only_data, (0.5 * y**2).mean(), rtol=1e-6)
    only_model = leq.critic_loss(q, 100 * y, q, y, w, q, q, 0.1, 1.0)
    np.testing.assert_allclose(only_model, leq.expectile_loss(y, 0.1).mean(), rtol=1e-6)
    ew = leq.expectile_weights(jnp.array([1.0, -1.0, 5.0]), jnp.zeros(3), 0.1)
    np.testing.assert_allclose(ew, [0.1, 0.9, 0.5])


@pytest.mark.parametrize("kind", ["lambda", "onestep"])
def test_recursive_action_gradient_equals_jacrev(kind):
    """The one-sweep recursion gives the official jacrev diagonal blocks on a nonlinear,
    stochastic model with terminations."""
    policy, _, _, s0 = _linear_toy()

    def model(s, a, k):
        nxt = 0.9 * jnp.tanh(s) + 0.3 * jnp.sin(a).sum() + 0.1 * jax.random.normal(k, s.shape)
        return nxt, jnp.sin(s).sum() * a[0], (nxt[0] > 0.5).astype(s.dtype)

    def q_fn(s, a):
        return jnp.sin(s).sum() * jnp.cos(a).sum() + (a**2).sum()

    s0 = s0.astype(jnp.float32)
    rest = (2, 4, policy, q_fn, model, 0.9, 0.7, kind)
    official = jax.jit(lambda s, k: leq.action_gradients(s, k, *rest)[:2])
    recursive = jax.jit(lambda s, k: leq.action_gradients_recursive(s, k, *rest)[:2])
    for seed in range(3):
        g1, r1 = official(s0, jax.random.PRNGKey(seed))
        g2, r2 = recursive(s0, jax.random.PRNGKey(seed))
        np.testing.assert_allclose(g2, g1, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(r2, r1, rtol=1e-6)


def test_bad_tau_and_horizon_are_clear_errors():
    u = jnp.ones(3)
    for tau in (0.0, 1.0, -0.2, 1.5):
        with pytest.raises(ValueError, match=f"tau must lie in \\(0, 1\\), got {tau}"):
            leq.expectile_loss(u, tau)
    with pytest.raises(ValueError, match="horizon must be >= 1, got 0"):
        leq.imagine(jnp.zeros(3), jax.random.PRNGKey(0), jnp.zeros((1, 2)), None, None, None)
    with pytest.raises(ValueError, match="got 0 rewards"):
        leq.lambda_returns(jnp.zeros(1), jnp.zeros(0), jnp.ones(1), 0.9, 0.9)
    with pytest.raises(ValueError, match="got 3 rewards, 3 values"):
        leq.lambda_returns(jnp.zeros(3), jnp.zeros(3), jnp.ones(4), 0.9, 0.9)


def test_model_loss_weights_discount_and_mask_from_step_zero():
    """w_t = gamma^t m_t: the first imagined step has weight 1, the step that reaches a terminal
    still counts, the steps after it do not."""
    alive = jnp.array([[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])  # terminal at step 1
    w = leq.model_loss_weights(alive, 0.5)
    np.testing.assert_allclose(w, [[1.0, 0.5, 0.0], [1.0, 0.5, 0.25]])
