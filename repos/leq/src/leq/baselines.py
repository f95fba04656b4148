"""Comparison methods: IQL (model-free, same networks and data) and the configurations of the
one-step model-based baseline and the LEQ ablations (as HP overrides of the LEQ agent).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from .data import sample
from .leq import expectile_loss
from .networks import Actor, Critic, Value

# name -> (tau, beta, target, actor objective, dynamics); None means "the config's value";
# dynamics "model" = the fitted ensemble, "true" = the maze's own step (the oracle).
VARIANTS = {
    "LEQ": (None, None, "lambda", "dpg", "model"),
    "LEQ-tau0.5": (0.5, None, "lambda", "dpg", "model"),
    "LEQ-onestep": (None, None, "onestep", "dpg", "model"),
    # MOPO/MOBILE-style: one-step targets, tau 0.5 (plain TD), beta 0.95, actor max Q(s, pi(s))
    "MB-onestep": ("mb_tau", "mb_beta", "onestep", "q", "model"),
    # the upper bound: LEQ imagining with the true maze dynamics instead of the learned model
    "LEQ-oracle": (None, None, "lambda", "dpg", "true"),
}


class IQLState(NamedTuple):
    actor: dict
    critic: dict
    critic_target: dict
    value: dict
    opts: tuple


class IQLHP(NamedTuple):
    expectile: float
    temperature: float
    gamma: float
    ema: float
    lr: float
    steps: int
    batch: int
    widths: tuple[int, ...]
    act_dim: int


def _opts(hp: IQLHP):
    return (
        optax.adam(optax.cosine_decay_schedule(hp.lr, hp.steps)),
        optax.adam(hp.lr),
        optax.adam(hp.lr),
    )


def iql_init(hp: IQLHP, actor_p: dict, critic_p: dict, value_p: dict) -> IQLState:
    a, c, v = _opts(hp)
    return IQLState(
        actor_p, critic_p, critic_p, value_p, (a.init(actor_p), c.init(critic_p), v.init(value_p))
    )


def iql_update(hp: IQLHP, st: IQLState, data: dict, key) -> tuple[IQLState, dict]:
    """Kostrikov et al. 2022: expectile V, TD Q on V(s'), advantage-weighted regression actor.

    The actor is the deterministic tanh mean, so AWR becomes exp-advantage-weighted MSE.
    """
    actor, critic, value = Actor(hp.widths, hp.act_dim), Critic(hp.widths), Value(hp.widths)
    a_opt, c_opt, v_opt = _opts(hp)
    b = sample(data, key, hp.batch)
    s, a = b["observations"], b["actions"]
    q_t = critic.apply(st.critic_target, s, a)

    def v_loss(p):
        return expectile_loss(q_t - value.apply(p, s), hp.expectile).mean()

    lv, gv = jax.value_and_grad(v_loss)(st.value)
    uv, ov = v_opt.update(gv, st.opts[2], st.value)
    new_v = optax.apply_updates(st.value, uv)
    y = b["rewards"] + hp.gamma * (1.0 - b["terminals"]) * value.apply(
        new_v, b["next_observations"]
    )

    def q_loss(p):
        return ((critic.apply(p, s, a) - y) ** 2).mean()

    lq, gq = jax.value_and_grad(q_loss)(st.critic)
    uq, oq = c_opt.update(gq, st.opts[1], st.critic)
    new_q = optax.apply_updates(st.critic, uq)
    w = jnp.minimum(jnp.exp(hp.temperature * (q_t - value.apply(st.value, s))), 100.0)

    def pi_loss(p):
        return (w * ((actor.apply(p, s) - a) ** 2).sum(-1)).mean()

    lp, gp = jax.value_and_grad(pi_loss)(st.actor)
    up, oa = a_opt.update(gp, st.opts[0], st.actor)
    new = IQLState(
        optax.apply_updates(st.actor, up),
        new_q,
        optax.incremental_update(new_q, st.critic_target, hp.ema),
        new_v,
        (oa, oq, ov),
    )
    return new, {"critic_loss": lq, "value_loss": lv, "actor_loss": lp}


@functools.cache
def iql_chunk(hp: IQLHP, length: int):
    @jax.jit
    def run(st, data, key):
        def body(s, k):
            return iql_update(hp, s, data, k)

        st, info = jax.lax.scan(body, st, jax.random.split(key, length))
        return st, jax.tree_util.tree_map(lambda x: x[-1], info)

    return run
