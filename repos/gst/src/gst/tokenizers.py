"""Image and camera tokenizers and the shared vocabulary.

quick: k-means codebooks over non-overlapping patches (faiss), one code per patch.
full:  convolutional VQ-VAEs with unit-length codebooks, cosine matching, straight-through
       gradients and commitment weight 0.25 (LlamaGen VQ-16 / the official camera "VQ-4").
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def patchify(x: np.ndarray, patch: int) -> np.ndarray:
    """(N, S, S, C) -> (N, (S/p)^2, p*p*C), patches in row-major order."""
    n, s, _, c = x.shape
    g = s // patch
    x = x.reshape(n, g, patch, g, patch, c).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(n, g * g, patch * patch * c)


def unpatchify(p: np.ndarray, patch: int, channels: int) -> np.ndarray:
    n, tokens, _ = p.shape
    g = round(tokens**0.5)
    x = p.reshape(n, g, g, patch, patch, channels).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(n, g * patch, g * patch, channels)


@contextlib.contextmanager
def faiss_single_thread():
    """Run faiss on one OpenMP thread. faiss's k-means sums distances and centroids in an order
    that depends on its thread count, so the same seed gave different codebooks at 1 and 2 threads
    (seed 0, quick: tokenizer-ceiling PSNR 21.790 vs 21.799 dB); one thread makes the codes a
    function of the seed alone (tests/test_determinism.py)."""
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


@dataclasses.dataclass
class KMeansTokenizer:
    """Patch k-means tokenizer: `size` x `size` x `channels` maps -> (size/patch)^2 codes."""

    size: int
    patch: int
    channels: int
    n_codes: int
    centroids: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.size % self.patch:
            raise ValueError(f"patch {self.patch} must divide the map size {self.size}")

    @property
    def n_tokens(self) -> int:
        return (self.size // self.patch) ** 2

    def _check(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        want = (self.size, self.size, self.channels)
        if x.ndim != 4 or x.shape[1:] != want:
            raise ValueError(f"tokenizer expects maps of shape (N, {want}), got {x.shape}")
        return x

    def fit(self, x: np.ndarray, seed: int, iters: int = 15) -> KMeansTokenizer:
        import faiss

        data = np.ascontiguousarray(patchify(self._check(x), self.patch).reshape(-1, self.dim))
        km = faiss.Kmeans(self.dim, self.n_codes, niter=iters, seed=seed + 1, verbose=False)
        with faiss_single_thread():
            km.train(data)
        self.centroids = km.centroids.copy()
        return self

    @property
    def dim(self) -> int:
        return self.patch * self.patch * self.channels

    def encode(self, x: np.ndarray) -> np.ndarray:
        """Nearest centroid of every patch: (N, S, S, C) -> int64 (N, n_tokens)."""
        import faiss

        if self.centroids is None:
            raise ValueError("tokenizer is not fitted; call fit() first")
        p = patchify(self._check(x), self.patch)
        index = faiss.IndexFlatL2(self.dim)
        index.add(self.centroids)
        with faiss_single_thread():
            _, ids = index.search(np.ascontiguousarray(p.reshape(-1, self.dim)), 1)
        return ids.reshape(p.shape[0], p.shape[1]).astype(np.int64)

    def decode(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids)
        if ids.min() < 0 or ids.max() >= self.n_codes:
            raise ValueError(
                f"code ids must lie in [0, {self.n_codes}), got {ids.min()}..{ids.max()}"
            )
        return unpatchify(self.centroids[ids], self.patch, self.channels)


@dataclasses.dataclass(frozen=True)
class Vocab:
    """Shared vocabulary: [image codes][camera codes][<GEN>][<EST>] (official: 16384 + 2048 + 2)."""

    n_image: int
    n_camera: int

    @property
    def camera_offset(self) -> int:
        return self.n_image

    @property
    def gen(self) -> int:
        return self.n_image + self.n_camera

    @property
    def est(self) -> int:
        return self.gen + 1

    @property
    def size(self) -> int:
        return self.gen + 2

    def slot_range(self, kind: str) -> tuple[int, int]:
        """Half-open id range of one slot kind: 'image' or 'camera'."""
        if kind == "image":
            return 0, self.n_image
        if kind == "camera":
            return self.camera_offset, self.camera_offset + self.n_camera
        raise ValueError(f"slot kind must be 'image' or 'camera', got {kind!r}")

    def to_vocab(self, codes: torch.Tensor, kind: str) -> torch.Tensor:
        lo, hi = self.slot_range(kind)
        if codes.numel() and (codes.min() < 0 or codes.max() >= hi - lo):
            raise ValueError(f"{kind} code outside [0, {hi - lo}): {codes.min()}..{codes.max()}")
        return codes + lo

    def from_vocab(self, ids: torch.Tensor, kind: str) -> torch.Tensor:
        lo, hi = self.slot_range(kind)
        if ids.numel() and (ids.min() < lo or ids.max() >= hi):
            bad = ids[(ids < lo) | (ids >= hi)][0].item()
            raise ValueError(f"token id {bad} is outside its {kind} slot [{lo}, {hi})")
        return ids - lo

    def slot_mask(self, kind: str) -> torch.Tensor:
        """Boolean (size,) mask of the ids a slot of this kind may take."""
        lo, hi = self.slot_range(kind)
        mask = torch.zeros(self.size, dtype=torch.bool)
        mask[lo:hi] = True
        return mask


class UnitVQ(nn.Module):
    """Vector quantiser with unit-length codes: nearest code by cosine similarity,
    straight-through gradient, loss = |sg(z) - e|^2 + beta |z - sg(e)|^2 (beta = 0.25)."""

    def __init__(self, n_codes: int, dim: int, beta: float = 0.25):
        super().__init__()
        self.codebook = nn.Parameter(torch.randn(n_codes, dim))
        self.beta = beta

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """z: (..., dim) -> (quantised z with straight-through gradient, ids, vq loss)."""
        z = F.normalize(z, dim=-1)
        codes = F.normalize(self.codebook, dim=-1)
        ids = (z @ codes.T).argmax(-1)
        e = codes[ids]
        loss = F.mse_loss(e, z.detach()) + self.beta * F.mse_loss(z, e.detach())
        return z + (e - z).detach(), ids, loss


class VQVAE(nn.Module):
    """Convolutional VQ-VAE: `levels` stride-2 stages (2^levels downsampling), UnitVQ bottleneck."""

    def __init__(self, channels: int, width: int, levels: int, n_codes: int, code_dim: int):
        super().__init__()
        enc: list[nn.Module] = [nn.Conv2d(channels, width, 3, padding=1)]
        dec: list[nn.Module] = [nn.Conv2d(code_dim, width, 3, padding=1)]
        for _ in range(levels):
            enc += [nn.SiLU(), nn.Conv2d(width, width, 4, stride=2, padding=1)]
            dec += [nn.SiLU(), nn.ConvTranspose2d(width, width, 4, stride=2, padding=1)]
        enc += [nn.SiLU(), nn.Conv2d(width, code_dim, 1)]
        dec += [nn.SiLU(), nn.Conv2d(width, channels, 3, padding=1)]
        self.encoder, self.decoder = nn.Sequential(*enc), nn.Sequential(*dec)
        self.vq = UnitVQ(n_codes, code_dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x: (N, C, H, W) -> (reconstruction, ids (N, h*w), loss = MSE + VQ loss)."""
        z = self.encoder(x).permute(0, 2, 3, 1)
        zq, ids, vq_loss = self.vq(z)
        rec = self.decoder(zq.permute(0, 3, 1, 2))
        return rec, ids.flatten(1), F.mse_loss(rec, x) + vq_loss

    def decode_ids(self, ids: torch.Tensor) -> torch.Tensor:
        g = round(ids.shape[1] ** 0.5)
        e = F.normalize(self.vq.codebook, dim=-1)[ids].reshape(ids.shape[0], g, g, -1)
        return self.decoder(e.permute(0, 3, 1, 2))


