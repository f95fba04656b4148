"""SmartRAG's joint optimisation: token-level PPO with GAE and a KL penalty to the warm-up policy.

One policy makes all three decisions (retrieve or not, the query, the answer); every generated
token is a PPO time step, so the rewriter's tokens share the episode's return (the reward covers
the query tokens, not only the decision token). Defaults follow RL4LMs as used by the official
code: gamma 1, lambda 0.95, clip 0.2, value clip 0.2, entropy coefficient 0, adaptive KL
(initial beta 0.001, target 0.2).
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import torch

from .data import Question
from .policy import Codec, Policy, score
from .rollout import Turn, run_episodes


def gae(
    rewards: torch.Tensor, values: torch.Tensor, gamma: float, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over one episode (value after the end is 0).

    delta_t = r_t + gamma V_{t+1} - V_t,  A_t = sum_l (gamma lam)^l delta_{t+l},  R_t = A_t + V_t.
    """
    adv = torch.zeros_like(rewards)
    last = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        next_v = values[t + 1] if t + 1 < len(rewards) else 0.0
        delta = rewards[t] + gamma * next_v - values[t]
        last = delta + gamma * lam * last
        adv[t] = last
    return adv, adv + values


def clipped_policy_loss(
    logp: torch.Tensor, old_logp: torch.Tensor, adv: torch.Tensor, clip: float, mask: torch.Tensor
) -> torch.Tensor:
    """PPO's clipped surrogate -E[min(rho A, clip(rho, 1-eps, 1+eps) A)] over valid tokens."""
    ratio = torch.exp(logp - old_logp)
    surrogate = torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv)
    return -(surrogate * mask).sum() / mask.sum().clamp(min=1)


def clipped_value_loss(
    v: torch.Tensor, old_v: torch.Tensor, returns: torch.Tensor, clip: float, mask: torch.Tensor
) -> torch.Tensor:
    """0.5 max((V - R)^2, (V_clipped - R)^2): value targets are clipped (a NaN guard too)."""
    v_clip = old_v + (v - old_v).clamp(-clip, clip)
    loss = torch.max((v - returns) ** 2, (v_clip - returns) ** 2)
    return 0.5 * (loss * mask).sum() / mask.sum().clamp(min=1)


def kl_penalty(logp: torch.Tensor, ref_logp: torch.Tensor, beta: float) -> torch.Tensor:
    """Per-token shaping -beta (log pi_theta - log pi_ref); zero when pi = pi_ref."""
    return -beta * (logp - ref_logp)


@dataclasses.dataclass
class AdaptiveKL:
    """Ziegler et al.'s proportional controller (RL4LMs' `KLController`)."""

    beta: float
    target: float
    horizon: int

    def update(self, kl: float, n_steps: int) -> float:
        error = float(np.clip(kl / self.target - 1.0, -0.2, 0.2))
        self.beta *= 1.0 + error * n_steps / self.horizon
        return self.beta


@dataclasses.dataclass(frozen=True)
class PPOSettings:
    iterations: int
    batch: int
    epochs: int
    minibatch: int
    lr: float
    clip: float
    vf_coef: float
    gamma: float
    lam: float
    kl_init: float
    kl_target: float
    kl_horizon: int
    max_grad_norm: float
    quota: int
    top_k: int
    alpha: float
    max_new: int


def _advantages(turns: list[Turn], logp, ref_logp, val, valid, beta, s: PPOSettings):
    """Token rewards (terminal reward + KL shaping), then GAE over each whole episode."""
    shaped = kl_penalty(logp, ref_logp, beta) * valid
    for j, t in enumerate(turns):
        shaped[j, len(t.action) - 1] += t.reward
    adv, ret = torch.zeros_like(val), torch.zeros_like(val)
    by_episode: dict[int, list[int]] = {}
    for j, t in enumerate(turns):
        by_episode.setdefault(t.episode, []).append(j)
    for rows in by_episode.values():
        lens = [len(turns[j].action) for j in rows]
        r = torch.cat([shaped[j, :n] for j, n in zip(rows, lens, strict=True)])
        v = torch.cat([val[j, :n] for j, n in zip(rows, lens, strict=True)])
        a, g = gae(r, v, s.gamma, s.lam)
        for j, piece_a, piece_g in zip(rows, a.split(lens), g.split(lens), strict=True):
            adv[j, : len(piece_a)], ret[j, : len(piece_g)] = piece_a, piece_g
    m = valid.float()
    mean = (adv * m).sum() / m.sum()
    std = (((adv - mean) ** 2 * m).sum() / m.sum()).sqrt()
    return (adv - mean) / (std + 1e-8), ret


def ppo_train(
    policy: Policy,
    reference: Policy,
    codec: Codec,
    retriever,
    questions: list[Question],
    s: PPOSettings,
    seed: int,
    progress=None,
) -> list[dict[str, float]]:
    """Optimise `policy` on `questions`; returns one log row per iteration."""
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(policy.parameters(), lr=s.lr)
    kl_ctl = AdaptiveKL(s.kl_init, s.kl_target, s.kl_horizon)
    reference.eval()
    log = []
    for it in range(s.iterations):
        pick = rng.choice(len(questions), min(s.batch, len(questions)), replace=False)
        batch = [questions[i] for i in pick]
        policy.eval()
        start = time.perf_counter()
        turns, outs = run_episodes(
            policy, codec, retriever, batch, quota=s.quota, top_k=s.top_k, alpha=s.alpha,
            max_new=s.max_new, sample=True, generator=gen,
        )  # fmt: skip
        rollout_s = time.perf_counter() - start
        prompts, actions = [t.prompt for t in turns], [t.action for t in turns]
        force = torch.tensor([t.force_answer for t in turns])
        with torch.no_grad():
            old_logp, _, old_val, valid = score(policy, codec, prompts, actions, force)
            ref_logp = score(reference, codec, prompts, actions, force)[0]
        adv, ret = _advantages(turns, old_logp, ref_logp, old_val, valid, kl_ctl.beta, s)
        kl = float(((old_logp - ref_logp) * valid).sum() / len(batch))
        policy.train()
        for _ in range(s.epochs):
            for mb in np.array_split(
                rng.permutation(len(turns)), max(1, len(turns) // s.minibatch)
            ):
                idx = torch.as_tensor(mb)
                logp, _, v, _ = score(
                    policy, codec, [prompts[i] for i in mb], [actions[i] for i in mb], force[idx]
                )
                width = logp.shape[1]
                m = valid[idx, :width].float()
                loss = clipped_policy_loss(
                    logp, old_logp[idx, :width], adv[idx, :width], s.clip, m
                ) + s.vf_coef * clipped_value_loss(
                    v, old_val[idx, :width], ret[idx, :width], s.clip, m
                )
                if not math.isfinite(float(loss.detach())):
                    continue  # NaN guard: skip the step rather than poison the weights
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(policy.parameters(), s.max_grad_norm)
                opt.step()
        kl_ctl.update(kl, len(batch))
        n_tokens = sum(len(a) for a in actions)
        row = {
            "iteration": it,
            "reward": float(np.mean([t.reward for t in turns]) * len(turns) / len(batch)),
            "em": float(np.mean([o.em for o in outs]) * 100),
            "retrieval_rate": float(np.mean([o.searches > 0 for o in outs]) * 100),
            "kl": kl,
            "beta": kl_ctl.beta,
            "tokens_per_s": n_tokens / max(rollout_s, 1e-9),
        }
        log.append(row)
        if progress is not None:
            progress.set_postfix(reward=f"{row['reward']:.2f}", em=f"{row['em']:.0f}")
            progress.update(1)
    return log
