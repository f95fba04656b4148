"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`sparsyfed train --help`). Bounds stand beside their fields
(`Annotated[float, Interval(ge=0, lt=1)]`, checked by runtime.check_bounds); `validate` adds the
checks that involve several fields or a set of names. Presets are plain instances; a command-line
flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

from .runtime import Annotated, Ge, Gt, Interval, MinLen, RunConfig, check_bounds

ARCH_NAMES = ("mlp", "mlp_gn", "cnn", "cifar_cnn_gn", "resnet18")
METHOD_NAMES = ("dense", "topk", "flash", "sparsyfed", "sparsyfed_na", "sparsyfed_b1")
DATASETS = ("digits", "cifar10", "synth_cifar10")
SPLITS = ("lda", "lda_equal")
SPARSITY = Interval(ge=0, lt=1)
"""A sparsity s: the fraction of zero weights, below 1."""


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    method: str = "sparsyfed"
    """What `train` runs: dense (FedAvg), topk, flash (fixed mask), sparsyfed, sparsyfed_na."""
    dataset: str = "digits"
    """digits (sklearn, bundled), cifar10 (python pickle batches in --data-dir) or synth_cifar10
    (a synthetic CIFAR-10-shaped set, written as such batches into --data-dir if absent)."""
    data_dir: str = ""
    """Folder holding CIFAR-10's data_batch_1..5 and test_batch (cifar10, synth_cifar10)."""
    arch: str = "mlp"
    """Model: mlp (64-256-256-10, ~84k weights), mlp_gn (the same with GroupNorm), cnn or resnet18."""
    resnet_width: Annotated[int, Ge(1)] = 64
    """Channels of the ResNet-18 stem (64 in the paper)."""
    n_clients: Annotated[int, Ge(1)] = 20
    """Clients the training set is split across."""
    clients_per_round: Annotated[int, Ge(1)] = 5
    """Clients sampled (without replacement) each round."""
    rounds: Annotated[int, Ge(1)] = 30
    """Federated rounds T."""
    local_epochs: Annotated[int, Ge(1)] = 1
    """Local epochs per client per round."""
    batch_size: Annotated[int, Ge(1)] = 16
    """Local mini-batch size."""
    lr0: Annotated[float, Gt(0)] = 0.5
    """Initial learning rate of the exponential schedule lr_t = lr0 (lr_final/lr0)^(t/T)."""
    lr_final: Annotated[float, Gt(0)] = 0.01
    """Learning rate of the last round."""
    weight_decay: Annotated[float, Ge(0)] = 1e-3
    """SGD weight decay on omega (no momentum, as in the official client)."""
    alpha: Annotated[float, Gt(0)] = 0.1
    """LDA concentration of the label split (1000 ~ iid, 0.1 very non-iid)."""
    split: str = "lda"
    """Client split: lda (each class cut at Dir(alpha) shares, client sizes vary) or lda_equal
    (the official code's Flower create_lda_partitions: Dir(alpha) class mix, equal sizes)."""
    val_fraction: Annotated[float, Interval(ge=0, lt=1)] = 0.0
    """Fraction of each training class held out as a validation set (the paper holds out 0.1;
    equal tuning reads it); the clients split the rest. 0: none."""
    sparsity: Annotated[float, SPARSITY] = 0.9
    """Target sparsity s of every upload (fraction of zero weights after local pruning)."""
    beta: Annotated[float, Gt(0)] = 1.25
    """Powerpropagation exponent, SparsyFed's single hyperparameter."""
    eval_every: Annotated[int, Ge(1)] = 5
    """Evaluate the global model every this many rounds (and always after the last)."""
    bench_alphas: Annotated[tuple[float, ...], MinLen(1), Gt(0)] = (0.1, 1000.0)
    """LDA alphas the benchmark sweeps (the first is the headline one)."""
    bench_sparsities: Annotated[tuple[float, ...], MinLen(1), SPARSITY] = (0.9, 0.95)
    """Target sparsities the benchmark sweeps (the first is the headline one)."""
    bench_norm_arch: str = "mlp_gn"
    """Also run the headline point with this model, reported only (normalisation check; '' skips)."""
    bench_tune_lr0s: Annotated[tuple[float, ...], Gt(0)] = ()
    """Equal tuning: dense, Top-K and SparsyFed at the headline point each train with every one
    of these lr0 (lr_final scaled alike; the plain rows are the --lr0 entry) and keep the lr0 of
    best mean validation accuracy over the seeds (needs --val-fraction > 0); () skips."""
    bench_splits: tuple[str, ...] = ()
    """Also run dense, Top-K and SparsyFed at the headline point with each of these splits."""
    workers: Annotated[int, Ge(1)] = 1
    """Benchmark runs trained in parallel (processes of --threads threads each)."""
    reuse_runs: bool = False
    """Benchmark: take metrics.json of a run folder whose config.json equals the run's config
    instead of training again (resumes a bench that stopped; same code assumed)."""
    flower_rounds: Annotated[int, Ge(0)] = 0
    """Rounds of the opt-in in-process vs Flower-simulation timing in the benchmark (0 skips it,
    with the reason in the results file: Ray's start-up can hang on a loaded 2-core machine)."""
    flower_timeout_s: Annotated[float, Gt(0)] = 180.0
    """Wall-clock limit of that timing (a child process group, killed when it runs over; the
    row is then skipped with the reason)."""
    flower_client_cpus: Annotated[float, Gt(0)] = 1.0
    """Flower simulation: CPU cores Ray reserves for each client (client_resources num_cpus)."""
    flower_client_gpus: Annotated[float, Interval(ge=0, le=1)] = 0.0
    """Flower simulation: GPU fraction Ray reserves for each client (client_resources num_gpus;
    0.1 trains 10 clients on one GPU at a time); used only when the device is CUDA."""
    flower_ray_cpus: Annotated[int, Ge(1)] = 1
    """Flower simulation: CPU cores the Ray instance may use (init_args num_cpus); with
    flower_client_cpus it bounds how many clients train at once."""
    eval_file: str = ""
    """eval only: also test the saved model on this CIFAR-10 python batch file (test_batch or a
    file of yours in that format); the run must have been trained on cifar10 or synth_cifar10."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # The paper's regime at CPU size: a normalised conv net on CIFAR-10-shaped images read through
    # the CIFAR loader, 120 rounds of ~20 local steps, every sparsity of the paper; the paper's 10%
    # validation hold-out in every run, so the plain rows are the lr0 = 0.5 entry of equal tuning.
    #
    # Cost (issue 63: <= 45 min on 2 idle cores, tuning included). Measured with 7-8 round probes
    # of one run, one thread, CPU seconds of the process (the shared 2-core machine was at load
    # 5-9 with other benches at higher priority, wall 2-10x CPU, so CPU time stands in for idle
    # wall time), rounds 2..R-1: SparsyFed 0.58 ms per client example (0.81 s a round on the
    # full training set, 0.56 s on a hold-out split), dense 0.45 ms (0.64 s a round), Top-K
    # 0.36 ms; one evaluation (2,000 test images, dense and pruned) 0.2 s; once per worker
    # process ~10 s (torch and torch._dynamo imports). With 1,152 client examples a round
    # (4 x 320, less the hold-out) a 120-round run costs ~82 s with activation pruning
    # (sparsyfed, sparsyfed_b1) and ~64 s without. Cross-check: the 39-run preset of deb30ab
    # trained in ~1,530 s with 2 workers, 78 s a run; these figures give 77 s.
    # Grid: 13 runs + 3 (lda_equal) + 6 (lr0 0.25 and 1.0 for dense, Top-K, SparsyFed) = 22 a
    # seed (8 with activation pruning), 1,552 s of CPU, x 3 seeds / 2 workers = 2,330 s, plus
    # worker start-up and each seed's last run alone (~45 s a seed): ~2,470 s, about 41 min.
    # The previous design (27 tuning runs on their own 15% hold-out beside 48 full-data runs)
    # costs 5,530 s of CPU: 2,760 s on 2 workers, ~2,910 s (49 min) with the same overheads.
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
        val_fraction=0.1,  # the paper's validation ratio
        bench_tune_lr0s=(0.25, 0.5, 1.0),  # brackets the paper's lr0 = 0.5 (lr_final alike)
        bench_splits=("lda_equal",),
        workers=2,
    ),
    "full": Config(
        name="full",
        out="runs/full",
        device="auto",
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
        # one GPU, 16 cores: the round's 10 clients train side by side, 0.1 GPU and 1 core each
        flower_client_cpus=1.0,
        flower_client_gpus=0.1,
        flower_ray_cpus=10,
    ),
}


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    check_bounds(cfg)
    if cfg.method not in METHOD_NAMES:
        raise ValueError(f"method must be one of {METHOD_NAMES}, got {cfg.method!r}")
    if cfg.dataset not in DATASETS or cfg.arch not in ARCH_NAMES:
        raise ValueError(
            f"dataset/arch must be {'|'.join(DATASETS)} / {'|'.join(ARCH_NAMES)}, "
            f"got {cfg.dataset}/{cfg.arch}"
        )
    if cfg.dataset != "digits" and not cfg.data_dir:
        raise ValueError(f"dataset {cfg.dataset} needs --data-dir (the folder of its batches)")
    for split in (cfg.split, *cfg.bench_splits):
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if cfg.bench_norm_arch not in ("", *ARCH_NAMES):
        raise ValueError(
            f"bench_norm_arch must be '' or one of {ARCH_NAMES}, got {cfg.bench_norm_arch}"
        )
    if cfg.bench_tune_lr0s and cfg.val_fraction <= 0:
        raise ValueError(
            f"bench_tune_lr0s {list(cfg.bench_tune_lr0s)} picks lr0 on a validation hold-out: "
            "set --val-fraction > 0"
        )
    if cfg.clients_per_round > cfg.n_clients:
        raise ValueError(
            f"clients_per_round must be in [1, n_clients={cfg.n_clients}], "
            f"got {cfg.clients_per_round}"
        )
    return cfg
