"""Warm-up: language-model pretraining on the world's text, then SFT on heuristic labels.

SFT targets (the paper mixes `[Answer] y`, `[Search] q` and observation-conditioned
`[Answer] y`): a train question whose fact the pretrained LM knows gets `[ANSWER] y`, except a
share `sft_search_known` of them that still gets `[SEARCH] q` (an over-retrieving warm-up, as
on real data); the others get `[SEARCH] q`, with q the raw question, or (with probability
`p_rewrite`) the canonical rewrite; the reader learns `[ANSWER] y` given the documents the
rewrite retrieves. "Knows" is the closed-book answer for the `qa` pretraining format, and the
cloze completion of the fact's own plain sentence for the `plain` format.

With `rewrite_control` a twin of the pretrained LM gets the same SFT with `p_rewrite = 0` (the
control of rewriter-finds-answers): the same labels, reader examples and batches, only the gold
rewrites among the search targets replaced by the raw question.
"""

from __future__ import annotations

import copy
import dataclasses
import time

import numpy as np
import torch

from .config import Config
from .data import Question, World, cloze_prompt, pretraining_text
from .env import ANSWER, SEARCH, exact_match
from .env import prompt as state_text
from .policy import ACTION_TOKENS, Codec, Policy, generate, lm_loss
from .retrieval import observe


def fit_lm(
    policy: Policy,
    codec: Codec,
    examples: list[tuple[str, str]],
    steps: int,
    cfg: Config,
    rng: np.random.Generator,
    progress=None,
) -> list[float]:
    """Adam on next-token cross-entropy; each example is (text, context prefix not in the loss)."""
    opt = torch.optim.Adam([p for p in policy.parameters() if p.requires_grad], lr=cfg.lm_lr)
    policy.train()
    losses = []
    for _ in range(steps):
        pick = rng.integers(len(examples), size=cfg.lm_batch)
        loss = lm_loss(
            policy, codec, [examples[i][0] for i in pick], [examples[i][1] for i in pick]
        )
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
        if progress is not None:
            progress.set_postfix(loss=f"{losses[-1]:.3f}")
            progress.update(1)
    policy.eval()
    return losses


def completion(codec: Codec, ids: list[int], skip: int = 0) -> str:
    """The words of a generated continuation after the first `skip`, up to the first action or
    end token (<eos>, <pad>, [SEARCH], ...)."""
    words = codec.words(ids)[skip:]
    stop = next((i for i, w in enumerate(words) if w in ACTION_TOKENS), len(words))
    return " ".join(words[:stop])


def closed_book_correct(policy: Policy, codec: Codec, questions: list[Question], cfg: Config):
    """Whether the LM's greedy `[ANSWER]` without retrieval matches a reference answer after
    SQuAD normalisation (the SFT label)."""
    prompts = codec.encode([state_text(q.text, []) for q in questions])
    first = torch.full((len(prompts),), codec.answer)
    acts = generate(
        policy,
        codec,
        prompts,
        cfg.max_new,
        torch.ones_like(first, dtype=torch.bool),
        False,
        None,
        first,
    )
    return np.array(
        [
            exact_match(completion(codec, a, 1), q.answers) > 0
            for a, q in zip(acts, questions, strict=True)
        ]
    )


def cloze_correct(
    policy: Policy, codec: Codec, world: World, questions: list[Question], max_new: int = 6
):
    """Whether the LM's greedy completion of the fact's plain sentence (until <eos> or `max_new`
    tokens, so a multi-token answer under a BPE tokenizer counts) matches a reference answer
    after SQuAD normalisation."""
    prompts = codec.encode([cloze_prompt(world, q) for q in questions])
    never = torch.zeros(len(prompts), dtype=torch.bool)
    acts = generate(policy, codec, prompts, max_new, never, False)
    return np.array(
        [
            exact_match(completion(codec, a), q.answers) > 0
            for a, q in zip(acts, questions, strict=True)
        ]
    )


def sft_examples(
    world: World, knows: np.ndarray, retriever, cfg: Config, rng: np.random.Generator
) -> list[tuple[str, str]]:
    """(text, context) pairs for the decision, the query and the reader."""
    out = []
    train = world.train
    docs, _ = observe(retriever, [q.rewrite for q in train], cfg.top_k)
    for q, known, doc in zip(train, knows, docs, strict=True):
        p0 = state_text(q.text, [])
        if known and rng.random() >= cfg.sft_search_known:
            out.append((f"{p0} {ANSWER} {q.answers[0]} <eos>", p0))
        else:
            query = q.rewrite if rng.random() < cfg.p_rewrite else q.text
            out.append((f"{p0} {SEARCH} {query} <eos>", p0))
        p1 = state_text(q.text, [doc])
        out.append((f"{p1} {ANSWER} {q.answers[0]} <eos>", p1))
    return out


def warm_up(
    policy: Policy, codec: Codec, world: World, retriever, cfg: Config, progress=None
) -> dict[str, object]:
    """Pretrain, label, SFT; returns the heuristic labels and loss curves."""
    rng = np.random.default_rng(cfg.seed)
    synthetic = world.source == "synthetic"
    text = pretraining_text(world, cfg.max_reps, cfg.pretrain_format) if synthetic else []
    pre = [(t, "") for t in text]
    pre_losses = fit_lm(policy, codec, pre, cfg.pretrain_steps, cfg, rng, progress) if pre else []
    if progress is not None and not pre:
        progress.update(cfg.pretrain_steps)
    if synthetic and cfg.pretrain_format == "plain":
        knows = cloze_correct(policy, codec, world, world.train, cfg.max_new)
    else:
        knows = closed_book_correct(policy, codec, world.train, cfg)
    # The twin starts where the main SFT starts: the pretrained weights and the same rng state,
    # so both SFTs draw the same labels and batches.
    twin = (copy.deepcopy(policy), copy.deepcopy(rng)) if cfg.rewrite_control else None
    sft = sft_examples(world, knows, retriever, cfg, rng)
    sft_losses = fit_lm(policy, codec, sft + pre, cfg.sft_steps, cfg, rng, progress)
    out = {"knows": knows, "pretrain_loss": pre_losses, "sft_loss": sft_losses}
    if twin is not None:
        start = time.perf_counter()
        twin_policy, twin_rng = twin
        plain = sft_examples(world, knows, retriever, dataclasses.replace(cfg, p_rewrite=0.0),
                             twin_rng)  # fmt: skip
        fit_lm(twin_policy, codec, plain + pre, cfg.sft_steps, cfg, twin_rng, progress)
        out["no_rewrite"], out["no_rewrite_sft_s"] = twin_policy, time.perf_counter() - start
    return out
