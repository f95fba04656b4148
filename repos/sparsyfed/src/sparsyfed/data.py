"""Data: sklearn digits (quick), CIFAR-10 python pickles (full), a synthetic CIFAR-10-shaped set
written in that same format (paper preset), and the LDA client split.

Nothing is downloaded: digits ships inside the scikit-learn wheel, CIFAR-10 is read from a local
folder in its standard "python version" format (data_batch_1..5, test_batch).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import torch

from .results import atomic_write_bytes

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
    try:
        with path.open("rb") as fh:
            batch = pickle.load(fh, encoding="bytes")
        data, labels = batch[b"data"], batch[b"labels"]
        images = np.asarray(data, dtype=np.uint8).reshape(-1, 3, 32, 32)
        labels = np.asarray(labels, dtype=np.int64).reshape(-1)
    except KeyError as exc:
        raise ValueError(f"{path} is not a CIFAR-10 python batch (no {exc.args[0]!r})") from None
    except (pickle.UnpicklingError, EOFError, TypeError, ValueError, AttributeError) as exc:
        # a truncated or foreign file: unpickling, indexing or reshaping fails
        raise ValueError(f"{path} is not a CIFAR-10 python batch ({exc})") from None
    if len(labels) != len(images) or (len(labels) and not 0 <= labels.min() <= labels.max() < 10):
        raise ValueError(f"{path}: {len(images)} images but {len(labels)} labels in 0..9")
    return images, labels


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
    xtr = np.concatenate([p[0] for p in parts])
    ytr = np.concatenate([p[1] for p in parts])
    return _normalised(xtr, ytr), load_cifar_batch(folder / "test_batch")


def _normalised(x: np.ndarray, y: np.ndarray) -> Dataset:
    mean = torch.tensor(CIFAR_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(CIFAR_STD).view(1, 3, 1, 1)
    return (torch.from_numpy(x).float() / 255.0 - mean) / std, torch.from_numpy(y).long()


def load_cifar_batch(path: str | Path) -> Dataset:
    """One CIFAR-10 python batch file (test_batch, data_batch_N or a user's file in that
    format), normalised as the loader does; a missing or foreign file is a ValueError naming it."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such CIFAR-10 python batch file")
    return _normalised(*_read_cifar_batch(path))


SYNTH_TRAIN, SYNTH_TEST = 6_400, 2_000  # 20 clients x ~320 images: ~20 steps of 16


def synthetic_cifar10(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n CIFAR-10-shaped uint8 images (N, 3072) of 10 classes of noisy coloured gratings.

    Class c sets the grating's orientation (c mod 5) * 36 degrees, its frequency (3 or 5
    cycles per image for c < 5 / c >= 5) and a colour; each image jitters all three (orientation
    by 14 degrees, frequency by 15%, colour by 0.15), draws phase, contrast and background at
    random and adds pixel noise, so neighbouring classes overlap and no pixel is a label.
    """
    rng = np.random.default_rng(seed)
    colours = np.random.default_rng(1234).uniform(0.2, 1.0, (10, 3))
    labels = rng.integers(0, 10, n)
    theta = np.pi * (labels % 5) / 5 + rng.normal(0, 0.25, n)
    freq = np.where(labels < 5, 3.0, 5.0) * rng.uniform(0.85, 1.15, n)
    phase, contrast = rng.uniform(0, 2 * np.pi, n), rng.uniform(0.3, 1.0, n)
    yy, xx = np.meshgrid(np.arange(32) / 32, np.arange(32) / 32, indexing="ij")
    proj = np.cos(theta)[:, None, None] * xx + np.sin(theta)[:, None, None] * yy
    wave = np.sin(2 * np.pi * freq[:, None, None] * proj + phase[:, None, None])
    colour = colours[labels] + rng.normal(0, 0.15, (n, 3))
    background = rng.uniform(0.3, 0.7, (n, 3, 1, 1))
    img = background + 0.35 * (contrast[:, None, None] * wave)[:, None] * colour[:, :, None, None]
    img = img + rng.normal(0, 0.25, img.shape)
    pixels = (np.clip(img, 0, 1) * 255).round().astype(np.uint8).reshape(n, 3072)
    return pixels, labels


def write_synthetic_cifar10(
    folder: str | Path, n_train: int = SYNTH_TRAIN, n_test: int = SYNTH_TEST, seed: int = 0
) -> Path:
    """Write the synthetic set as CIFAR-10 python batches (data_batch_1..5, test_batch)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    x, y = synthetic_cifar10(n_train + n_test, seed)
    chunks = np.array_split(np.arange(n_train), 5)
    named = [(f"data_batch_{i + 1}", idx) for i, idx in enumerate(chunks)]
    for name, idx in [*named, ("test_batch", np.arange(n_train, n_train + n_test))]:
        batch = {b"data": x[idx], b"labels": y[idx].tolist(), b"batch_label": name.encode()}
        # atomic, test_batch last: a parallel bench worker never reads a half-written batch
        atomic_write_bytes(folder / name, pickle.dumps(batch))
    return folder


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


def equal_lda_partition(
    labels: np.ndarray, n_clients: int, alpha: float, seed: int
) -> list[np.ndarray]:
    """The official code's split: Flower's old `create_lda_partitions` (flwr.dataset, Hsu et al.,
    2019). Each client draws its class mix p ~ Dir(alpha) over the classes and gets an equal share
    of the samples (sizes differ by at most one), drawn one by one from p without replacement; a
    class that runs out is dropped and p renormalised over the classes left.
    """
    labels = np.asarray(labels)
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    if not 1 <= n_clients <= len(labels):
        raise ValueError(f"n_clients must be in [1, {len(labels)}], got {n_clients}")
    rng = np.random.default_rng(seed)
    classes = np.unique(labels)
    pools = [list(rng.permutation(np.flatnonzero(labels == c))) for c in classes]
    sizes = [len(labels) // n_clients + (i < len(labels) % n_clients) for i in range(n_clients)]
    mixes = rng.dirichlet(np.full(len(classes), alpha), size=n_clients)
    left = np.array([len(p) for p in pools], dtype=float)
    out = []
    for client in range(n_clients):
        p = mixes[client] * (left > 0)
        taken: list[int] = []
        for _ in range(sizes[client]):
            if p.sum() <= 0:  # every class of this client's mix ran out: take from what is left
                p = (left > 0).astype(float)
            cls = int(rng.choice(len(classes), p=p / p.sum()))
            taken.append(int(pools[cls].pop()))
            left[cls] -= 1
            if left[cls] == 0:
                p[cls] = 0.0
        out.append(np.sort(np.asarray(taken, dtype=np.int64)))
    return out


SPLITS = ("lda", "lda_equal")


def partition(
    labels: np.ndarray, n_clients: int, alpha: float, seed: int, split: str
) -> list[np.ndarray]:
    """The client split by name: lda (per-class Dir(alpha) shares, sizes vary) or lda_equal (the
    official code's equal-size split)."""
    if split == "lda":
        return lda_partition(labels, n_clients, alpha, seed)
    if split == "lda_equal":
        return equal_lda_partition(labels, n_clients, alpha, seed)
    raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def validation_holdout(
    labels: np.ndarray, fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, validation indices): `fraction` of each class held out, fixed by seed."""
    labels = np.asarray(labels)
    rng = np.random.default_rng([seed, 7919])
    val = []
    for cls in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == cls))
        val.extend(idx[: round(fraction * len(idx))].tolist())
    val_idx = np.sort(np.asarray(val, dtype=np.int64))
    keep = np.setdiff1d(np.arange(len(labels)), val_idx)
    return keep, val_idx
