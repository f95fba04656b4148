"""`data.lda_partition` against flwr_datasets' DirichletPartitioner on the quick preset's labels.

Both draw, per class, client shares from Dir(alpha) over the clients (Yurochkin et al., 2019) and
cut the class at the cumulative shares, so the two should agree in distribution (not sample for
sample: the random streams differ). DirichletPartitioner's options are set to what ours does:
min_partition_size=1 (ours redraws until no client is empty), self_balancing=False (ours never
stops feeding a client), shuffle=False (order within a client does not matter). The partitioner
gets an in-memory `datasets.Dataset` built from the labels; nothing is downloaded (conftest sets
HF_HUB_OFFLINE=1 before this module imports `datasets`).

Statistics of a split: the mean over clients of the total-variation distance between a client's
label histogram and the global one (label skew), and the coefficient of variation of the client
sizes (size skew). Ours is averaged over many seeds (it is fast), DirichletPartitioner over fewer;
the means must agree within 4 standard errors of their difference.
"""

from __future__ import annotations

import warnings
from functools import cache

import numpy as np
import pytest
from datasets import Dataset
from flwr_datasets.partitioner import DirichletPartitioner

from sparsyfed.data import lda_partition, load_digits

N_CLIENTS = 20  # the quick preset's client count
ALPHAS = (0.1, 1.0, 1000.0)  # the paper's alphas
SEEDS_OURS = range(100)
SEEDS_FLWR = range(10)
Z = 4.0


@cache
def digits_labels() -> np.ndarray:
    (_x, y), _ = load_digits(0)  # the quick preset's training labels (1437, ~144 a class)
    return y.numpy()


def split_stats(labels: np.ndarray, parts: list[np.ndarray]) -> tuple[float, float]:
    """(mean client TV distance to the global label histogram, CV of the client sizes)."""
    n_classes = int(labels.max()) + 1
    global_hist = np.bincount(labels, minlength=n_classes) / len(labels)
    tv = [
        0.5 * np.abs(np.bincount(labels[p], minlength=n_classes) / len(p) - global_hist).sum()
        for p in parts
    ]
    sizes = np.array([len(p) for p in parts], dtype=float)
    return float(np.mean(tv)), float(sizes.std() / sizes.mean())


def flwr_partition(labels: np.ndarray, n_clients: int, alpha: float, seed: int) -> list:
    dataset = Dataset.from_dict({"label": labels.tolist(), "row": list(range(len(labels)))})
    partitioner = DirichletPartitioner(
        num_partitions=n_clients,
        partition_by="label",
        alpha=float(alpha),
        min_partition_size=1,
        self_balancing=False,
        shuffle=False,
        seed=seed,
    )
    partitioner.dataset = dataset
    with warnings.catch_warnings():  # it warns on every redraw (a client came out empty)
        warnings.simplefilter("ignore", UserWarning)
        return [np.asarray(partitioner.load_partition(i)["row"]) for i in range(n_clients)]


def seed_stats(split, alpha: float, seeds) -> np.ndarray:
    """(len(seeds), 2) statistics of `split(labels, N_CLIENTS, alpha, seed)` over seeds."""
    labels = digits_labels()
    return np.array([split_stats(labels, split(labels, N_CLIENTS, alpha, s)) for s in seeds])


@cache
def ours_stats(alpha: float) -> np.ndarray:
    return seed_stats(lda_partition, alpha, SEEDS_OURS)


@cache
def flwr_stats(alpha: float) -> np.ndarray:
    return seed_stats(flwr_partition, alpha, SEEDS_FLWR)


def disagreement(ours: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|mean difference| / its standard error, per statistic (floored so near-zero spread is ok)."""
    se = np.sqrt(ours.var(0, ddof=1) / len(ours) + ref.var(0, ddof=1) / len(ref))
    return np.abs(ours.mean(0) - ref.mean(0)) / np.maximum(se, 1e-3)


def test_flwr_partitioner_covers_every_sample_once():
    labels = digits_labels()
    for alpha in (0.1, 1.0):
        parts = flwr_partition(labels, N_CLIENTS, alpha, seed=0)
        assert sorted(np.concatenate(parts).tolist()) == list(range(len(labels)))
        ours = lda_partition(labels, N_CLIENTS, alpha, seed=0)
        assert sorted(np.concatenate(ours).tolist()) == list(range(len(labels)))
        assert min(len(p) for p in ours) >= 1 and min(len(p) for p in parts) >= 1


@pytest.mark.parametrize("alpha", ALPHAS)
def test_lda_skew_matches_dirichlet_partitioner(alpha):
    ours, ref = ours_stats(alpha), flwr_stats(alpha)
    z = disagreement(ours, ref)
    msg = f"alpha={alpha}: ours (TV, CV) {ours.mean(0)}, flwr_datasets {ref.mean(0)}, z {z}"
    assert (z < Z).all(), msg


def test_alpha_orders_skew_the_same_way_for_both():
    ours = np.array([ours_stats(a).mean(0) for a in ALPHAS])
    ref = np.array([flwr_stats(a).mean(0) for a in ALPHAS])
    for name, means in (("ours", ours), ("flwr_datasets", ref)):
        tv, cv = means.T  # alpha 0.1, 1, 1000: label and size skew both fall
        assert tv[0] > tv[1] > tv[2] and cv[0] > cv[1] > cv[2], (name, means)
        assert tv[0] > 0.6 and tv[2] < 0.1, (name, means)


def iid_split(labels, n_clients, alpha, seed):
    return np.array_split(np.random.default_rng(seed).permutation(len(labels)), n_clients)


def alpha_ignored_split(labels, n_clients, alpha, seed):
    return lda_partition(labels, n_clients, 1.0, seed)


def equal_size_split(labels, n_clients, alpha, seed):
    """Label skew of `lda_partition` with every client cut to the same size (sizes not skewed)."""
    parts = lda_partition(labels, n_clients, alpha, seed)
    order = np.concatenate(parts)
    return np.array_split(order, n_clients)


def alpha_halved_split(labels, n_clients, alpha, seed):
    return lda_partition(labels, n_clients, alpha / 2, seed)


@pytest.mark.parametrize(
    "wrong", [iid_split, alpha_ignored_split, equal_size_split, alpha_halved_split]
)
def test_comparison_rejects_wrong_splits(wrong):
    """The check above has power: IID, alpha ignored or halved, or equal sizes fail it by far."""
    worst = max(disagreement(seed_stats(wrong, 0.1, SEEDS_OURS), flwr_stats(0.1)).max(), 0)
    assert worst > 2 * Z, (wrong.__name__, worst)
