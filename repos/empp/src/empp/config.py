"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`empp train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses

from .runtime import Annotated, Ge, Gt, MinLen, RunConfig, check_bounds

TARGETS = ("u0", "gap", "mu")


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    """`seed` seeds the split, the initialisation and the masking."""

    resume: bool = False
    """Continue from the last checkpoint in --out (skips training when it is complete)."""
    method: str = "empp"
    """Arm: supervised, empp, empp_nolabel, empp_pretrain, denoise, element_mask, schnet."""
    task: str = "qm9"
    """Data for `train`: qm9 (QM9-like property regression) or md (MD17-like energy+forces)."""
    target: str = "gap"
    """QM9-like label: u0 (MMFF energy, element references removed), gap (EHT), mu (dipole)."""
    qm9_dir: str = ""
    """Folder of real QM9 .xyz files for task qm9 (empty: the rdkit QM9-like set); target u0, gap
    or mu is read from the file's U0 / gap / mu fields (Hartree, Hartree, Debye)."""
    qm9_csv: str = ""
    """Real QM9 (DFT, hydrogens included) as CSV tables in the qm9pack layout for task qm9: a
    .csv file, a folder of them, or 'qm9pack' for the tables inside the installed qm9pack==1.0.3
    wheel. The molecules and the train/val/test split are fixed (a hash of each molecule's
    Index), the seed only changes initialisation and masking. Takes precedence over qm9_dir."""
    md17_npz: str = ""
    """Real MD17 / rMD17 .npz trajectory for task md, or a folder holding md17_<md_molecule>.npz
    (or rmd17_<md_molecule>.npz); empty: the MMFF94 MD-like set."""
    n_train: Annotated[int, Ge(2)] = 192
    """Training molecules of the QM9-like set."""
    n_val: Annotated[int, Ge(0)] = 0
    """Validation molecules of the QM9(-like) set, used to pick each arm's lr from lr_grid."""
    n_test: Annotated[int, Ge(1)] = 96
    """Test molecules of the QM9-like set."""
    md_n_train: Annotated[int, Ge(2)] = 96
    """Training frames of the MD-like trajectory (the benchmark's MD part)."""
    md_n_test: Annotated[int, Ge(1)] = 64
    """Test frames of the MD-like trajectory."""
    n_pretrain: Annotated[int, Ge(0)] = 96
    """Extra unlabelled QM9-like molecules for EMPP pre-training (method empp_pretrain)."""
    pretrain_epochs: Annotated[int, Ge(0)] = 8
    """EMPP-only pre-training epochs (over the extra molecules and the training geometries)."""
    max_heavy: Annotated[int, Ge(1)] = 9
    """Largest molecule kept from rdkit's NCI SMILES (heavy atoms, C/N/O/F only)."""
    hydrogens: bool = False
    """Keep H atoms in the QM9-like set (labels are always computed with them)."""
    md_molecule: str = "ethanol"
    """MD-like system: ethanol, malonaldehyde, uracil or aspirin."""
    md_temperature: Annotated[float, Gt(0)] = 500.0
    """Langevin temperature (K) of the MMFF94 trajectory."""
    md_stride: Annotated[int, Ge(1)] = 10
    """MD steps (0.5 fs each) between stored frames."""
    epochs: Annotated[int, Ge(1)] = 20
    """Training epochs over the training set."""
    batch_size: Annotated[int, Ge(1)] = 32
    """Molecules per optimiser step."""
    lr: Annotated[float, Gt(0)] = 1e-2
    """Peak AdamW learning rate, cosine decay to lr/100 after one warm-up epoch (paper: 5e-4)."""
    lr_grid: Annotated[tuple[float, ...], Gt(0)] = ()
    """Peak learning rates the benchmark tries for every arm on the first seed, keeping the one
    with the lowest validation MAE (needs n_val > 0); empty: every arm uses lr, untuned."""
    aux_grid: Annotated[tuple[float, ...], Ge(0)] = ()
    """Further auxiliary-loss weights the benchmark tries (after the lr, at the chosen lr, on the
    first seed) for arms with an auxiliary loss; aux_weight is always tried. Needs n_val > 0."""
    tasks: Annotated[tuple[str, ...], MinLen(1)] = ("qm9", "md")
    """Parts of the benchmark to run: qm9 (property regression) and/or md (energy+forces)."""
    weight_decay: Annotated[float, Ge(0)] = 5e-3
    """AdamW weight decay (paper: 5e-3)."""
    force_weight: Annotated[float, Ge(0)] = 10.0
    """Weight of the force L1 loss on MD-like data (energy weight is 1)."""
    irreps_hidden: str = "16x0e+4x1o+2x2e"
    """Hidden node irreps of the NequIP-style network (paper: 128x0e+64x1e+32x2e)."""
    num_layers: Annotated[int, Ge(1)] = 2
    """Interaction blocks."""
    cutoff: Annotated[float, Gt(0)] = 4.0
    """Radius-graph cutoff of the backbone (Angstrom; paper 5)."""
    head_cutoff: Annotated[float, Gt(0)] = 5.0
    """Neighbours of the masked atom that predict its position (Angstrom; paper 5)."""
    schnet_hidden: Annotated[int, Ge(1)] = 32
    """Hidden channels and filters of the PyG SchNet peer (16 matches our quick backbone's size)."""
    num_basis: Annotated[int, Ge(1)] = 8
    """Bessel radial basis functions."""
    num_mask: Annotated[int, Ge(1)] = 1
    """EMPP copies per molecule, each missing one different random atom."""
    head_channels: Annotated[int, Ge(1)] = 16
    """Spherical functions per neighbour in the EMPP head (paper: 32)."""
    grid_beta: Annotated[int, Ge(1)] = 16
    """S2 grid points in beta (paper: 100)."""
    grid_alpha: Annotated[int, Ge(1)] = 17
    """S2 grid points in alpha (paper: 101)."""
    num_radius_bins: Annotated[int, Ge(1)] = 128
    """Radius bins on [0, radius_max] in the EMPP head (official code: 128)."""
    head_mlp: str = "official"
    """Point and radius MLPs of the EMPP head: official (nn.Linear with biases, SiLU, as the
    official code) or e3nn (FullyConnectedNet: no biases, rescaled SiLU; earlier versions)."""
    radius_max: Annotated[float, Gt(0)] = 6.0
    """Largest radius bin centre (Angstrom)."""
    temperature: Annotated[float, Gt(0)] = 0.1
    """Softmax temperature of the direction logits and targets (paper: 0.1)."""
    aux_weight: Annotated[float, Ge(0)] = 1.0
    """Weight of the auxiliary loss (EMPP, denoising or element masking)."""
    noise_std: Annotated[float, Ge(0)] = 0.05
    """Coordinate-denoising noise (Angstrom)."""


