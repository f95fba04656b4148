"""Reference rows that need no learned model: the tokenizer ceiling (true codes decoded) and
trivial floors (CONVENTIONS 8, "oracle and floor"). A model that does not beat a floor has not
shown that it learned the task:

- view synthesis: the mean training image (image-blind), and the nearest training view (the target
  image of the training pair whose observation image and Pluecker camera are nearest);
- localisation: chance (one constant camera, image-blind), and the nearest training pair (the
  relative camera of the training pair whose two images are nearest).
"""

from __future__ import annotations

import numpy as np

from .geometry import camera_centre, rays_to_camera
from .metrics import image_metrics, pose_metrics
from .train import Prepared


def tokenizer_ceiling(prep: Prepared) -> dict[str, float]:
    """Metrics of the ground-truth codes decoded: the ceiling any token model can reach."""
    c, test = prep.codes["test"], prep.test
    out = image_metrics(prep.image_tok.decode(c["tgt"].numpy()), test.tgt)
    rays = prep.camera_tok.decode(c["cam"].numpy()).astype(np.float64)
    out.update(pose_metrics(*rays_to_camera(rays), test.rotation, test.translation))
    return out


def chance_pose(prep: Prepared) -> dict[str, float]:
    """The best image-blind guess: one constant camera for every test pair, the chordal mean of
    the training relative rotations (projected onto SO(3)) and the mean centre."""
    u, _, vt = np.linalg.svd(prep.train.rotation.mean(0))
    r = u @ np.diag([1.0, 1.0, np.linalg.det(u @ vt)]) @ vt
    centre = camera_centre(prep.train.rotation, prep.train.translation).mean(0)
    n = len(prep.test.rotation)
    r_all = np.broadcast_to(r, (n, 3, 3))
    t_all = np.broadcast_to(-r @ centre, (n, 3))
    return pose_metrics(r_all, t_all, prep.test.rotation, prep.test.translation)


def mean_image(prep: Prepared) -> dict[str, float]:
    """Every test view predicted by the per-pixel mean of the training target images."""
    mean = prep.train.tgt.mean(0, dtype=np.float64).astype(np.float32)
    return image_metrics(np.broadcast_to(mean, prep.test.tgt.shape), prep.test.tgt)


def features(train_blocks: list[np.ndarray], test_blocks: list[np.ndarray]):
    """Flattened blocks side by side, each scaled by the training set's root mean squared norm
    so that every block weighs the same; returns (train features, test features)."""
    tr_out, te_out = [], []
    for a, b in zip(train_blocks, test_blocks, strict=True):
        a = a.reshape(len(a), -1).astype(np.float64)
        b = b.reshape(len(b), -1).astype(np.float64)
        scale = np.sqrt((a**2).sum(1).mean())
        tr_out.append(a / scale)
        te_out.append(b / scale)
    return np.concatenate(tr_out, 1), np.concatenate(te_out, 1)


def nearest(query: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Index of the nearest key (squared Euclidean distance) for every query row."""
    d = (keys**2).sum(1)[None] - 2 * query @ keys.T
    return d.argmin(1)


def nearest_view(prep: Prepared) -> dict[str, float]:
    """The target image of the training pair nearest in what a view-synthesis model is given:
    the observation image and the relative camera's Pluecker map."""
    tr, te = prep.train, prep.test
    keys, query = features([tr.obs, tr.rays], [te.obs, te.rays])
    return image_metrics(tr.tgt[nearest(query, keys)], te.tgt)


def nearest_pose(prep: Prepared) -> dict[str, float]:
    """The relative camera of the training pair whose observation and target images are nearest
    to the test pair's (what a localisation model is given)."""
    tr, te = prep.train, prep.test
    keys, query = features([tr.obs, tr.tgt], [te.obs, te.tgt])
    idx = nearest(query, keys)
    return pose_metrics(tr.rotation[idx], tr.translation[idx], te.rotation, te.translation)


FLOORS = {
    "tokenizer_ceiling": tokenizer_ceiling,
    "chance_pose": chance_pose,
    "nearest_pose": nearest_pose,
    "mean_image": mean_image,
    "nearest_view": nearest_view,
}
"""Reference rows of the benchmark table, each a function of the prepared data of one seed."""
