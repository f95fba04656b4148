"""Metrics: forget rate, retain accuracy, erase-retain ratio (oracle in place of CLIP), FD.

The paper scores with CLIP (ViT-B/32) and summarises with the erase-retain score
|dCLIP_forget / dCLIP_retain|; here the oracle's probabilities play CLIP's part.
"""

from __future__ import annotations

import time

import torch

from . import data, judge, models

RETAIN_FLOOR = 0.01
"""Retain-confidence drops below 1 point count as 1 point in the erase-retain ratio, so that a
method that leaves the retained concepts untouched gets a finite (large) ratio."""


def eval_prompts(combination: str, erase: list[str]) -> dict[str, list[str]]:
    """Prompt groups: the erase set, held-out synonyms of the combination that are not in the
    erase set (empty when the erase set holds them all), the sub-concepts, and other
    combinations that share one sub-concept."""
    colour, shape = data.expected_classes(combination)
    if colour is None or shape is None:
        raise ValueError(f"combination {combination!r} must name a colour and a shape")
    held_out = [
        f"{c} {s}"
        for c in data.COLOURS
        for s in data.SHAPES
        if data.expected_classes(f"{c} {s}") == (colour, shape) and f"{c} {s}" not in erase
    ]
    c_word, s_word = data.parse_prompt(combination)
    other = [f"{c_word} {s}" for s in data.BASE_SHAPES if data.SHAPES[s] != data.SHAPES[s_word]]
    other = (
        other[:2]
        + [
            f"{c} {s_word}"
            for c in data.BASE_COLOURS
            if data.COLOURS[c][0] != data.COLOURS[c_word][0]
        ][:2]
    )
    return {"forget": list(erase), "held_out": held_out, "sub": [c_word, s_word], "other": other}


@torch.no_grad()
def oracle_probs(oracle: judge.Oracle, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    lc, ls = oracle(images)
    return lc.softmax(-1), ls.softmax(-1)


@torch.no_grad()
def combination_rate(oracle: judge.Oracle, images: torch.Tensor, combination: str) -> float:
    """% of `images` the judge labels as the combination (e.g. red AND circle)."""
    target = data.expected_classes(combination)
    pc, ps = oracle_probs(oracle, images.cpu())
    return 100 * float(((pc.argmax(-1) == target[0]) & (ps.argmax(-1) == target[1])).float().mean())


def frechet_distance(a: torch.Tensor, b: torch.Tensor) -> float:
    """||mu_a - mu_b||^2 + tr(S_a + S_b - 2 (S_a^1/2 S_b S_a^1/2)^1/2), via eigendecompositions."""
    a, b = a.double(), b.double()
    mu = (a.mean(0) - b.mean(0)).pow(2).sum()
    sa, sb = torch.cov(a.T), torch.cov(b.T)
    ea, va = torch.linalg.eigh(sa)
    root_a = va @ torch.diag(ea.clamp(min=0).sqrt()) @ va.T
    inner = torch.linalg.eigvalsh(root_a @ sb @ root_a).clamp(min=0).sqrt().sum()
    return float(mu + sa.trace() + sb.trace() - 2 * inner)


def evaluate_model(
    unet, text_encoder, oracle, groups: dict[str, list[str]], cfg, seed: int, combination: str
) -> dict[str, float]:
    """Sample cfg.eval_samples images per prompt (same noise for every model at a given seed)
    and score them with the oracle."""
    target = data.expected_classes(combination)
    prompts = [p for g in groups.values() for p in g for _ in range(cfg.eval_samples)]
    gen = torch.Generator().manual_seed(10_000 + seed)
    start = time.perf_counter()
    images = torch.cat(
        [
            models.sample(
                unet,
                text_encoder,
                prompts[i : i + 256],
                cfg.image_size,
                cfg.ddim_steps,
                cfg.guidance,
                gen,
            ).cpu()
            for i in range(0, len(prompts), 256)
        ]
    )
    seconds = time.perf_counter() - start
    pc, ps = oracle_probs(oracle, images)
    col, shp = pc.argmax(-1), ps.argmax(-1)
    out: dict[str, float] = {"samples_per_second": len(prompts) / seconds}
    offset = 0
    conf: dict[str, list[torch.Tensor]] = {"forget": [], "retain": []}
    hits: dict[str, list[torch.Tensor]] = {}
    for name, group in groups.items():
        for prompt in group:
            sl = slice(offset, offset + cfg.eval_samples)
            offset += cfg.eval_samples
            if name in ("forget", "held_out"):
                is_combo = (col[sl] == target[0]) & (shp[sl] == target[1])
                hits.setdefault(name, []).append(is_combo.float())
                conf["forget"].append(pc[sl, target[0]] * ps[sl, target[1]])
            else:
                want_c, want_s = data.expected_classes(prompt)
                ok, p = torch.ones_like(col, dtype=torch.bool)[sl], torch.ones(len(col))[sl]
                if want_c is not None:
                    ok, p = ok & (col[sl] == want_c), p * pc[sl, want_c]
                if want_s is not None:
                    ok, p = ok & (shp[sl] == want_s), p * ps[sl, want_s]
                hits.setdefault(name, []).append(ok.float())
                conf["retain"].append(p)
    out["forget_rate"] = 100 * float(torch.cat(hits["forget"]).mean())
    if hits.get("held_out"):  # empty when the erase set holds every synonym (e.g. blue circle)
        out["forget_rate_held_out"] = 100 * float(torch.cat(hits["held_out"]).mean())
    out["retain_acc_sub"] = 100 * float(torch.cat(hits["sub"]).mean())
    out["retain_acc_other"] = 100 * float(torch.cat(hits["other"]).mean())
    out["retain_acc"] = 100 * float(torch.cat(hits["sub"] + hits["other"]).mean())
    out["forget_conf"] = float(torch.cat(conf["forget"]).mean())
    out["retain_conf"] = float(torch.cat(conf["retain"]).mean())
    retain_prompts = groups["sub"] + groups["other"]
    n_forget = sum(len(groups[k]) for k in ("forget", "held_out")) * cfg.eval_samples
    real, _, _ = data.render_batch(
        [p for p in retain_prompts for _ in range(cfg.eval_samples)], cfg.image_size, gen
    )
    with torch.no_grad():
        out["fd_retain"] = frechet_distance(
            oracle.features(images[n_forget:]), oracle.features(real)
        )
    return out


def relative_to_original(m: dict[str, float], orig: dict[str, float]) -> dict[str, float]:
    """Drops in points against the unedited model, and the erase-retain ratio."""
    forget_gain = orig["forget_conf"] - m["forget_conf"]
    retain_loss = max(orig["retain_conf"] - m["retain_conf"], RETAIN_FLOOR)
    out = {
        "forget_drop": orig["forget_rate"] - m["forget_rate"],
        "retain_drop": orig["retain_acc"] - m["retain_acc"],
        "retain_drop_sub": orig["retain_acc_sub"] - m["retain_acc_sub"],
        "retain_drop_other": orig["retain_acc_other"] - m["retain_acc_other"],
        "erase_retain_ratio": forget_gain / retain_loss,
    }
    if "forget_rate_held_out" in m and "forget_rate_held_out" in orig:
        out["forget_drop_held_out"] = orig["forget_rate_held_out"] - m["forget_rate_held_out"]
    return out
