"""Training state and jitted update chunks of the model-based agents (LEQ, its ablations and the
one-step model-based baseline), plus behaviour cloning and the MOPO-style dataset expansion.

Updates run as `lax.scan` chunks of `rollout_every` steps; builders are cached on their static
arguments so that every seed reuses one compilation.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from . import leq
from . import maze as mz
from . import world_model as wmod
from .data import sample
from .networks import Actor, Critic


class HP(NamedTuple):
    """Static hyper-parameters of a model-based agent (hashable: a jit cache key).

    tau and beta are not here: they are traced arguments, so LEQ and LEQ-tau0.5 share a compile.
    """

    target: str  # "lambda" (LEQ) or "onestep"
    actor_obj: str  # "dpg" (gradient of the targets through the model) or "q" (max Q(s, pi(s)))
    dynamics: str  # "model" (the fitted ensemble) or "true" (the maze's own step: the oracle)
    actor_grad: str  # "jacrev" (official) or "recursive" (same numbers, one backward sweep)
    gamma: float
    lam: float
    horizon: int
    ema: float
    actor_lr: float
    critic_lr: float
    steps: int
    batch: int
    widths: tuple[int, ...]
    model_widths: tuple[int, ...]
    obs_dim: int
    act_dim: int
    env: str


class State(NamedTuple):
    actor: dict
    critic: dict
    critic_ema: dict
    actor_opt: tuple
    critic_opt: tuple


def optimisers(hp: HP):
    """Actor: Adam with cosine decay (paper); critic: Adam."""
    actor = optax.adam(optax.cosine_decay_schedule(hp.actor_lr, hp.steps))
    return actor, optax.adam(hp.critic_lr)


def init_state(hp: HP, key: jax.Array, actor_params: dict, critic_params: dict) -> State:
    a_opt, c_opt = optimisers(hp)
    return State(
        actor_params,
        critic_params,
        critic_params,
        a_opt.init(actor_params),
        c_opt.init(critic_params),
    )


def dynamics_fn(hp: HP, wm):
    """One imagined step (s, a, key) -> (s', r, terminal): the world model, or for the oracle
    the maze's true step (differentiable almost everywhere, so the DPG flows through it)."""
    if hp.dynamics == "true":
        if hp.env not in mz.LAYOUTS:
            raise ValueError(f"the true-dynamics oracle needs a maze env, got {hp.env!r}")
        m = mz.make_maze(hp.env)
        walls, goal = jnp.asarray(m.walls), jnp.asarray(m.goal)
        return lambda s, a, k: mz.step(walls, goal, s, a)
    term = wmod.terminal_fn_for(hp.env)
    return lambda s, a, k: wmod.sample_step(hp.model_widths, wm, s, a, k, term)


def _fns(hp: HP, wm):
    actor, critic = Actor(hp.widths, hp.act_dim), Critic(hp.widths)
    model = dynamics_fn(hp, wm)

    def bind(actor_p, critic_p):
        policy = lambda s: actor.apply(actor_p, s)
        q_fn = lambda s, a: critic.apply(critic_p, s, a)
        return policy, q_fn, model

    return actor, critic, bind


def update(
    hp: HP, state: State, wm, data: dict, model_obs, model_count, key, tau, beta
) -> tuple[State, dict]:
    """One LEQ update (Algorithm 1): imagine from a model batch, critic step, actor step.

    `data` comes from `data.device_arrays`; the model batch is drawn from the first
    `model_count` rows of the fixed-size expansion buffer `model_obs`.
    """
    actor, critic, bind = _fns(hp, wm)
    a_opt, c_opt = optimisers(hp)
    kd, km, ki = jax.random.split(key, 3)
    b = sample(data, kd, hp.batch)
    s0 = model_obs[jax.random.randint(km, (hp.batch,), 0, model_count)]
    keys = jax.random.split(ki, hp.batch)
    policy, q_fn, model = bind(state.actor, state.critic)
    if hp.actor_obj == "dpg":
        grad_fn = (
            leq.action_gradients if hp.actor_grad == "jacrev" else leq.action_gradients_recursive
        )
        grads, ret, ro = jax.vmap(
            lambda s, k: grad_fn(
                s, k, hp.act_dim, hp.horizon, policy, q_fn, model, hp.gamma, hp.lam, hp.target
            )
        )(s0, keys)
    else:
        zero = jnp.zeros((hp.horizon + 1, hp.act_dim))
        ro = jax.vmap(lambda s, k: leq.imagine(s, k, zero, policy, q_fn, model))(s0, keys)
        ret = jax.vmap(lambda r: leq.targets(r, hp.gamma, hp.lam, hp.target))(ro)
        grads = None
    ret = jax.lax.stop_gradient(ret)
    loss_w = leq.model_loss_weights(ro.alive, hp.gamma)  # (B, H)
    s_m, a_m = ro.states[:, :-1], jnp.clip(ro.actions[:, :-1], -1.0, 1.0)
    y_data = b["rewards"] + hp.gamma * (1.0 - b["terminals"]) * q_fn(
        b["next_observations"], policy(b["next_observations"])
    )

    def critic_loss(p):
        return leq.critic_loss(
            critic.apply(p, b["observations"], b["actions"]),
            y_data,
            critic.apply(p, s_m, a_m),
            ret[:, :-1],
            loss_w,
            critic.apply(state.critic_ema, b["observations"], b["actions"]),
            critic.apply(state.critic_ema, s_m, a_m),
            tau,
            beta,
        )

    def actor_loss(p):
        if grads is None:  # one-step baseline: maximise Q(s_t, pi(s_t)) on imagined states
            return -(ro.alive * q_fn(ro.states, actor.apply(p, ro.states))).mean()
        w = jax.vmap(leq.expectile_weights, in_axes=(0, 0, None))(ret, ro.q, tau)
        return leq.dpg_actor_loss(actor.apply(p, ro.states), grads, w)

    lc, gc = jax.value_and_grad(critic_loss)(state.critic)
    la, ga = jax.value_and_grad(actor_loss)(state.actor)
    uc, c_opt_state = c_opt.update(gc, state.critic_opt, state.critic)
    ua, a_opt_state = a_opt.update(ga, state.actor_opt, state.actor)
    new_critic = optax.apply_updates(state.critic, uc)
    ema = optax.incremental_update(new_critic, state.critic_ema, hp.ema)
    new = State(optax.apply_updates(state.actor, ua), new_critic, ema, a_opt_state, c_opt_state)
    return new, {"critic_loss": lc, "actor_loss": la, "q_model": ro.q.mean()}


@functools.cache
def update_chunk(hp: HP, length: int):
    """jit(lax.scan(update)) over `length` steps, cached per (hp, length)."""

    @jax.jit
    def run(state, wm, data, model_obs, model_count, key, tau, beta):
        def body(s, k):
            return update(hp, s, wm, data, model_obs, model_count, k, tau, beta)

        state, info = jax.lax.scan(body, state, jax.random.split(key, length))
        return state, jax.tree_util.tree_map(lambda x: x[-1], info)

    return run


@functools.cache
def expansion_fn(hp: HP, n_states: int, length: int, noise: float):
    """MOPO-style expansion as the official `_rollout`: `length`-step rollouts of the stochastic
    policy tanh(mean + noise * N(0, 1)) (noise before the tanh; official std 1.0) from dataset
    states. Returns the states each step starts from, the dataset start states included
    (n_states * length, obs_dim): the official buffer's `obss`, from which imagination starts.
    As there, a rollout continues after an imagined termination. `data` comes from
    `data.device_arrays`."""
    actor = Actor(hp.widths, hp.act_dim)

    @jax.jit
    def run(actor_p, wm, data, key):
        model = dynamics_fn(hp, wm)
        k0, k1 = jax.random.split(key)
        s = data["observations"][jax.random.randint(k0, (n_states,), 0, data["size"])]

        def body(s, k):
            ka, km = jax.random.split(k)
            pre = actor.apply(actor_p, s, pre_tanh=True)
            a = jnp.tanh(pre + noise * jax.random.normal(ka, (n_states, hp.act_dim)))
            nxt, _, _ = jax.vmap(model)(s, a, jax.random.split(km, n_states))
            return nxt, s

        _, states = jax.lax.scan(body, s, jax.random.split(k1, length))
        return states.reshape(-1, s.shape[-1])

    return run


@functools.cache
def bc_fn(widths: tuple[int, ...], act_dim: int, batch: int, steps: int, lr: float):
    """Behaviour cloning of the deterministic actor (the paper's optional BC pretraining)."""
    actor = Actor(widths, act_dim)
    opt = optax.adam(lr)

    @jax.jit
    def run(actor_p, data, key):
        def body(carry, k):
            p, o = carry
            b = sample(data, k, batch)

            def loss(q):
                return ((actor.apply(q, b["observations"]) - b["actions"]) ** 2).mean()

            g = jax.grad(loss)(p)
            u, o = opt.update(g, o, p)
            return (optax.apply_updates(p, u), o), None

        (p, _), _ = jax.lax.scan(body, (actor_p, opt.init(actor_p)), jax.random.split(key, steps))
        return p

    return run
