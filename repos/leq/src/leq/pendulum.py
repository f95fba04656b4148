"""Gymnasium's Pendulum-v1 written in JAX (tested against gymnasium), the dense-reward check.

Actions in [-1, 1] are scaled to gymnasium's torque range [-2, 2]. Episodes last 200 steps and
never terminate. The behaviour controller pumps energy and balances near the top.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

MAX_SPEED, MAX_TORQUE, DT, G = 8.0, 2.0, 0.05, 10.0
HORIZON = 200


def angle_normalize(th: jnp.ndarray) -> jnp.ndarray:
    return ((th + jnp.pi) % (2 * jnp.pi)) - jnp.pi


def to_obs(th: jnp.ndarray, thdot: jnp.ndarray) -> jnp.ndarray:
    return jnp.stack([jnp.cos(th), jnp.sin(th), thdot], axis=-1)


def step(obs: jnp.ndarray, action: jnp.ndarray):
    """gymnasium Pendulum-v1 dynamics (g=10, m=l=1) on the observation: (next_obs, reward, term)."""
    th = jnp.arctan2(obs[..., 1], obs[..., 0])
    thdot = obs[..., 2]
    u = MAX_TORQUE * jnp.clip(action[..., 0], -1.0, 1.0)
    cost = angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * u**2
    new_thdot = jnp.clip(thdot + (3 * G / 2 * jnp.sin(th) + 3.0 * u) * DT, -MAX_SPEED, MAX_SPEED)
    new_th = th + new_thdot * DT
    return to_obs(new_th, new_thdot), -cost, jnp.zeros_like(cost)


def reset(key: jax.Array, n: int) -> jnp.ndarray:
    k1, k2 = jax.random.split(key)
    th = jax.random.uniform(k1, (n,), minval=-jnp.pi, maxval=jnp.pi)
    thdot = jax.random.uniform(k2, (n,), minval=-1.0, maxval=1.0)
    return to_obs(th, thdot)


def controller(obs: jnp.ndarray) -> jnp.ndarray:
    """Energy pumping far from the top, a PD balance near it (actions in [-1, 1])."""
    th = jnp.arctan2(obs[..., 1], obs[..., 0])
    thdot = obs[..., 2]
    energy = 0.5 * thdot**2 + 1.5 * G * jnp.cos(th)  # 1.5 G = the top's potential at rest
    pump = jnp.clip(0.5 * (1.5 * G - energy) * thdot, -1.0, 1.0)
    balance = jnp.clip(-(8.0 * angle_normalize(th) + 1.5 * thdot) / MAX_TORQUE, -1.0, 1.0)
    return jnp.where(jnp.cos(th) > 0.85, balance, pump)[..., None]


def rollout_return(policy, key: jax.Array, episodes: int) -> jnp.ndarray:
    """Undiscounted 200-step returns of `policy(obs, key)` from gymnasium's initial states."""
    k0, k1 = jax.random.split(key)

    def body(carry, k):
        obs, ret = carry
        nxt, r, _ = step(obs, policy(obs, k))
        return (nxt, ret + r), None

    init = (reset(k0, episodes), jnp.zeros(episodes))
    (_, ret), _ = jax.lax.scan(body, init, jax.random.split(k1, HORIZON))
    return ret


def reference_returns(key: jax.Array, episodes: int) -> tuple[jax.Array, jax.Array]:
    """Mean returns of the uniform random policy and of the noise-free controller."""
    rand = rollout_return(
        lambda o, k: jax.random.uniform(k, (o.shape[0], 1), minval=-1.0, maxval=1.0),
        key,
        episodes,
    )
    expert = rollout_return(lambda o, k: controller(o), key, episodes)
    return rand.mean(), expert.mean()


def evaluate_policy(policy, key: jax.Array, episodes: int) -> dict[str, float]:
    """Return and D4RL-style normalised return 100 (R - R_random) / (R_controller - R_random)."""
    return {k: float(v) for k, v in episode_stats(policy, key, episodes).items()}


def episode_stats(policy, key: jax.Array, episodes: int) -> dict[str, jax.Array]:
    """`evaluate_policy` as arrays, so that it can run inside `jax.jit`."""
    ret = rollout_return(lambda o, k: policy(o), key, episodes).mean()
    lo, hi = reference_returns(key, episodes)
    return {"return": ret, "normalized_return": 100.0 * (ret - lo) / (hi - lo)}
