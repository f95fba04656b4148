"""LDA split, digits loader, and the CIFAR-10 pickle loader on a file the test writes."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from sparsyfed.data import (
    lda_partition,
    load_cifar10,
    load_digits,
    synthetic_cifar10,
    write_synthetic_cifar10,
)


@pytest.mark.parametrize("alpha", [1000.0, 1.0, 0.1])
def test_lda_partitions_non_empty_disjoint_and_deterministic(alpha):
    labels = np.repeat(np.arange(10), 50)
    parts = lda_partition(labels, 20, alpha, seed=1)
    assert len(parts) == 20 and all(len(p) > 0 for p in parts)
    flat = np.concatenate(parts)
    assert sorted(flat.tolist()) == list(range(500))
    again = lda_partition(labels, 20, alpha, seed=1)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again, strict=True))


def test_lda_large_alpha_is_near_uniform_small_alpha_is_skewed():
    labels = np.repeat(np.arange(10), 200)

    def mean_max_share(alpha):
        parts = lda_partition(labels, 10, alpha, seed=0)
        return np.mean([np.bincount(labels[p], minlength=10).max() / len(p) for p in parts])

    assert mean_max_share(1000.0) < 0.2
    assert mean_max_share(0.1) > 0.5


def test_lda_bad_input_errors():
    labels = np.arange(5) % 2
    with pytest.raises(ValueError, match="6 clients but only 5 samples"):
        lda_partition(labels, 6, 1.0, 0)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        lda_partition(labels, 2, 0.0, 0)
    with pytest.raises(ValueError, match="left a client empty"):
        lda_partition(np.zeros(5, dtype=int), 5, 0.001, 0, max_tries=3)


def test_digits_split_is_deterministic():
    (xa, ya), (_xt, yt) = load_digits(0)
    (xb, yb), _ = load_digits(0)
    assert xa.shape[1:] == (1, 8, 8) and float(xa.max()) <= 1.0
    assert len(ya) + len(yt) == 1797 and (xa == xb).all() and (ya == yb).all()


def write_tiny_cifar(folder, n=6, seed=0):
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    batches = {}
    for name in ("data_batch_1", "data_batch_2", "test_batch"):
        data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, n).tolist()
        batches[name] = (data, labels)
        with open(folder / name, "wb") as fh:
            pickle.dump({b"data": data, b"labels": labels, b"batch_label": b"x"}, fh)
    return batches


def test_cifar_loader_reads_python_batches(tmp_path):
    batches = write_tiny_cifar(tmp_path / "cifar")
    (xtr, ytr), (xte, _yte) = load_cifar10(tmp_path / "cifar")
    assert xtr.shape == (12, 3, 32, 32) and xte.shape == (6, 3, 32, 32)
    assert ytr.tolist() == batches["data_batch_1"][1] + batches["data_batch_2"][1]
    raw = batches["data_batch_1"][0][0].reshape(3, 32, 32)[1, 0, 0] / 255.0
    assert float(xtr[0, 1, 0, 0]) == pytest.approx((raw - 0.4822) / 0.2435, abs=1e-5)


def test_cifar_loader_errors(tmp_path):
    with pytest.raises(ValueError, match="no CIFAR-10 python batches"):
        load_cifar10(tmp_path)
    write_tiny_cifar(tmp_path)
    with open(tmp_path / "data_batch_1", "wb") as fh:
        pickle.dump({b"nope": 1}, fh)
    with pytest.raises(ValueError, match="data_batch_1 is not a CIFAR-10 python batch"):
        load_cifar10(tmp_path)
    (tmp_path / "data_batch_1").write_bytes(b"certainly not a pickle")
    with pytest.raises(ValueError, match="data_batch_1 is not a CIFAR-10 python batch"):
        load_cifar10(tmp_path)
    with open(tmp_path / "data_batch_1", "wb") as fh:
        pickle.dump({b"data": np.zeros((2, 100), dtype=np.uint8), b"labels": [0, 1]}, fh)
    with pytest.raises(ValueError, match="data_batch_1 is not a CIFAR-10 python batch"):
        load_cifar10(tmp_path)


def test_synthetic_cifar_is_cifar_shaped_deterministic_and_balanced(tmp_path):
    write_synthetic_cifar10(tmp_path, n_train=200, n_test=50, seed=0)
    assert sorted(p.name for p in tmp_path.iterdir())[:2] == ["data_batch_1", "data_batch_2"]
    (xtr, ytr), (xte, _yte) = load_cifar10(tmp_path)
    assert xtr.shape == (200, 3, 32, 32) and xte.shape == (50, 3, 32, 32)
    assert set(ytr.tolist()) == set(range(10))
    again, _ = synthetic_cifar10(250, seed=0)
    first, _ = synthetic_cifar10(250, seed=0)
    assert (again == first).all()


def label_tv(parts, labels):
    """Mean total-variation distance of the client label histograms to the global one."""
    glob = np.bincount(labels, minlength=10) / len(labels)
    return float(
        np.mean(
            [
                0.5 * np.abs(np.bincount(labels[p], minlength=10) / len(p) - glob).sum()
                for p in parts
            ]
        )
    )


def test_equal_lda_split_is_the_official_equal_size_scheme():
    """Flower's old create_lda_partitions (the official code's split): every client gets the same
    number of samples (sizes differ by at most one), disjoint, covering; label skew set by alpha
    as for our per-class split; deterministic for a seed."""
    from sparsyfed.data import equal_lda_partition, partition

    labels = np.repeat(np.arange(10), 144)
    tv = {}
    for alpha in (0.1, 1.0, 1000.0):
        parts = equal_lda_partition(labels, 20, alpha, seed=3)
        sizes = np.array([len(p) for p in parts])
        assert sizes.max() - sizes.min() <= 1
        assert sorted(np.concatenate(parts).tolist()) == list(range(len(labels)))
        tv[alpha] = np.mean(
            [label_tv(equal_lda_partition(labels, 20, alpha, s), labels) for s in range(5)]
        )
        ours = np.mean([label_tv(lda_partition(labels, 20, alpha, s), labels) for s in range(5)])
        if alpha < 1000:  # near iid its per-sample draws add multinomial noise (TV ~0.15)
            assert abs(tv[alpha] - ours) < 0.1, (alpha, tv[alpha], ours)
    assert tv[0.1] > 0.6 > tv[1.0] > 0.2 > tv[1000.0]
    same = partition(labels, 20, 0.1, 3, "lda_equal")
    assert all(np.array_equal(a, b) for a, b in zip(same, equal_lda_partition(labels, 20, 0.1, 3)))
    with pytest.raises(ValueError, match="split must be one of"):
        partition(labels, 20, 0.1, 3, "iid")


def test_validation_holdout_is_disjoint_stratified_and_unseen_by_clients():
    """The tuning runs' validation set: a fixed fraction of each class, never in a client's data."""
    import dataclasses

    from sparsyfed.config import PRESETS
    from sparsyfed.data import validation_holdout
    from sparsyfed.federated import split_of, validation_of

    labels = np.repeat(np.arange(10), 100)
    keep, val = validation_holdout(labels, 0.15, seed=0)
    assert not set(keep) & set(val) and len(keep) + len(val) == 1000
    assert (np.bincount(labels[val]) == 15).all()
    cfg = dataclasses.replace(PRESETS["quick"], val_fraction=0.2, n_clients=4)
    (xtr, _), _, parts = split_of(cfg)
    xval, _ = validation_of(cfg)
    assert len(xtr) + len(xval) == 1437 and sum(len(p) for p in parts) == len(xtr)
    rows = {tuple(r.flatten().tolist()) for r in xtr}
    assert not any(tuple(r.flatten().tolist()) in rows for r in xval[:50])
    assert validation_of(PRESETS["quick"]) is None
