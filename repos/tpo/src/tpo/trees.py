"""Preference trees built like the official data_prepare.py, with a programmatic judge:
the gold solution, branches sampled from the SFT policy after a random gold prefix, and one
wrong trajectory whose error propagates (Step-DPO's rejected answer)."""

from __future__ import annotations

import numpy as np
import torch

from .data import Problem, Tokenizer, Tree, judge, random_problem, solution, wrong_solution
from .policy import generate


def problems(rng: np.random.Generator, n: int, lo: int, hi: int, modulus: int) -> list[Problem]:
    return [random_problem(rng, int(rng.integers(lo, hi + 1)), modulus) for _ in range(n)]


def build_trees(
    model: torch.nn.Module,
    tok: Tokenizer,
    probs: list[Problem],
    n_branches: int,
    temperature: float,
    rng: np.random.Generator,
    generator: torch.Generator,
) -> list[Tree]:
    """One tree per problem: [gold, branch_1..branch_b, wrong] with judge scores."""
    golds = [solution(p) for p in probs]
    contexts, owners, cuts = [], [], []
    for i, (p, gold) in enumerate(zip(probs, golds, strict=True)):
        steps = gold.split(" A ")[0].split("S ")[1:]
        for _ in range(n_branches):
            cut = int(rng.integers(len(p.steps)))
            prefix = "".join("S " + s for s in steps[:cut]).strip()
            contexts.append([tok.bos] + tok.encode(p.prompt()) + tok.encode(prefix))
            owners.append(i)
            cuts.append((cut, prefix))
    longest = max(len(p.steps) for p in probs)
    continuations = generate(model, tok, contexts, 6 * longest + 4, temperature, generator)
    trees = [
        Tree(p.prompt(), [g], [judge(p, g)], [len(p.steps)])
        for p, g in zip(probs, golds, strict=True)
    ]
    for i, (cut, prefix), cont in zip(owners, cuts, continuations, strict=True):
        text = (prefix + " " + tok.decode(cont)).strip()
        if "S" not in text.split():  # the policy produced no step at all: keep the marker
            text = "S " + text
        trees[i].responses.append(text)
        trees[i].scores.append(judge(probs[i], text))
        trees[i].prefix_steps.append(cut)
    for p, tree in zip(probs, trees, strict=True):
        wrong, k = wrong_solution(p, rng)
        tree.responses.append(wrong)
        tree.scores.append(judge(p, wrong))
        tree.prefix_steps.append(k)
    return trees
