"""Flax modules: actor, critic, value and the Gaussian ensemble world model.

Inputs are normalised with fixed dataset statistics and then passed through symlog, as in the
official code (`value_net.Critic` / `policy.NormalTanhPolicy` with `common.MLP(use_symlog=True)`):
the critic normalises the joint [obs, act] input, actor and value the observation. The statistics
are frozen parameters, so that one compiled update serves every seed.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp


class MLP(nn.Module):
    widths: Sequence[int]
    out: int
    layer_norm: bool = False

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        for w in self.widths:
            x = nn.Dense(w)(x)
            if self.layer_norm:
                x = nn.LayerNorm()(x)
            x = nn.relu(x)
        return nn.Dense(self.out)(x)


def symlog(x: jnp.ndarray) -> jnp.ndarray:
    """sign(x) log(1 + |x|): compresses large normalised inputs (official `common.symlog`)."""
    return jnp.sign(x) * jnp.log1p(jnp.abs(x))


def _normalise(module: nn.Module, x: jnp.ndarray) -> jnp.ndarray:
    """symlog((x - mean) / std), the statistics stored as (frozen) parameters set by `with_stats`."""
    dim = x.shape[-1]
    mean = jax.lax.stop_gradient(module.param("obs_mean", nn.initializers.zeros, (dim,)))
    std = jax.lax.stop_gradient(module.param("obs_std", nn.initializers.ones, (dim,)))
    return symlog((x - mean) / std)


def with_stats(params: dict, mean, std) -> dict:
    """Copy of `params` with the dataset's input mean and std as normalisation stats."""
    inner = dict(params["params"])
    inner["obs_mean"], inner["obs_std"] = jnp.asarray(mean), jnp.asarray(std)
    return {"params": inner}


class Critic(nn.Module):
    """Q(s, a) with LayerNorm (a single critic, as in LEQ); [s, a] is normalised jointly."""

    widths: Sequence[int]

    @nn.compact
    def __call__(self, obs: jnp.ndarray, act: jnp.ndarray) -> jnp.ndarray:
        x = _normalise(self, jnp.concatenate([obs, act], axis=-1))
        return MLP(self.widths, 1, layer_norm=True)(x)[..., 0]


class Value(nn.Module):
    """V(s) for IQL."""

    widths: Sequence[int]

    @nn.compact
    def __call__(self, obs: jnp.ndarray) -> jnp.ndarray:
        return MLP(self.widths, 1, layer_norm=True)(_normalise(self, obs))[..., 0]


class Actor(nn.Module):
    """Deterministic tanh-mean policy; the stochastic policy of the expansion rollouts is
    tanh(mean + std * noise) with the noise added before the tanh (`pre_tanh=True` gives mean)."""

    widths: Sequence[int]
    act_dim: int

    @nn.compact
    def __call__(self, obs: jnp.ndarray, pre_tanh: bool = False) -> jnp.ndarray:
        mean = MLP(self.widths, self.act_dim)(_normalise(self, obs))
        return mean if pre_tanh else jnp.tanh(mean)


class GaussianEnsemble(nn.Module):
    """E independent MLPs mapping normalised (s, a) to the mean and log-variance of (ds, r).

    The log-variance is soft-clamped between learnt bounds (MBPO / OfflineRL-Kit).
    """

    members: int
    widths: Sequence[int]
    out_dim: int

    @nn.compact
    def __call__(self, x: jnp.ndarray, per_member: bool = False) -> tuple[jnp.ndarray, jnp.ndarray]:
        """x: normalised (..., d) shared by all members, or (E, B, d) with per_member=True."""
        ens = nn.vmap(
            MLP,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            in_axes=0 if per_member else None,
            out_axes=0,
            axis_size=self.members,
        )(self.widths, 2 * self.out_dim, name="members")
        out = ens(x)  # (E, ..., 2 * out_dim)
        mean, logvar = jnp.split(out, 2, axis=-1)
        max_lv = self.param("max_logvar", lambda k: 0.5 * jnp.ones(self.out_dim))
        min_lv = self.param("min_logvar", lambda k: -10.0 * jnp.ones(self.out_dim))
        logvar = max_lv - nn.softplus(max_lv - logvar)
        logvar = min_lv + nn.softplus(logvar - min_lv)
        return mean, logvar
