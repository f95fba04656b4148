"""The model-based update on a toy problem whose answer is known: what LEQ's lower expectile
does to the actor (agents.update through its jitted chunk, the world model replaced)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from leq import agents
from leq.networks import Actor, Critic, with_stats

SAFE = 0.0  # the safe path pays this for sure
RISKY = (5.0, -3.0)  # the risky path pays one of these by a fair coin flip (mean +1 > SAFE)
WIDTHS = (8,)


def two_paths(s, a, key):
    """One step, then the episode ends. The action mixes the paths: a = -1 is the safe path,
    a = +1 the risky one, r = (1 - a) / 2 SAFE + (1 + a) / 2 risky payoff."""
    payoff = jnp.where(jax.random.bernoulli(key), RISKY[0], RISKY[1])
    r = (1 - a[0]) / 2 * SAFE + (1 + a[0]) / 2 * payoff
    return s, r, jnp.float32(1.0)


def zero_output(params: dict, last: str) -> dict:
    """The network's output layer set to 0 (the actor starts at a = tanh(0) = 0; Q = 0)."""
    inner = dict(params["params"])
    mlp = dict(inner["MLP_0"])
    mlp[last] = jax.tree_util.tree_map(jnp.zeros_like, mlp[last])
    inner["MLP_0"] = mlp
    return {"params": inner}


def trained_action(monkeypatch, tau: float, steps: int = 40) -> float:
    """The actor's action after `steps` LEQ updates on the two-path chain; the critic is frozen
    at Q = 0 (critic_lr 0), so the actor's objective alone decides the path."""
    monkeypatch.setattr(agents, "dynamics_fn", lambda hp, wm: two_paths)
    hp = agents.HP("lambda", "dpg", "model", "recursive", 0.9, 0.95, 1, 0.005, 0.05, 0.0,
                   steps, 256, WIDTHS, WIDTHS, 1, 1, "two-paths")  # fmt: skip
    ka, kc, key = jax.random.split(jax.random.PRNGKey(0), 3)
    obs = jnp.zeros((1, 1))
    actor_p = zero_output(with_stats(Actor(WIDTHS, 1).init(ka, obs), [0.0], [1.0]), "Dense_1")
    critic_p = Critic(WIDTHS).init(kc, obs, obs)
    critic_p = zero_output(with_stats(critic_p, [0.0, 0.0], [1.0, 1.0]), "Dense_1")
    rows = 8
    data = {
        "observations": jnp.zeros((rows, 1)),
        "actions": jnp.zeros((rows, 1)),
        "rewards": jnp.zeros(rows),
        "next_observations": jnp.zeros((rows, 1)),
        "terminals": jnp.ones(rows),
        "size": jnp.asarray(rows, jnp.int32),
    }
    state = agents.init_state(hp, key, actor_p, critic_p)
    run = agents.update_chunk(hp, steps)
    state, _ = run(state, None, data, jnp.zeros((rows, 1)), jnp.asarray(rows, jnp.int32), key,
                   jnp.float32(tau), jnp.float32(0.25))  # fmt: skip
    return float(Actor(WIDTHS, 1).apply(state.actor, obs)[0, 0])


@pytest.mark.parametrize(("tau", "path"), [(0.1, "safe"), (0.5, "risky")])
def test_lower_expectile_takes_the_safe_path(monkeypatch, tau, path):
    """The risky path's 0.1-expectile (-2.2) is below the safe 0, its mean (+1) above: LEQ's
    tau = 0.1 must steer the actor to the safe path, tau = 0.5 (the mean) to the risky one.
    Swapping the return and Q in the actor's expectile weights learns the upper expectile."""
    a = trained_action(monkeypatch, tau)
    assert np.isfinite(a)
    assert (a < -0.5) if path == "safe" else (a > 0.5), a


def test_inputs_are_standardised_by_the_stored_statistics():
    """Actor and critic see symlog((x - mean) / std): scaling the inputs and their statistics
    together leaves the outputs unchanged, and shifting both does too."""
    ka, kc = jax.random.split(jax.random.PRNGKey(3))
    obs = jax.random.normal(ka, (5, 3))
    act = jax.random.uniform(kc, (5, 2), minval=-1.0, maxval=1.0)
    mean, std = jnp.array([0.5, -1.0, 2.0]), jnp.array([2.0, 0.5, 3.0])
    actor = Actor(WIDTHS, 2)
    base = actor.init(ka, obs)
    out = actor.apply(with_stats(base, mean, std), obs)
    scaled = actor.apply(with_stats(base, 10 * mean + 1, 10 * std), 10 * obs + 1)
    np.testing.assert_allclose(out, scaled, rtol=1e-5, atol=1e-6)
    critic = Critic(WIDTHS)
    cp = critic.init(kc, obs, act)
    jm, js = jnp.concatenate([mean, jnp.zeros(2)]), jnp.concatenate([std, jnp.ones(2)])
    q = critic.apply(with_stats(cp, jm, js), obs, act)
    q2 = critic.apply(with_stats(cp, 4 * jm, 4 * js), 4 * obs, 4 * act)
    np.testing.assert_allclose(q, q2, rtol=1e-5, atol=1e-6)
    assert not np.allclose(out, actor.apply(with_stats(base, mean, 2 * std), obs))
