"""Timing of exact neuron patching against attribution patching on a trained model."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from . import circuit as C
from . import patching as P
from .config import Config
from .data import Vocab, counterfactuals
from .lm import checkpoint_steps, load_state
from .model import build_model, cache, locate


def time_patching(cfg: Config, workdir: Path) -> dict[str, float]:
    """Seconds to score every late-layer neuron on `perf_prompts` '+' prompts, both ways."""
    torch.set_num_threads(cfg.threads)
    vocab = Vocab(cfg.n_numbers)
    model = build_model(cfg, vocab).to(cfg.device)
    load_state(model, workdir / f"checkpoint_{checkpoint_steps(cfg)[-1]:06d}.safetensors")
    parts = locate(model)
    ctx = C.make_context(model, parts, vocab, cfg, with_means=False)
    pool, _ = C.operator_pool(ctx, 0)
    rng = np.random.default_rng(cfg.seed)
    clean = pool.subset(rng.choice(len(pool), min(cfg.perf_prompts, len(pool)), replace=False))
    cf = counterfactuals(clean, pool, cfg.seed)
    tok = clean.tokens(vocab).to(cfg.device)
    r, r_cf = torch.as_tensor(clean.result), torch.as_tensor(cf.result)
    args = (model, parts, ctx.layers, tok)
    t0 = time.perf_counter()
    cf_cache = cache(model, parts, cf.tokens(vocab).to(cfg.device))
    exact = P.neuron_effects(*args, cf_cache, r, r_cf, cfg.n_numbers)
    t1 = time.perf_counter()
    cf_cache = cache(model, parts, cf.tokens(vocab).to(cfg.device))
    attrib = P.attribution_effects(*args, cf_cache, r, r_cf, cfg.n_numbers)
    t2 = time.perf_counter()
    corr = float(np.corrcoef(exact.ravel().numpy(), attrib.ravel().numpy())[0, 1])
    return {
        "exact_s": t1 - t0,
        "attribution_s": t2 - t1,
        "corr": corr,
        "n_prompts": float(len(clean)),
        "n_neurons": float(exact.numel()),
    }
