"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`sparsyfed train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

ARCH_NAMES = ("mlp", "mlp_gn", "cnn", "cifar_cnn_gn", "resnet18")
METHOD_NAMES = ("dense", "topk", "flash", "sparsyfed", "sparsyfed_na", "sparsyfed_b1")
DATASETS = ("digits", "cifar10", "synth_cifar10")


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
    seed: int = 0
    """Random seed for the data split, initialisation, client sampling and batches."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds the benchmark runs over."""
    device: str = "cpu"
    """Torch device (cpu, cuda, cuda:1, ...)."""
    threads: int = 1
    """Torch CPU threads (the project machines share 2 cores)."""
    out: str = "runs/quick"
    """Folder for config.json, metrics.json and history.json of a run."""
    results_dir: str = "results"
    """Folder the benchmark writes <name>.json and figures/ into."""
    quiet: bool = False
    """Hide progress bars (they are also hidden when stderr is not a terminal)."""
    method: str = "sparsyfed"
    """What `train` runs: dense (FedAvg), topk, flash (fixed mask), sparsyfed, sparsyfed_na."""
    dataset: str = "digits"
    """digits (sklearn, bundled), cifar10 (python pickle batches in --data-dir) or synth_cifar10
    (a synthetic CIFAR-10-shaped set, written as such batches into --data-dir if absent)."""
    data_dir: str = ""
    """Folder holding CIFAR-10's data_batch_1..5 and test_batch (cifar10, synth_cifar10)."""
    arch: str = "mlp"
    """Model: mlp (64-256-256-10, ~84k weights), mlp_gn (the same with GroupNorm), cnn or resnet18."""
    resnet_width: int = 64
    """Channels of the ResNet-18 stem (64 in the paper)."""
    n_clients: int = 20
    """Clients the training set is split across."""
    clients_per_round: int = 5
    """Clients sampled (without replacement) each round."""
    rounds: int = 30
    """Federated rounds T."""
    local_epochs: int = 1
    """Local epochs per client per round."""
    batch_size: int = 16
    """Local mini-batch size."""
    lr0: float = 0.5
    """Initial learning rate of the exponential schedule lr_t = lr0 (lr_final/lr0)^(t/T)."""
    lr_final: float = 0.01
    """Learning rate of the last round."""
    weight_decay: float = 1e-3
    """SGD weight decay on omega (no momentum, as in the official client)."""
    alpha: float = 0.1
    """LDA concentration of the label split (1000 ~ iid, 0.1 very non-iid)."""
    sparsity: float = 0.9
    """Target sparsity s of every upload (fraction of zero weights after local pruning)."""
    beta: float = 1.25
    """Powerpropagation exponent, SparsyFed's single hyperparameter."""
    eval_every: int = 5
    """Evaluate the global model every this many rounds (and always after the last)."""
    bench_alphas: tuple[float, ...] = (0.1, 1000.0)
    """LDA alphas the benchmark sweeps (the first is the headline one)."""
    bench_sparsities: tuple[float, ...] = (0.9, 0.95)
    """Target sparsities the benchmark sweeps (the first is the headline one)."""
    bench_norm_arch: str = "mlp_gn"
    """Also run the headline point with this model, reported only (normalisation check; '' skips)."""
    reuse_runs: bool = False
    """Benchmark: take metrics.json of a run folder whose config.json equals the run's config
    instead of training again (resumes a bench that stopped; same code assumed)."""
    flower_rounds: int = 0
    """Rounds of the opt-in in-process vs Flower-simulation timing in the benchmark (0 skips it,
    with the reason in the results file: Ray's start-up can hang on a loaded 2-core machine)."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # The paper's regime at CPU size: a normalised conv net on CIFAR-10-shaped images read through
    # the CIFAR loader, 120 rounds of ~20 local steps, every sparsity of the paper.
    "paper": Config(
        name="paper",
        out="runs/paper",
        dataset="synth_cifar10",
        data_dir="runs/paper/synth-cifar10",
        arch="cifar_cnn_gn",
        n_clients=20,
        clients_per_round=4,
        rounds=120,
        eval_every=20,
        bench_alphas=(0.1, 1.0),
        bench_sparsities=(0.9, 0.95, 0.99),
        bench_norm_arch="",
    ),
    "full": Config(
        name="full",
        out="runs/full",
        device="cuda",
        dataset="cifar10",
        data_dir="data/cifar-10-batches-py",
        arch="resnet18",
        n_clients=100,
        clients_per_round=10,
        rounds=700,
        eval_every=10,
        bench_alphas=(0.1, 1.0, 1000.0),
        bench_sparsities=(0.9, 0.95, 0.99),
        bench_norm_arch="",
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    if not 0.0 <= cfg.sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), got {cfg.sparsity}")
    if any(not 0.0 <= s < 1.0 for s in cfg.bench_sparsities) or not cfg.bench_sparsities:
        raise ValueError(f"bench_sparsities must be in [0, 1), got {cfg.bench_sparsities}")
    if cfg.beta <= 0:
        raise ValueError(f"beta must be > 0, got {cfg.beta}")
    if cfg.alpha <= 0 or not cfg.bench_alphas or min(cfg.bench_alphas) <= 0:
        raise ValueError(f"alpha must be > 0, got {cfg.alpha} / {cfg.bench_alphas}")
    if cfg.method not in METHOD_NAMES:
        raise ValueError(f"method must be one of {METHOD_NAMES}, got {cfg.method!r}")
    if cfg.dataset not in DATASETS or cfg.arch not in ARCH_NAMES:
        raise ValueError(
            f"dataset/arch must be {'|'.join(DATASETS)} / {'|'.join(ARCH_NAMES)}, "
            f"got {cfg.dataset}/{cfg.arch}"
        )
    if cfg.dataset != "digits" and not cfg.data_dir:
        raise ValueError(f"dataset {cfg.dataset} needs --data-dir (the folder of its batches)")
    if cfg.bench_norm_arch not in ("", *ARCH_NAMES):
        raise ValueError(
            f"bench_norm_arch must be '' or one of {ARCH_NAMES}, got {cfg.bench_norm_arch}"
        )
    if cfg.rounds < 1 or cfg.local_epochs < 1 or cfg.batch_size < 1 or cfg.eval_every < 1:
        raise ValueError("rounds, local_epochs, batch_size and eval_every must be >= 1")
    if not 1 <= cfg.clients_per_round <= cfg.n_clients:
        raise ValueError(
            f"clients_per_round must be in [1, n_clients={cfg.n_clients}], "
            f"got {cfg.clients_per_round}"
        )
    if cfg.lr0 <= 0 or cfg.lr_final <= 0:
        raise ValueError(f"lr0 and lr_final must be > 0, got {cfg.lr0} and {cfg.lr_final}")
    if cfg.threads < 1:
        raise ValueError(f"threads must be >= 1, got {cfg.threads}")
    if not cfg.seeds:
        raise ValueError("seeds must name at least one seed")
    return cfg
