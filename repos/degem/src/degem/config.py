"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`degem train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Config:
    name: str = "quick"
    """Preset name; the benchmark writes results/<name>.json."""
    seed: int = 0
    """Random seed for the graph, the splits, initialisation and sampling."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds the benchmark runs over."""
    device: str = "cpu"
    """Torch device (cpu, cuda, cuda:1, ...)."""
    threads: int = 1
    """Torch CPU threads; 1 avoids OpenMP spin-waits that slow small graphs 25x on a busy machine."""
    out: str = "runs/quick"
    """Folder for config.json and metrics.json of a run."""
    results_dir: str = "results"
    """Folder the benchmark writes <name>.json and figures/ into."""
    quiet: bool = False
    """Hide progress bars (they are also hidden when stderr is not a terminal)."""
    graph_file: str = ""
    """A local .npz graph (CitationFull / Amazon format) to train on instead of a generated one;
    n_classes is then taken from its labels (train only)."""
    n_nodes: int = 1000
    """Nodes of the contextual SBM graph."""
    n_classes: int = 5
    """Classes (= SBM blocks) of the generated graph."""
    feat_dim: int = 64
    """Dimension of the Gaussian node features mu_y + N(0, I)."""
    class_sep: float = 2.5
    """Norm of each class mean mu_y; 2.5 gives an MLP on features alone 65-75% accuracy (brief)."""
    mean_degree: float = 10.0
    """Expected node degree of the generated graph."""
    homophily: float = 0.2
    """Expected edge homophily of the generated graph (fraction of intra-class edges)."""
    pattern: str = "random"
    """Where inter-class edges go: 'random' (any other class) or 'cyclic' (class c to c+-1)."""
    ood_classes: tuple[int, ...] = (4,)
    """Classes held out as OOD in the label leave-out shift."""
    train_frac: float = 0.1
    """Fraction of in-distribution nodes with training labels (validation gets the same)."""
    epochs: int = 100
    """Full-batch training epochs of every model."""
    hops: int = 5
    """K: hops of cached multi-hop features X^(k) = (beta I + A_hat)^k X."""
    beta: float = 0.5
    """beta: self weight in the hop operator (beta I + A_hat)."""
    hidden: int = 64
    """Width of the multi-hop encoder (per-hop maps and embedding z)."""
    energy_hidden: int = 64
    """Hidden width of the 2-layer energy head E(z; c)."""
    dropout: float = 0.5
    """Dropout on the concatenated hop embeddings (and in the GCN)."""
    lr: float = 1e-3
    """Adam learning rate of DeGEM."""
    weight_decay: float = 5e-4
    """Adam weight decay of DeGEM."""
    gamma: float = 1.0
    """gamma: weight of the energy readout sum_i p_i z_i against the mean readout."""
    rho: float = 1.0
    """rho: scale of the context c fed to the conditional energy head (0 drops it)."""
    mcmc_steps: int = 20
    """SGLD steps per epoch for the negative samples z~."""
    mcmc_step_size: float = 1.0
    """SGLD gradient step size."""
    mcmc_noise: float = 0.005
    """SGLD noise scale."""
    buffer_factor: int = 2
    """Replay buffer holds buffer_factor x (training nodes) chains."""
    buffer_prob: float = 0.95
    """Fraction of SGLD chains restarted from the replay buffer."""
    energy_bn: str = "joint"
    """Energy-head batch norm: 'joint' (data + SGLD samples in one batch), 'separate', 'none'."""
    energy_dropout: float = 0.0
    """Dropout after the energy head's batch norm (official code: 0.5, active in training only)."""
    head_steps: int = 1
    """Energy-head updates per epoch: the joint step plus head_steps - 1 head-only CD steps."""
    readout_grad: bool = False
    """Let the encoder loss reach the energy head through p = softmax(-E) in the readout (official)."""
    reg: float = 1.0
    """Weight of the energy magnitude penalty E(z)^2 + E(z~)^2."""
    cls_weight: float = 0.1
    """Weight of the classifier cross-entropy in DeGEM's loss."""
    gcn_hidden: int = 64
    """Hidden width of the GCN used by MSP, Energy and GNNSafe."""
    gcn_lr: float = 0.01
    """Adam learning rate of the GCN."""
    gcn_weight_decay: float = 0.01
    """Adam weight decay of the GCN."""
    temperature: float = 1.0
    """T in the energy score T logsumexp(logits / T)."""
    prop_layers: int = 2
    """K of GNNSafe's energy propagation e <- alpha e + (1 - alpha) D^-1 A e."""
    prop_alpha: float = 0.5
    """alpha of GNNSafe's energy propagation."""
    ablations: tuple[str, ...] = ("rho=0", "gamma=0", "head_steps=5", "official")
    """DeGEM variants the bench runs besides the default (names in config.ABLATIONS)."""
    ablation_seeds: int = 1
    """The bench runs the ablations on the first this-many of `seeds`."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    "paper": Config(
        name="paper",
        out="runs/paper",
        seeds=(0, 1, 2, 3, 4),
        epochs=200,
        ablations=("rho=0", "gamma=0", "official", "official-512"),
        ablation_seeds=2,
    ),
    "full": Config(
        name="full",
        out="runs/full",
        device="cuda",
        seeds=(0, 1, 2, 3, 4),
        n_nodes=10_000,
        epochs=200,
        hidden=512,
    ),
}

# DeGEM variants for the bench's ablation: name -> Config fields it changes.
ABLATIONS: dict[str, dict] = {
    "rho=0": {"rho": 0.0},  # the energy head ignores the readout c (no conditional energy)
    "gamma=0": {"gamma": 0.0},  # the readout is the plain mean (no energy readout)
    "head_steps=5": {"head_steps": 5},
    "head_steps=20": {"head_steps": 20},
    "readout_grad": {"readout_grad": True},  # the DGI loss trains the head through p (official)
    "official": {"energy_bn": "separate", "energy_dropout": 0.5, "readout_grad": True},
    # ... and the official width and schedule (encoder 512, 200 epochs)
    "official-512": {
        "energy_bn": "separate",
        "energy_dropout": 0.5,
        "readout_grad": True,
        "hidden": 512,
        "epochs": 200,
    },
    "energy_bn=separate": {"energy_bn": "separate"},
    "energy_bn=none": {"energy_bn": "none"},
}
PATTERNS = ("random", "cyclic")
ENERGY_BN = ("joint", "separate", "none")


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    if not 0.0 <= cfg.homophily <= 1.0:
        raise ValueError(f"homophily must lie in [0, 1], got {cfg.homophily}")
    if cfg.n_classes < 2:
        raise ValueError(f"n_classes must be >= 2, got {cfg.n_classes}")
    if cfg.n_nodes < 2 * cfg.n_classes:
        raise ValueError(
            f"n_nodes must be >= 2 * n_classes = {2 * cfg.n_classes}, got {cfg.n_nodes}"
        )
    if cfg.pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {PATTERNS}, got {cfg.pattern!r}")
    bad = [c for c in cfg.ood_classes if not 0 <= c < cfg.n_classes]
    if bad or not cfg.ood_classes:
        raise ValueError(
            f"ood_classes must name existing classes in [0, {cfg.n_classes}), got {cfg.ood_classes}"
        )
    if cfg.n_classes - len(set(cfg.ood_classes)) < 2:
        raise ValueError(
            f"ood_classes {cfg.ood_classes} leave fewer than 2 in-distribution classes"
        )
    if not 0.0 < cfg.train_frac < 0.5:
        raise ValueError(f"train_frac must lie in (0, 0.5), got {cfg.train_frac}")
    if cfg.epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {cfg.epochs}")
    if cfg.hops < 0:
        raise ValueError(f"hops must be >= 0, got {cfg.hops}")
    if cfg.mean_degree <= 0:
        raise ValueError(f"mean_degree must be > 0, got {cfg.mean_degree}")
    if cfg.threads < 1:
        raise ValueError(f"threads must be >= 1, got {cfg.threads}")
    if cfg.energy_bn not in ENERGY_BN:
        raise ValueError(f"energy_bn must be one of {ENERGY_BN}, got {cfg.energy_bn!r}")
    if not cfg.seeds:
        raise ValueError("seeds must name at least one seed")
    if cfg.head_steps < 1:
        raise ValueError(f"head_steps must be >= 1, got {cfg.head_steps}")
    if not 0.0 <= cfg.energy_dropout < 1.0:
        raise ValueError(f"energy_dropout must lie in [0, 1), got {cfg.energy_dropout}")
    unknown = [a for a in cfg.ablations if a not in ABLATIONS]
    if unknown:
        raise ValueError(f"unknown ablations {unknown}; expected names from {sorted(ABLATIONS)}")
    if cfg.ablation_seeds < 0:
        raise ValueError(f"ablation_seeds must be >= 0, got {cfg.ablation_seeds}")
    return cfg