@dataclasses.dataclass
class VQTokenizer:
    """Full-mode tokenizer: a trained VQVAE behind the same fit/encode/decode interface."""

    size: int
    grid: int
    channels: int
    n_codes: int
    code_dim: int = 8
    width: int = 64
    steps: int = 2000
    batch: int = 64
    device: str = "cpu"
    model: VQVAE | None = None

    def __post_init__(self) -> None:
        levels = round(np.log2(self.size / self.grid))
        if self.grid * 2**levels != self.size:
            raise ValueError(f"map size {self.size} must be grid {self.grid} times a power of 2")
        self.levels = levels

    @property
    def n_tokens(self) -> int:
        return self.grid * self.grid

    def _to_tensor(self, x: np.ndarray) -> torch.Tensor:
        x = np.asarray(x, dtype=np.float32)
        want = (self.size, self.size, self.channels)
        if x.ndim != 4 or x.shape[1:] != want:
            raise ValueError(f"tokenizer expects maps of shape (N, {want}), got {x.shape}")
        return torch.from_numpy(x).permute(0, 3, 1, 2).to(self.device)

    def fit(self, x: np.ndarray, seed: int) -> VQTokenizer:
        torch.manual_seed(seed)
        data = self._to_tensor(x)
        self.model = VQVAE(self.channels, self.width, self.levels, self.n_codes, self.code_dim)
        self.model.to(self.device)
        with torch.no_grad():  # k-means++-free init: codes from encoder outputs (avoids collapse)
            z = (
                self.model.encoder(data[: self.batch * 4])
                .permute(0, 2, 3, 1)
                .reshape(-1, self.code_dim)
            )
            pick = torch.randint(0, z.shape[0], (self.n_codes,))
            self.model.vq.codebook.copy_(z[pick] + 1e-3 * torch.randn_like(z[pick]))
        opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        g = torch.Generator().manual_seed(seed)
        for _ in range(self.steps):
            idx = torch.randint(0, data.shape[0], (min(self.batch, data.shape[0]),), generator=g)
            loss = self.model(data[idx])[2]
            opt.zero_grad()
            loss.backward()
            opt.step()
        self.model.eval()
        return self

    @torch.no_grad()
    def encode(self, x: np.ndarray) -> np.ndarray:
        if self.model is None:
            raise ValueError("tokenizer is not fitted; call fit() first")
        return self.model(self._to_tensor(x))[1].cpu().numpy()

    @torch.no_grad()
    def decode(self, ids: np.ndarray) -> np.ndarray:
        ids = torch.as_tensor(np.asarray(ids), device=self.device)
        if ids.min() < 0 or ids.max() >= self.n_codes:
            raise ValueError(
                f"code ids must lie in [0, {self.n_codes}), got {ids.min()}..{ids.max()}"
            )
        return self.model.decode_ids(ids).permute(0, 2, 3, 1).cpu().numpy()
