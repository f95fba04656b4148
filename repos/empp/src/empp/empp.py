"""EMPP: equivariant masked position prediction (An et al., ICLR 2025, method section).

Mask one atom per molecule copy, keep its element, and predict its position from each
remaining neighbour within `head_cutoff` of the true position, as a distribution over
directions (spherical functions up to l = 2 sampled on an S2 grid) and over radius bins.
The loss is KL(target || prediction) for both, averaged over neighbour edges.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from e3nn import o3
from e3nn.nn import FullyConnectedNet
from torch import nn

from .data import ELEMENTS, Molecule, element_index
from .model import SH_IRREPS, gate_for


@dataclasses.dataclass
class Masked:
    """Copies of molecules with one atom removed each, and what was removed."""

    mols: list[Molecule]  # the remaining atoms, labels kept
    element: np.ndarray  # (k,) atomic number of the removed atom
    pos: np.ndarray  # (k, 3) its true position
    source: np.ndarray  # (k,) index of the molecule each copy came from


def mask_position(mols: list[Molecule], rng: np.random.Generator, num_mask: int = 1) -> Masked:
    """`num_mask` copies per molecule, each missing one different random atom (never several).

    The official code builds the same copies with O(N^2) Python loops; here it is one pass.
    """
    out, elem, pos, src = [], [], [], []
    for i, m in enumerate(mols):
        if len(m.z) < 2:
            raise ValueError(f"molecule {i} has {len(m.z)} atom(s); masking needs at least 2")
        for a in rng.choice(len(m.z), size=min(num_mask, len(m.z)), replace=False):
            keep = np.arange(len(m.z)) != a
            forces = None if m.forces is None else m.forces[keep]
            out.append(Molecule(m.z[keep], m.pos[keep], m.y, forces))
            elem.append(int(m.z[a]))
            pos.append(m.pos[a])
            src.append(i)
    return Masked(out, np.array(elem), np.array(pos), np.array(src))


def neighbours(
    pos: torch.Tensor, batch: torch.Tensor, target: torch.Tensor, cutoff: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(atom index, copy index) of remaining atoms within cutoff of their copy's masked position."""
    dist = torch.linalg.norm(pos[:, None, :] - target[None, :, :], dim=-1)  # (N, k)
    atom, copy = ((batch[:, None] == torch.arange(len(target))[None, :]) & (dist < cutoff)).nonzero(
        as_tuple=True
    )
    empty = sorted(set(range(len(target))) - set(copy.tolist()))
    if empty:
        raise ValueError(f"masked copies {empty} have no neighbour within {cutoff} A")
    return atom, copy


def gaussian_smearing(x: torch.Tensor, n: int = 64, lo: float = -3.0, hi: float = 3.0):
    """Label encoding used for conditioning: n Gaussians on [lo, hi]."""
    centres = torch.linspace(lo, hi, n, device=x.device)
    width = (hi - lo) / (n - 1)
    return torch.exp(-0.5 * ((x[:, None] - centres) / width) ** 2)


class Conditioning(nn.Module):
    """Per block k: Linear_k(SiLU(element embedding + label embedding)), as in the official code;
    the label embedding is a Linear of the Gaussian-encoded standardised label (or absent).

    Returns (num_blocks, B, n_scalars); block k of the backbone adds row k to its scalars."""

    def __init__(self, n_scalars: int, use_label: bool, num_blocks: int = 1):
        super().__init__()
        self.element = nn.Embedding(len(ELEMENTS), n_scalars)
        self.label = nn.Linear(64, n_scalars) if use_label else None
        self.per_block = nn.ModuleList(nn.Linear(n_scalars, n_scalars) for _ in range(num_blocks))

    def forward(self, masked_element: np.ndarray, y: torch.Tensor) -> torch.Tensor:
        rows = torch.as_tensor(element_index(masked_element), device=y.device)
        c = self.element(rows)
        if self.label is not None:
            c = c + self.label(gaussian_smearing(y))
        c = nn.functional.silu(c)
        return torch.stack([lin(c) for lin in self.per_block])


