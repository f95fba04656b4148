"""Data: sklearn digits (quick), the CIFAR-10 python pickles (full), and the LDA client split.

Nothing is downloaded: digits ships inside the scikit-learn wheel, CIFAR-10 is read from a local
folder in its standard "python version" format (data_batch_1..5, test_batch).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import torch

Dataset = tuple[torch.Tensor, torch.Tensor]


def load_digits(seed: int, test_fraction: float = 0.2) -> tuple[Dataset, Dataset]:
    """8x8 digits as 1x8x8 images in [0, 1]; a stratified train/test split fixed by `seed`."""
    from sklearn.datasets import load_digits as sk_digits
    from sklearn.model_selection import train_test_split

    x, y = sk_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    xtr, xte, ytr, yte = train_test_split(
        x, y, test_size=test_fraction, random_state=seed, stratify=y
    )
    as_t = lambda a, b: (torch.from_numpy(a), torch.from_numpy(b).long())
    return as_t(xtr, ytr), as_t(xte, yte)


CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)


def _read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with path.open("rb") as fh:
        batch = pickle.load(fh, encoding="bytes")
    try:
        data, labels = batch[b"data"], batch[b"labels"]
    except KeyError as exc:
        raise ValueError(f"{path} is not a CIFAR-10 python batch (no {exc.args[0]!r})") from None
    return np.asarray(data, dtype=np.uint8).reshape(-1, 3, 32, 32), np.asarray(labels)


def load_cifar10(folder: str | Path) -> tuple[Dataset, Dataset]:
    """CIFAR-10 "python version" pickles from `folder`, normalised per channel."""
    folder = Path(folder)
    train_files = sorted(folder.glob("data_batch_*"))
    if not train_files or not (folder / "test_batch").exists():
        raise ValueError(
            f"no CIFAR-10 python batches (data_batch_*, test_batch) in {folder}; "
            "download cifar-10-python.tar.gz yourself and pass its folder as --data-dir"
        )
    parts = [_read_cifar_batch(p) for p in train_files]
    mean = torch.tensor(CIFAR_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(CIFAR_STD).view(1, 3, 1, 1)

    def as_t(x: np.ndarray, y: np.ndarray) -> Dataset:
        return (torch.from_numpy(x).float() / 255.0 - mean) / std, torch.from_numpy(y).long()

    xtr = np.concatenate([p[0] for p in parts])
    ytr = np.concatenate([p[1] for p in parts])
    return as_t(xtr, ytr), as_t(*_read_cifar_batch(folder / "test_batch"))


def lda_partition(
    labels: np.ndarray, n_clients: int, alpha: float, seed: int, max_tries: int = 100
) -> list[np.ndarray]:
    """Latent Dirichlet Allocation label split (Hsu et al., 2019): per class, Dir(alpha) shares.

    Redraws until every client holds at least one example; alpha -> infinity gives an even split.
    """
    labels = np.asarray(labels)
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    if n_clients < 1:
        raise ValueError(f"n_clients must be >= 1, got {n_clients}")
    if n_clients > len(labels):
        raise ValueError(f"{n_clients} clients but only {len(labels)} samples to share")
    rng = np.random.default_rng(seed)
    for _ in range(max_tries):
        shards: list[list[int]] = [[] for _ in range(n_clients)]
        for cls in np.unique(labels):
            idx = rng.permutation(np.flatnonzero(labels == cls))
            shares = rng.dirichlet(np.full(n_clients, alpha))
            cuts = (np.cumsum(shares)[:-1] * len(idx)).astype(int)
            for client, part in enumerate(np.split(idx, cuts)):
                shards[client].extend(part.tolist())
        if min(len(s) for s in shards) > 0:
            return [np.sort(np.asarray(s, dtype=np.int64)) for s in shards]
    raise ValueError(
        f"LDA split with alpha={alpha} left a client empty in {max_tries} draws; "
        "use fewer clients or a larger alpha"
    )
