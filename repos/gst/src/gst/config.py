"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`gst train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

METHODS = ("gst", "gst_gen", "nvs_only", "pose_only", "cnn_pose")


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
    seed: int = 0
    """Random seed for data, tokenizers, initialisation and sampling."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds the benchmark runs over."""
    methods: tuple[str, ...] = METHODS
    """Methods: gst (joint, GEN/EST orders alternating), gst_gen (joint, GEN order only),
    nvs_only, pose_only, cnn_pose."""
    device: str = "cpu"
    """Torch device (cpu, cuda, cuda:1, ...)."""
    threads: int = 1
    """Torch CPU threads."""
    out: str = "runs/quick"
    """Folder for config.json, metrics.json, checkpoints and figures."""
    results_dir: str = "results"
    """Folder the benchmark writes <name>.json and figures/ into."""
    quiet: bool = False
    """Hide progress bars (they are also hidden when stderr is not a terminal)."""
    resume: bool = False
    """Continue from the checkpoint in --out if one exists (skips training)."""
    image_size: int = 24
    """Rendered image (and Pluecker map) side in pixels."""
    n_objects: int = 4
    """Random asymmetric objects in the scene set."""
    n_train: int = 8000
    """Training observation/target pairs."""
    n_test: int = 128
    """Held-out pairs for evaluation (same objects, new cameras)."""
    tokenizer: str = "kmeans"
    """kmeans (faiss patch codebooks) or vqvae (trained unit-norm VQ-VAEs)."""
    grid: int = 4
    """Tokens per side of every segment (image and camera): grid*grid tokens each."""
    image_codes: int = 256
    """Image codebook size."""
    camera_codes: int = 256
    """Camera codebook size."""
    vq_steps: int = 2000
    """VQ-VAE training steps (tokenizer=vqvae only)."""
    width: int = 64
    """Transformer width."""
    depth: int = 2
    """Transformer layers."""
    heads: int = 4
    """Attention heads (head dim must be divisible by 4)."""
    dropout: float = 0.0
    """Dropout on tokens, residuals and feed-forward (official: 0.1)."""
    qk_norm: bool = True
    """LayerNorm on queries and keys (official default)."""
    steps: int = 600
    """AdamW steps per task order (gst, which alternates two orders, gets twice as many)."""
    batch: int = 32
    """Sequences per step."""
    lr: float = 2e-3
    """Peak learning rate (linear warm-up, cosine decay)."""
    weight_decay: float = 0.05
    """AdamW weight decay."""
    warmup: int = 20
    """Warm-up steps."""
    temperature: float = 1.0
    """Sampling temperature (official: 1.0)."""
    top_k: int = 100
    """Top-k after slot masking (official: 100); 0 keeps the whole slot."""
    pose_candidates: int = 64
    """Training cameras ranked by likelihood to localise (gst_gen has no other way); 0: off."""
    cnn_width: int = 32
    """Channels of the rotation-regression CNN baseline."""
    perf_batch: int = 32
    """Batch for the tokens-per-second comparison with transformers' LlamaForCausalLM."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # the paper preset (width >= 128, depth >= 4, more objects and pairs), sized to about
    # 25 minutes on one CPU core: at ~0.23 s of CPU per step of this decoder (measured) the
    # budget leaves 300 steps per task order for 4 autoregressive models x 3 seeds (README)
    "paper": Config(
        name="paper",
        out="runs/paper",
        n_objects=8,
        n_train=16_000,
        width=128,
        depth=4,
        heads=4,
        steps=300,
        pose_candidates=32,
    ),
    "full": Config(
        name="full",
        out="runs/full",
        device="cuda",
        image_size=64,
        n_objects=64,
        n_train=200_000,
        n_test=2000,
        tokenizer="vqvae",
        grid=16,
        image_codes=16384,
        camera_codes=2048,
        vq_steps=20_000,
        width=768,
        depth=12,
        heads=12,
        dropout=0.1,
        steps=100_000,
        batch=128,
        lr=3e-4,
        warmup=2000,
        cnn_width=128,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    if cfg.steps < 1:
        raise ValueError(f"steps must be >= 1, got {cfg.steps}")
    if cfg.lr <= 0:
        raise ValueError(f"lr must be > 0, got {cfg.lr}")
    if cfg.batch < 1 or cfg.n_train < 1 or cfg.n_test < 1:
        raise ValueError(
            f"batch, n_train, n_test must be >= 1, got {cfg.batch}, {cfg.n_train}, {cfg.n_test}"
        )
    if cfg.tokenizer not in ("kmeans", "vqvae"):
        raise ValueError(f"tokenizer must be 'kmeans' or 'vqvae', got {cfg.tokenizer!r}")
    if cfg.grid < 1 or cfg.image_size % cfg.grid:
        raise ValueError(f"grid {cfg.grid} must divide image_size {cfg.image_size}")
    if cfg.width % cfg.heads or (cfg.width // cfg.heads) % 4:
        raise ValueError(
            f"width/heads must be an integer divisible by 4, got {cfg.width}/{cfg.heads}"
        )
    unknown = set(cfg.methods) - set(METHODS)
    if unknown or not cfg.methods:
        raise ValueError(f"methods must be a non-empty subset of {METHODS}, got {cfg.methods}")
    if not cfg.seeds:
        raise ValueError("seeds must name at least one seed")
    if cfg.pose_candidates < 0:
        raise ValueError(f"pose_candidates must be >= 0, got {cfg.pose_candidates}")
    if cfg.threads < 1:
        raise ValueError(f"threads must be >= 1, got {cfg.threads}")
    return cfg