PRESETS: dict[str, Config] = {
    "quick": Config(),
    # Real QM9 (DFT geometries with hydrogens, from the qm9pack wheel), HOMO-LUMO gap in eV, a
    # fixed 1600/200/600 split plus 1600 unlabelled molecules for pre-training; every arm picks
    # its lr from the same grid on the validation split (then the auxiliary arms their loss
    # weight from {1, 0.3} at that lr); 3 paired seeds; QM9 part only. The grid starts at 4e-2:
    # a pilot of the supervised arm (seed 0, validation MAE) gave 0.544 / 0.522 / 0.447 eV at
    # lr 2e-2 / 4e-2 / 8e-2, and the previous grid {5e-3, 1e-2, 2e-2} ended at its upper edge
    # for every arm. About 33 min on one idle core (README, Wall time).
    "paper": Config(
        name="paper",
        out="runs/paper",
        seeds=(0, 1, 2),
        tasks=("qm9",),
        qm9_csv="qm9pack",
        target="gap",
        n_train=1600,
        n_val=200,
        n_test=600,
        n_pretrain=1600,
        pretrain_epochs=2,
        epochs=6,
        cutoff=5.0,
        lr_grid=(4e-2, 8e-2, 1.6e-1),
        aux_grid=(0.3,),
        schnet_hidden=16,  # 6.2k parameters against our backbone's 6.9k: comparable size
    ),
    # The paper's QM9 experiment: real QM9 (qm9pack tables, DFT gap in eV) on the paper's split
    # sizes (110k train, the rest minus 10k validation for test; no validation here, the lr is
    # the paper's), the paper's Equiformer width and head, 300 epochs; the MD part reads a
    # folder of MD17 / rMD17 files with --md17-npz (the paper's aspirin), otherwise the MMFF94
    # aspirin stand-in. GPU scale (README, Scaling up).
    "full": Config(
        name="full",
        out="runs/full",
        device="auto",
        qm9_csv="qm9pack",
        target="gap",
        n_train=110000,
        n_test=10831,
        n_pretrain=0,
        pretrain_epochs=100,
        cutoff=5.0,
        epochs=300,
        batch_size=128,
        lr=5e-4,
        irreps_hidden="128x0e+64x1o+32x2e",
        num_layers=4,
        head_channels=32,
        grid_beta=100,
        grid_alpha=101,
        md_molecule="aspirin",
        md_n_train=1000,
        md_n_test=1000,
        md_stride=20,
    ),
}

METHODS = (
    "supervised",
    "empp",
    "empp_nolabel",
    "empp_pretrain",
    "denoise",
    "element_mask",
    "schnet",
)


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    check_bounds(cfg)
    if cfg.method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {cfg.method!r}")
    if cfg.task not in ("qm9", "md"):
        raise ValueError(f"task must be 'qm9' or 'md', got {cfg.task!r}")
    if cfg.target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {cfg.target!r}")
    if cfg.head_mlp not in ("official", "e3nn"):
        raise ValueError(f"head_mlp must be 'official' or 'e3nn', got {cfg.head_mlp!r}")
    if cfg.aux_grid and not cfg.lr_grid:
        raise ValueError(f"aux_grid {cfg.aux_grid} is tuned after lr_grid; give lr_grid too")
    if cfg.lr_grid and cfg.n_val < 1:
        raise ValueError(f"lr_grid {cfg.lr_grid} needs n_val >= 1 validation molecules")
    if any(t not in ("qm9", "md") for t in cfg.tasks):
        raise ValueError(f"tasks must be a non-empty subset of ('qm9', 'md'), got {cfg.tasks}")
    return cfg
