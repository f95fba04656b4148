"""Performance figures measured in the benchmark run: dW reconstruction against tensorly's
`tucker_to_tensor`, and the forward-pass cost of FLoRA against peft LoRA and the merged model."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

import torch

from .adapter import apply_flora, ranks_near_lora_budget, set_merged, tucker_delta
from .baselines import peft_wrap
from .config import Config
from .models import ADAPTED, SmallCNN


def median_seconds(fn: Callable[[], object], repeats: int = 30) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def entry(pid: str, what: str, ours: float, peer: str, peer_s: float) -> dict:
    return {"id": pid, "what": what, "unit": "s", "higher_is_better": False,
            "ours_value": ours, "peer": peer, "peer_value": peer_s}  # fmt: skip


@torch.no_grad()
def performance(cfg: Config) -> list[dict]:
    import tensorly as tl

    torch.manual_seed(cfg.seed)
    c, k = 4 * cfg.struct_channels, cfg.struct_kernel
    ranks = (cfg.struct_levels[-1] * 2, cfg.struct_levels[-1] * 2, k, k)
    core = torch.randn(ranks, device=cfg.device)
    factors = [torch.randn(d, r, device=cfg.device) for d, r in zip((c, c, k, k), ranks)]
    ours = median_seconds(lambda: tucker_delta(core, factors, 1.0))
    with tl.backend_context("pytorch"):
        peer = median_seconds(lambda: tl.tucker_to_tensor((core, factors)))
    out = [entry("delta-w-reconstruction", f"dW of a ({c}, {c}, {k}, {k}) weight from Tucker ranks {ranks}",
                 ours, "tensorly.tucker_to_tensor (pytorch backend)", peer)]  # fmt: skip

    base = SmallCNN().to(cfg.device).eval()
    x = torch.randn(256, 1, cfg.image_size, cfg.image_size, device=cfg.device)
    flora = copy.deepcopy(base)
    apply_flora(flora, ADAPTED["cnn"], ranks_near_lora_budget(cfg.lora_rank), cfg.scale)
    alpha = cfg.scale * cfg.lora_rank
    lora = peft_wrap(copy.deepcopy(base), "lora", ADAPTED["cnn"], cfg.lora_rank, alpha, None).eval()
    t_flora, t_lora = median_seconds(lambda: flora(x)), median_seconds(lambda: lora(x))
    set_merged(flora, True)
    t_merged = median_seconds(lambda: flora(x))
    what = f"SmallCNN forward, batch 256, {cfg.image_size}x{cfg.image_size}, adapters on conv2-4"
    return out + [
        entry("forward-vs-peft-lora", what + " (unmerged, dW rebuilt each call)", t_flora,
              "peft LoRA (unmerged)", t_lora),
        entry("forward-vs-merged", what + " (unmerged vs merged FLoRA)", t_flora,
              "FLoRA merged into the base weights", t_merged),
    ]  # fmt: skip
