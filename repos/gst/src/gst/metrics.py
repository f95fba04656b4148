"""Evaluation metrics: pose accuracy from recovered cameras, PSNR and SSIM of novel views."""

from __future__ import annotations

import numpy as np
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

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


PSNR_CAP = 100.0


def psnr(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Per-image PSNR in dB of images in [0, 1] (scikit-image; prediction clipped to [0, 1]),
    capped at 100 dB so that an exact copy (infinite PSNR) keeps means finite."""
    out = []
    for p, t in zip(pred, true, strict=True):
        p = np.clip(p, 0, 1).astype(t.dtype)
        out.append(
            PSNR_CAP if np.array_equal(p, t) else peak_signal_noise_ratio(t, p, data_range=1)
        )
    return np.minimum(np.array(out, dtype=float), PSNR_CAP)


def ssim(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Per-image SSIM of Wang et al. (2004) as scikit-image computes it with its Gaussian window
    (sigma 1.5, population covariance): the setting torchmetrics and most NVS papers use."""
    return np.array(
        [
            structural_similarity(
                np.clip(p, 0, 1).astype(t.dtype),
                t,
                channel_axis=2,
                data_range=1.0,
                gaussian_weights=True,
                sigma=1.5,
                use_sample_covariance=False,
            )
            for p, t in zip(pred, true, strict=True)
        ]
    )


def image_metrics(pred: np.ndarray, true: np.ndarray) -> dict[str, float]:
    """Mean PSNR and SSIM over the test views."""
    return {"psnr": float(psnr(pred, true).mean()), "ssim": float(ssim(pred, true).mean())}
