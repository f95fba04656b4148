"""Data: parameter sweeps with held-out bifurcation bands, simulated trajectories, corruption.

Everything is a deterministic function of the seed. The Brusselator test set is the band of
width `band` around the Turing and/or Hopf lines, which training never sees (the official data
script's `ParameterGenerator(epsilon, curve_func)`). `load_fields` reads real snapshots (an .npz
or a folder of image sequences, as for the paper's lizard-pattern data) in the same layout.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import torch

from . import pde
from .config import Config


def in_band(theta: torch.Tensor, cfg: Config) -> torch.Tensor:
    """True where (A, B) lies within `band` of one of the lines named in cfg.bands."""
    a, b = theta[:, 0], theta[:, 1]
    lines = {"turing": pde.turing_line(a, cfg.diffusion), "hopf": pde.hopf_line(a)}
    near = torch.zeros(len(theta), dtype=torch.bool)
    for name in cfg.bands:
        near |= (b - lines[name]).abs() < cfg.band
    return near


def sample_parameters(cfg: Config, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw (train, test) parameters uniformly in the box; Brusselator test = held-out bands."""
    low, high = torch.tensor(cfg.param_low), torch.tensor(cfg.param_high)
    train, test = [], []
    while sum(map(len, train)) < cfg.n_train or sum(map(len, test)) < cfg.n_test:
        theta = low + (high - low) * torch.rand(4 * (cfg.n_train + cfg.n_test), 2, generator=gen)
        if cfg.system == "brusselator":
            if cfg.above_hopf_share > 0:  # a share of B redrawn between the line and the cap
                redraw = torch.rand(len(theta), generator=gen) < cfg.above_hopf_share
                line = pde.hopf_line(theta[:, 0])
                above = line + cfg.b_over_hopf * torch.rand(len(theta), generator=gen)
                theta[:, 1] = torch.where(redraw, above.clamp(max=high[1]), theta[:, 1])
            theta = theta[theta[:, 1] <= pde.hopf_line(theta[:, 0]) + cfg.b_over_hopf]
            held = in_band(theta, cfg)
            train.append(theta[~held])
            test.append(theta[held])
        else:
            train.append(theta[: cfg.n_train])
            test.append(theta[cfg.n_train :])
    return torch.cat(train)[: cfg.n_train], torch.cat(test)[: cfg.n_test]


def initial_fields(cfg: Config, theta: torch.Tensor, gen: torch.Generator):
    """Homogeneous level plus Gaussian noise of size init_noise (Gray-Scott: |noise| on v).

    The level is the steady state, or with init_spread s > 0 the steady state times 1 + U(-s, s)
    per trajectory and channel (the official BrusselatorFull draws random centres), so that the
    effective dynamics are seen away from the equilibrium too."""
    u_star, v_star = pde.homogeneous_state(cfg.system, theta)
    if cfg.init_spread > 0:
        spread = cfg.init_spread * (2 * torch.rand(2, len(theta), generator=gen) - 1)
        u_star, v_star = u_star * (1 + spread[0]), v_star * (1 + spread[1])
    shape = (len(theta), cfg.grid, cfg.grid)
    du = cfg.init_noise * torch.randn(shape, generator=gen)
    dv = cfg.init_noise * torch.randn(shape, generator=gen)
    if cfg.system == "gray-scott":
        dv = dv.abs()
    return u_star[:, None, None] + du, v_star[:, None, None] + dv


