"""LEQ (Park & Lee, ICLR 2025): lower expectile Q-learning of lambda-returns on model rollouts.

Pure functions, no I/O. Paper Algorithm 1; symbols: tau = lower expectile, beta = weight of the
model-data loss, lambda / gamma = lambda-return / discount, H = imagination horizon.
Per-sample functions are vmapped over the batch by the callers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp


def expectile_loss(u: jnp.ndarray, tau: float) -> jnp.ndarray:
    """l_tau(u) = |tau - 1(u < 0)| u^2 with u = target - prediction (Eq. 3 of the paper).

    tau < 0.5 penalises over-estimation more: the minimiser is a lower expectile. A Python
    number outside (0, 1) is rejected here (a traced tau is checked by `config.validate`).
    """
    if isinstance(tau, int | float) and not 0.0 < tau < 1.0:
        raise ValueError(f"tau must lie in (0, 1), got {tau}")
    return jnp.abs(tau - (u < 0).astype(u.dtype)) * u**2


def lambda_returns(q, r, alive, gamma: float, lam: float) -> jnp.ndarray:
    """Q^lambda_t for t = 0..H by the backward recursion of Algorithm 1 (official lambda_update_q).

    q: (H+1, ...) Q(s_t, a_t); r: (H, ...) rewards; alive: (H+1, ...) prod_{k<t} (1 - term_k).
    Q^lambda_H = Q_H;  Q^lambda_t = (Q_t + lam W_t [m_t r_t + m_{t+1} gamma Q^lambda_{t+1}])
    / (1 + lam W_t) with W_{H-1} = 1, W_{t-1} = 1 + lam W_t. This equals the lambda-weighted mean
    of the n-step returns G^(0..H-t)_t (G^(0)_t = Q_t), see `lambda_returns_closed_form`.
    """
    horizon = r.shape[0]
    if horizon < 1 or q.shape[0] != horizon + 1 or alive.shape[0] != horizon + 1:
        raise ValueError(
            f"need H >= 1 rewards and H + 1 values and masks; got {horizon} rewards, "
            f"{q.shape[0]} values, {alive.shape[0]} masks"
        )
    weights = jnp.cumsum(lam ** jnp.arange(horizon, dtype=q.dtype))[::-1]  # W_t for t = 0..H-1

    def back(nxt, t):
        bootstrap = alive[t] * r[t] + alive[t + 1] * gamma * nxt
        cur = (q[t] + lam * weights[t] * bootstrap) / (1.0 + lam * weights[t])
        return cur, cur

    _, ret = jax.lax.scan(back, q[horizon], jnp.arange(horizon), reverse=True)
    return jnp.concatenate([ret, q[horizon:]], axis=0)


def onestep_returns(q, r, alive, gamma: float) -> jnp.ndarray:
    """One-step targets m_t r_t + m_{t+1} gamma Q_{t+1} for t < H, and Q_H (ablation/baseline)."""
    return jnp.concatenate([alive[:-1] * r + alive[1:] * gamma * q[1:], q[-1:]], axis=0)


class Rollout(NamedTuple):
    states: jnp.ndarray  # (H+1, obs_dim)
    actions: jnp.ndarray  # (H+1, act_dim)
    q: jnp.ndarray  # (H+1,)
    rewards: jnp.ndarray  # (H,)
    alive: jnp.ndarray  # (H+1,)


def imagine(
    s0: jnp.ndarray,
    key: jax.Array,
    delta: jnp.ndarray,
    policy: Callable,
    q_fn: Callable,
    model: Callable,
) -> Rollout:
    """H-step rollout of the deterministic actor in the model, with `delta` (H+1, act_dim) added
    to each action (zero in use; it is the variable the action gradients are taken for).
    The model noise is fixed by `key`, so repeated calls give the same trajectory.
    """
    horizon = delta.shape[0] - 1
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon} (delta has {delta.shape[0]} rows)")

    def body(carry, inp):
        s, alive = carry
        k, d_t, _d_next = inp
        a = policy(s) + d_t
        nxt, r, term = model(s, a, k)
        return (nxt, alive * (1.0 - term)), (s, a, q_fn(s, a), r, alive)

    keys = jax.random.split(key, horizon)
    (s_h, alive_h), (s, a, q, r, alive) = jax.lax.scan(
        body, (s0, jnp.ones(())), (keys, delta[:-1], delta[1:])
    )
    a_h = policy(s_h) + delta[-1]
    return Rollout(
        states=jnp.concatenate([s, s_h[None]]),
        actions=jnp.concatenate([a, a_h[None]]),
        q=jnp.concatenate([q, q_fn(s_h, a_h)[None]]),
        rewards=r,
        alive=jnp.concatenate([alive, alive_h[None]]),
    )


def targets(ro: Rollout, gamma: float, lam: float, kind: str) -> jnp.ndarray:
    """Critic/actor targets of a rollout: lambda-returns (LEQ) or one-step returns."""
    if kind == "lambda":
        return lambda_returns(ro.q, ro.rewards, ro.alive, gamma, lam)
    if kind == "onestep":
        return onestep_returns(ro.q, ro.rewards, ro.alive, gamma)
    raise ValueError(f"target kind must be 'lambda' or 'onestep', got {kind!r}")


def action_gradients(s0, key, act_dim: int, horizon: int, policy, q_fn, model, gamma, lam, kind):
    """g_t = dQ^lambda_t / da_t for t = 0..H through model, rewards, later actions and Q.

    As in the official DPG_lambda_update_actor: jax.jacrev of all targets with respect to an
    action-perturbation vector, keeping the diagonal blocks (not the gradient of sum_t Q^lambda_t).
    Returns (g (H+1, act_dim), targets (H+1,), rollout).
    """

    def f(delta):
        ro = imagine(s0, key, delta, policy, q_fn, model)
        return targets(ro, gamma, lam, kind), ro

    jac, ro = jax.jacrev(f, has_aux=True)(jnp.zeros((horizon + 1, act_dim)))
    idx = jnp.arange(horizon + 1)
    return jac[idx, idx], targets(ro, gamma, lam, kind), ro


def action_gradients_recursive(
    s0, key, act_dim: int, horizon: int, policy, q_fn, model, gamma, lam, kind
):
    """The same g_t = dQ^lambda_t / da_t as `action_gradients`, by one backward sweep.

    Q^lambda_t depends on a_t only through step t and, via s_{t+1}, on the continuation value
    (Q^lambda_{t+1} for lambda-returns, Q(s_{t+1}, pi(s_{t+1})) for one-step targets). Carrying
    its state gradient v_{t+1} backwards (value-gradient backpropagation) gives every diagonal
    block with one vector-Jacobian product per step instead of H+1 reverse passes.
    """
    ro = imagine(s0, key, jnp.zeros((horizon + 1, act_dim)), policy, q_fn, model)
    ret = targets(ro, gamma, lam, kind)
    keys = jax.random.split(key, horizon)
    weights = jnp.cumsum(lam ** jnp.arange(horizon, dtype=ro.q.dtype))[::-1]
    if kind not in ("lambda", "onestep"):
        raise ValueError(f"target kind must be 'lambda' or 'onestep', got {kind!r}")

    def q_pi(s, d):
        return q_fn(s, policy(s) + d)

    g_h, v_h = jax.grad(q_pi, argnums=(1, 0))(ro.states[-1], jnp.zeros(act_dim))

    def back(v_next, t):
        s_next = ro.states[t + 1]
        cont = ret[t + 1] if kind == "lambda" else ro.q[t + 1]

        def local(s, d):
            a = policy(s) + d
            nxt, r, _ = model(s, a, keys[t])
            value = cont + jnp.dot(jax.lax.stop_gradient(v_next), nxt - s_next)
            boot = ro.alive[t] * r + ro.alive[t + 1] * gamma * value
            if kind == "onestep":
                return boot
            return (q_fn(s, a) + lam * weights[t] * boot) / (1.0 + lam * weights[t])

        g_t, v_t = jax.grad(local, argnums=(1, 0))(ro.states[t], jnp.zeros(act_dim))
        if kind == "onestep":  # the next step's continuation is Q(s_t, pi(s_t)), not L_t
            v_t = jax.grad(q_pi)(ro.states[t], jnp.zeros(act_dim))
        return v_t, g_t

    _, g = jax.lax.scan(back, v_h, jnp.arange(horizon), reverse=True)
    return jnp.concatenate([g, g_h[None]]), ret, ro


def model_loss_weights(alive: jnp.ndarray, gamma: float) -> jnp.ndarray:
    """w_t = gamma^t m_t for t = 0..H-1 (the critic's model-loss weights): alive (..., H+1)
    holds m_t = prod_{k<t} (1 - term_k), so the step that reaches a terminal still counts."""
    horizon = alive.shape[-1] - 1
    return alive[..., :-1] * gamma ** jnp.arange(horizon)


def critic_loss(
    q_data, target_data, q_model, target_model, loss_w, q_ema_data, q_ema_model, tau, beta
):
    """L_Q = (1-beta) E_D[1/2 (y - Q)^2] + beta E_model[w_t l_tau(Q^lambda_t - Q_t)] + EMA reg.

    w_t = gamma^t prod_{k<t}(1 - term_k); the EMA regulariser ||Q - Q_ema||^2 has the same split.
    """
    data = expectile_loss(target_data - q_data, 0.5).mean()
    model = (expectile_loss(target_model - q_model, tau) * loss_w).mean()
    reg = (1 - beta) * ((q_data - q_ema_data) ** 2).mean() + beta * (
        (q_model - q_ema_model) ** 2 * loss_w
    ).mean()
    return (1 - beta) * data + beta * model + reg


def expectile_weights(ret: jnp.ndarray, q: jnp.ndarray, tau: float) -> jnp.ndarray:
    """Actor weights: tau where Q^lambda_t > Q_t else 1 - tau; the last step (t = H) gets 0.5."""
    w = jnp.where(ret > q, tau, 1.0 - tau)
    return w.at[-1].set(0.5)


def dpg_actor_loss(actions_pred, grads, weights) -> jnp.ndarray:
    """-sum_t mean_b w_t sg(g_t) . pi(s_t): its gradient is the expectile-weighted DPG."""
    g = jax.lax.stop_gradient(grads * weights[..., None])
    return -(g * actions_pred).sum(-1).mean(axis=0).sum()