def equivariant_layer_norm(x: torch.Tensor, irreps: o3.Irreps, eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm per irrep type: scalars centred and scaled; l > 0 scaled by their mean norm."""
    parts, start = [], 0
    for mul, ir in irreps:
        f = x[:, start : start + mul * ir.dim].reshape(-1, mul, ir.dim)
        if ir.l == 0:
            f = f - f.mean(dim=1, keepdim=True)
        f = f / (f.pow(2).sum(-1).mean(1, keepdim=True)[..., None] + eps).sqrt()
        parts.append(f.reshape(-1, mul * ir.dim))
        start += mul * ir.dim
    return torch.cat(parts, dim=1)


HEAD_MLPS = ("official", "e3nn")


def head_mlp(sizes: list[int], kind: str) -> nn.Module:
    """The head's two small MLPs. "official": nn.Linear with biases and plain SiLU, as the
    official `pos_prediction` (`fc_logit`, `fc_radius`); "e3nn": e3nn's FullyConnectedNet (no
    biases, variance-preserving rescaled SiLU), what earlier versions of this project used."""
    if kind == "official":
        return nn.Sequential(
            nn.Linear(sizes[0], sizes[1]), nn.SiLU(), nn.Linear(sizes[1], sizes[2])
        )
    if kind == "e3nn":
        return FullyConnectedNet(sizes, nn.functional.silu)
    raise ValueError(f"head_mlp must be one of {HEAD_MLPS}, got {kind!r}")


class PositionHead(nn.Module):
    """Per-neighbour head (official `pos_prediction`): LayerNorm -> Linear -> Gate -> Linear to
    C x (0e + 1o + 2e) spherical functions; direction logits = MLP over C at each S2 point,
    radius log-probabilities = MLP of the C scalars over the radius bins."""

    def __init__(
        self,
        irreps_node: o3.Irreps,
        channels: int,
        res: tuple[int, int],
        bins: int,
        mlp: str = "official",
    ):
        super().__init__()
        self.irreps = o3.Irreps(irreps_node)
        self.channels = channels
        out = o3.Irreps([(channels, ir) for _, ir in SH_IRREPS])
        self.gate = gate_for(self.irreps)
        self.lin1 = o3.Linear(self.irreps, self.gate.irreps_in)
        self.lin2 = o3.Linear(self.gate.irreps_out, out)
        self.to_grid = o3.ToS2Grid(2, res, normalization="integral")
        # ToS2Grid applied to the 9 basis vectors: one matmul instead of an FFT per call.
        self.register_buffer("grid_basis", self.to_grid(torch.eye(SH_IRREPS.dim)).flatten(1))
        self.point_mlp = head_mlp([channels, 16, 1], mlp)
        self.radius_mlp = head_mlp([channels, 64, bins], mlp)

    def coefficients(self, h: torch.Tensor) -> torch.Tensor:
        """(E, C, 9) spherical-harmonic coefficients of C functions per neighbour edge."""
        x = self.lin2(self.gate(self.lin1(equivariant_layer_norm(h, self.irreps))))
        c, parts, start = self.channels, [], 0
        for _, ir in SH_IRREPS:  # e3nn lays out mul x ir blocks; regroup to (E, C, 2l+1)
            parts.append(x[:, start : start + c * ir.dim].reshape(-1, c, ir.dim))
            start += c * ir.dim
        return torch.cat(parts, dim=2)

    def direction_logits(self, coeffs: torch.Tensor) -> torch.Tensor:
        """(E, G) logits on the S2 grid (G = res_beta * res_alpha), via e3nn ToS2Grid."""
        values = coeffs @ self.grid_basis  # (E, C, G) = ToS2Grid(coeffs), flattened
        return self.point_mlp(values.transpose(1, 2)).squeeze(-1)

    def direction_logits_at(self, coeffs: torch.Tensor, dirs: torch.Tensor) -> torch.Tensor:
        """(E, Q) logits at arbitrary unit vectors dirs (E, Q, 3): the continuous version."""
        y = o3.spherical_harmonics(SH_IRREPS, dirs, normalize=True, normalization="integral")
        return self.point_mlp(torch.einsum("ecm,eqm->eqc", coeffs, y)).squeeze(-1)

    def radius_log_probs(self, coeffs: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(self.radius_mlp(coeffs[:, :, 0]), dim=-1)

    def grid_directions(self) -> torch.Tensor:
        """(G, 3) unit vectors of the grid points, in the order of `direction_logits`."""
        beta, alpha = torch.meshgrid(self.to_grid.betas, self.to_grid.alphas, indexing="ij")
        return o3.angles_to_xyz(alpha, beta).reshape(-1, 3)


def direction_target(unit: torch.Tensor, grid: torch.Tensor, temperature: float) -> torch.Tensor:
    """softmax over grid of sum_l Y_l(grid) . Y_l(unit), l <= 2 (band-limited delta), at temp T."""
    kw = {"normalize": True, "normalization": "integral"}
    values = (
        o3.spherical_harmonics(SH_IRREPS, unit, **kw)
        @ o3.spherical_harmonics(SH_IRREPS, grid, **kw).t()
    )
    return torch.softmax(values / temperature, dim=-1)


def radius_centres(bins: int, r_max: float, device=None) -> torch.Tensor:
    return torch.linspace(0.0, r_max, bins, device=device)


def radius_target(dist: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
    """Official smoothing: softmax_c(exp(-0.3 ((c - d) / 0.5)^2)); nearly flat by construction."""
    return torch.softmax(torch.exp(-0.3 * ((centres[None, :] - dist[:, None]) / 0.5) ** 2), -1)


def kl_divergence(target: torch.Tensor, log_pred: torch.Tensor) -> torch.Tensor:
    """KL(target || pred) per row, summed over the last axis."""
    return (target * (torch.log(target.clamp(min=1e-30)) - log_pred)).sum(-1)


def empp_loss(head: PositionHead, h, pos, batch, masked_pos, cfg) -> tuple[torch.Tensor, dict]:
    """EMPP loss for one batch of masked copies (node features h of the remaining atoms).

    Returns the loss (direction KL + radius KL, mean over neighbour edges) and the tensors the
    position reconstruction needs.
    """
    atom, copy = neighbours(pos, batch, masked_pos, cfg.head_cutoff)
    rel = masked_pos[copy] - pos[atom]
    dist = rel.norm(dim=-1)
    coeffs = head.coefficients(h[atom])
    log_dir = torch.log_softmax(head.direction_logits(coeffs) / cfg.temperature, dim=-1)
    grid = head.grid_directions()
    t_dir = direction_target(rel / dist[:, None], grid, cfg.temperature)
    centres = radius_centres(cfg.num_radius_bins, cfg.radius_max, pos.device)
    log_rad = head.radius_log_probs(coeffs)
    t_rad = radius_target(dist, centres)
    loss = kl_divergence(t_dir, log_dir).mean() + kl_divergence(t_rad, log_rad).mean()
    extras = {"atom": atom, "copy": copy, "log_dir": log_dir, "log_rad": log_rad}
    extras |= {"t_dir": t_dir, "t_rad": t_rad}
    return loss, {**extras, "grid": grid, "centres": centres}


def reconstruct(pos: torch.Tensor, out: dict, n_copies: int) -> torch.Tensor:
    """Masked positions estimated from the head: mean over neighbours of pos_j + r_j u_j, where
    u_j is the most likely grid direction and r_j the most likely radius bin."""
    u = out["grid"][out["log_dir"].argmax(-1)]
    r = out["centres"][out["log_rad"].argmax(-1)]
    guess = pos[out["atom"]] + r[:, None] * u
    total = torch.zeros(n_copies, 3, device=pos.device).index_add_(0, out["copy"], guess)
    count = torch.bincount(out["copy"], minlength=n_copies).clamp(min=1)
    return total / count[:, None]