def simulate_batch(cfg: Config, theta: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Trajectories (batch, n_frames, 2, grid, grid) for parameters theta."""
    u0, v0 = initial_fields(cfg, theta, gen)
    dev = cfg.device
    return pde.simulate(
        cfg.system,
        theta.to(dev),
        u0.to(dev),
        v0.to(dev),
        diffusion=cfg.diffusion,
        dx=cfg.dx,
        dt=cfg.dt,
        t_end=cfg.t_end,
        n_frames=cfg.n_frames,
    ).cpu()


def add_noise(fields: torch.Tensor, sigma: float, gen: torch.Generator) -> torch.Tensor:
    """Additive Gaussian noise, sigma relative to each channel's standard deviation over the set."""
    scale = fields.transpose(0, 2).flatten(1).std(1).view(1, 1, -1, 1, 1)
    return fields + sigma * scale * torch.randn(fields.shape, generator=gen)


def add_patches(fields: torch.Tensor, fraction: float, gen: torch.Generator) -> torch.Tensor:
    """Occlude one random square patch covering `fraction` of each frame with zeros."""
    n = fields.shape[-1]
    side = max(1, round(n * fraction**0.5))
    out = fields.clone()
    corners = torch.randint(0, n - side + 1, (*fields.shape[:2], 2), generator=gen)
    for i, j in torch.cartesian_prod(torch.arange(fields.shape[0]), torch.arange(fields.shape[1])):
        r, c = corners[i, j].tolist()
        out[i, j, :, r : r + side, c : c + side] = 0.0
    return out


def simulated_regime(traj: torch.Tensor, threshold: float) -> torch.Tensor:
    """Regime each clean trajectory (batch, frames, 2, n, n) actually shows: 0 homogeneous,
    1 stationary pattern, 2 oscillating spatial mean.

    Pattern: the final spatial standard deviation of u exceeds `threshold` (the initial noise, so
    the perturbation grew). Oscillation: the spatial mean of u varies by more than `threshold`
    (standard deviation) over the last quarter of the frames. The official code labels true final
    patterns with k-means; thresholds keep the labels' meaning fixed.
    """
    pattern = traj[:, -1, 0].flatten(1).std(1) > threshold
    tail = traj[:, -max(2, traj.shape[1] // 4) :, 0].mean((-1, -2))
    oscillating = tail.std(1) > threshold
    return torch.where(oscillating, 2, pattern.long())


def make_dataset(cfg: Config) -> dict[str, torch.Tensor]:
    """Train and test parameters, clean trajectories and regime labels for cfg.seed.

    Labels are read from the simulation (`simulated_regime`), not from the closed-form linear
    stability of the homogeneous state: with D_v/D_u = 8 the Turing pattern outgrows the Hopf
    oscillation, and just above the Turing line the pattern has not formed by t_end.
    """
    gen = torch.Generator().manual_seed(cfg.seed)
    theta_train, theta_test = sample_parameters(cfg, gen)
    data = {
        "theta_train": theta_train,
        "theta_test": theta_test,
        "train": simulate_batch(cfg, theta_train, gen),
        "test": simulate_batch(cfg, theta_test, gen),
    }
    if cfg.system == "brusselator":
        for split in ("train", "test"):
            data[f"regime_{split}"] = simulated_regime(data[split], cfg.init_noise)
    return data


def _read_frame(path: Path) -> np.ndarray:
    """One snapshot: .npy of shape (H, W) or (C, H, W); an image (PNG, ...) as grey levels."""
    import matplotlib.image

    try:
        if path.suffix == ".npy":
            frame = np.load(path, allow_pickle=False)
            return frame[None] if frame.ndim == 2 else frame
        img = np.asarray(matplotlib.image.imread(path), dtype=np.float64)
    except (OSError, ValueError, SyntaxError) as exc:
        raise ValueError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    if img.ndim == 3:  # RGB(A): luminance of the colour channels
        img = img[..., :3].mean(-1)
    return img[None]


def _read_folder(root: Path) -> tuple[np.ndarray, np.ndarray | None]:
    """A folder of sequences: one subfolder per trajectory, frames sorted by file name."""
    seqs = sorted(p for p in root.iterdir() if p.is_dir())
    if not seqs:
        raise ValueError(f"{root}: no subfolders (one per trajectory of snapshots) found")
    trajs = []
    for seq in seqs:
        files = sorted(p for p in seq.iterdir() if p.suffix.lower() in FRAME_SUFFIXES)
        if not files:
            raise ValueError(f"{seq}: no snapshots ({', '.join(FRAME_SUFFIXES)}) found")
        frames = [_read_frame(f) for f in files]
        if len({f.shape for f in frames}) != 1:
            raise ValueError(
                f"{seq}: snapshots differ in shape {sorted({f.shape for f in frames})}"
            )
        trajs.append(np.stack(frames))
    if len({t.shape for t in trajs}) != 1:
        shapes = sorted({str(t.shape) for t in trajs})
        raise ValueError(f"{root}: sequences differ in (frames, channels, H, W): {shapes}")
    theta_path = root / "theta.npy"
    return np.stack(trajs), (np.load(theta_path) if theta_path.exists() else None)


FRAME_SUFFIXES = (".npy", ".png", ".jpg", ".jpeg", ".tif", ".tiff")


def load_fields(path: str | Path, cfg: Config) -> dict[str, torch.Tensor]:
    """Field snapshots from disk, split into train and test trajectories (seeded).

    `path` is an .npz with `fields` of shape (n, frames, H, W) or (n, frames, channels, H, W)
    and optionally `theta` (n, n_params); or a folder with one subfolder of snapshots per
    trajectory (.npy arrays or images, sorted by name) and optionally theta.npy. Without theta
    every trajectory gets the parameter 0. The last n_test of a seeded shuffle are the test set.
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"data path {path} does not exist")
    if path.is_dir():
        fields, theta = _read_folder(path)
    elif path.suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as npz:
                arrays = {k: npz[k] for k in npz.files}
        except (OSError, EOFError, ValueError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
        if "fields" not in arrays:
            raise ValueError(f"{path}: no array named 'fields' (found {sorted(arrays)})")
        fields, theta = arrays["fields"], arrays.get("theta")
    else:
        raise ValueError(f"{path}: expected a folder of sequences or an .npz file")
    fields = np.asarray(fields, dtype=np.float64)
    if fields.ndim == 4:
        fields = fields[:, :, None]
    if fields.ndim != 5 or fields.shape[0] < 3 or fields.shape[1] < 2:
        raise ValueError(
            f"{path}: fields must be (n >= 3, frames >= 2, [channels,] H, W), got {fields.shape}"
        )
    if not np.isfinite(fields).all():
        raise ValueError(f"{path}: fields contain {int((~np.isfinite(fields)).sum())} NaN/inf")
    n = len(fields)
    theta = np.zeros((n, 1)) if theta is None else np.asarray(theta, dtype=np.float64)
    theta = theta[:, None] if theta.ndim == 1 else theta
    if theta.shape[0] != n or theta.ndim != 2 or not np.isfinite(theta).all():
        raise ValueError(
            f"{path}: theta must be finite with one row per trajectory ({n}), got {theta.shape}"
        )
    n_test = min(cfg.n_test, n - 2)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(cfg.seed))
    test, train = order[:n_test], order[n_test:]
    f, th = torch.tensor(fields, dtype=torch.float32), torch.tensor(theta, dtype=torch.float32)
    return {"train": f[train], "test": f[test], "theta_train": th[train], "theta_test": th[test]}
