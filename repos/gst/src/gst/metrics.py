"""Evaluation metrics: pose accuracy from recovered cameras, PSNR and SSIM of novel views."""

from __future__ import annotations

import numpy as np
from skimage.metrics import structural_similarity

from .geometry import camera_centre, geodesic_deg


def pose_metrics(r_pred, t_pred, r_true, t_true) -> dict[str, float]:
    """Rotation accuracy within 15 / 30 degrees (%), median angle and mean centre error."""
    ang = geodesic_deg(r_pred, r_true)
    err = np.linalg.norm(camera_centre(r_pred, t_pred) - camera_centre(r_true, t_true), axis=-1)
    return {
        "rot_acc15": float(100 * (ang < 15).mean()),
        "rot_acc30": float(100 * (ang < 30).mean()),
        "rot_err_median": float(np.median(ang)),
        "centre_err": float(err.mean()),
    }


def psnr(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Per-image PSNR in dB of images in [0, 1]: -10 log10(MSE)."""
    mse = ((np.clip(pred, 0, 1) - true) ** 2).reshape(len(true), -1).mean(-1)
    return -10 * np.log10(np.maximum(mse, 1e-10))


def image_metrics(pred: np.ndarray, true: np.ndarray) -> dict[str, float]:
    ssim = [
        structural_similarity(np.clip(p, 0, 1), t, channel_axis=2, data_range=1.0)
        for p, t in zip(pred, true)
    ]
    return {"psnr": float(psnr(pred, true).mean()), "ssim": float(np.mean(ssim))}
