"""A small NequIP-style E(3)-equivariant network (e3nn) and graph batching.

The paper's backbone is Equiformer; at CPU scale we use NequIP-style interaction blocks
(tensor product of node features with edge spherical harmonics, weights from a radial MLP,
gated nonlinearity, residual self-interaction). The EMPP conditioning (masked element + label)
is added to the scalar channels of every node before every block, as in the official TransBlock.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch
from e3nn import o3
from e3nn.math import soft_one_hot_linspace
from e3nn.nn import FullyConnectedNet, Gate
from torch import nn
from torch_geometric.utils import scatter

from .data import ELEMENTS, Molecule, element_index

SH_IRREPS = o3.Irreps.spherical_harmonics(2)


@dataclasses.dataclass
class Batch:
    """Molecules concatenated: element rows, positions, graph index per atom, labels."""

    species: torch.Tensor  # (N,) rows of ELEMENTS (or the mask token)
    pos: torch.Tensor  # (N, 3)
    batch: torch.Tensor  # (N,)
    num_graphs: int
    y: torch.Tensor  # (B,) standardised label
    forces: torch.Tensor | None = None  # (N, 3)


def collate(mols: list[Molecule], key: str, mean: float, std: float, device: str = "cpu") -> Batch:
    """Concatenate molecules; the label `key` is standardised with (mean, std)."""
    z = np.concatenate([m.z for m in mols])
    species = torch.as_tensor(element_index(z), device=device)
    pos = torch.as_tensor(np.concatenate([m.pos for m in mols]), dtype=torch.float32).to(device)
    sizes = torch.as_tensor([len(m.z) for m in mols], device=device)
    batch = torch.repeat_interleave(torch.arange(len(mols), device=device), sizes)
    y = torch.tensor([(m.y[key] - mean) / std for m in mols], dtype=torch.float32, device=device)
    forces = None
    if all(m.forces is not None for m in mols):
        f = np.concatenate([m.forces for m in mols])
        forces = torch.as_tensor(f, dtype=torch.float32).to(device)
    return Batch(species, pos, batch, len(mols), y, forces)


def radius_graph(pos: torch.Tensor, batch: torch.Tensor, cutoff: float) -> torch.Tensor:
    """Directed edges (src, dst) between distinct atoms of one molecule closer than cutoff.

    A torch.cdist replacement for torch_cluster.radius_graph (which needs a compiled extension).
    """
    dist = torch.cdist(pos.detach(), pos.detach())
    keep = (batch[:, None] == batch[None, :]) & (dist < cutoff)
    keep.fill_diagonal_(False)
    return keep.nonzero().t()


def scatter_sum(src: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """Sum rows of src into `size` buckets (PyG's scatter, pure torch)."""
    return scatter(src, index, dim=0, dim_size=size, reduce="sum")


class BesselBasis(nn.Module):
    """e3nn's Bessel basis sqrt(2/c) sin(n pi r / c) / r times a smooth polynomial cutoff
    envelope (DimeNet / NequIP)."""

    def __init__(self, num_basis: int, cutoff: float):
        super().__init__()
        self.cutoff = cutoff
        self.num_basis = num_basis

    def forward(self, r: torch.Tensor) -> torch.Tensor:
        x = (r / self.cutoff).clamp(max=1.0)
        envelope = 1 - 28 * x**6 + 48 * x**7 - 21 * x**8  # p = 6 polynomial, zero at the cutoff
        basis = soft_one_hot_linspace(
            r, 0.0, self.cutoff, self.num_basis, basis="bessel", cutoff=True
        )
        return basis * envelope[:, None]


def gate_for(irreps: o3.Irreps) -> Gate:
    """Gate producing `irreps`: silu on scalars, sigmoid gates on every l > 0 channel."""
    scalars = o3.Irreps([(m, ir) for m, ir in irreps if ir.l == 0])
    gated = o3.Irreps([(m, ir) for m, ir in irreps if ir.l > 0])
    gates = o3.Irreps(f"{gated.num_irreps}x0e") if gated.num_irreps else o3.Irreps("")
    return Gate(scalars, [nn.functional.silu], gates, [torch.sigmoid], gated)


class Interaction(nn.Module):
    """One NequIP block: h_i <- Gate(Lin(sum_j TP(Lin(h_j), Y(r_ij); R(|r_ij|)))) + SelfInt(h_i)."""

    def __init__(self, irreps_in: o3.Irreps, irreps_out: o3.Irreps, num_basis: int):
        super().__init__()
        self.lin_in = o3.Linear(irreps_in, irreps_in)
        mid, instr = [], []
        for i, (mul, ir_in) in enumerate(irreps_in):
            for j, (_, ir_sh) in enumerate(SH_IRREPS):
                for ir in ir_in * ir_sh:
                    if ir in irreps_out:
                        instr.append((i, j, len(mid), "uvu", True))
                        mid.append((mul, ir))
        self.tp = o3.TensorProduct(
            irreps_in,
            SH_IRREPS,
            o3.Irreps(mid),
            instr,
            internal_weights=False,
            shared_weights=False,
        )
        self.radial = FullyConnectedNet([num_basis, 32, self.tp.weight_numel], nn.functional.silu)
        self.gate = gate_for(irreps_out)
        self.lin_out = o3.Linear(self.tp.irreps_out, self.gate.irreps_in)
        self.self_int = o3.Linear(irreps_in, irreps_out)

    def forward(self, h, src, dst, sh, rbf, avg_neighbors: float):
        msg = self.tp(self.lin_in(h)[src], sh, self.radial(rbf))
        agg = scatter_sum(msg, dst, h.shape[0]) / math.sqrt(avg_neighbors)
        return self.gate(self.lin_out(agg)) + self.self_int(h)


class EquivariantNet(nn.Module):
    """Embedding -> interaction blocks -> per-atom scalar readout summed (or averaged) per molecule.

    `forward` returns (prediction per molecule, final node features). `cond` (B, n_scalars) is
    the EMPP conditioning, added to the scalar channels of every node before every block; a
    (num_layers, B, n_scalars) tensor gives each block its own conditioning.
    """

    def __init__(
        self,
        irreps_hidden: str,
        num_layers: int,
        cutoff: float,
        num_basis: int,
        readout: str = "sum",
        extra_species: int = 0,
    ):
        super().__init__()
        self.irreps = o3.Irreps(irreps_hidden).simplify()
        if self.irreps[0].ir != o3.Irrep("0e"):
            raise ValueError(f"irreps_hidden must start with scalars (0e), got {irreps_hidden}")
        self.n_scalars = self.irreps[0].mul
        self.embed = nn.Embedding(len(ELEMENTS) + extra_species, self.n_scalars)
        irreps_in = o3.Irreps(f"{self.n_scalars}x0e")
        self.blocks = nn.ModuleList()
        for _ in range(num_layers):
            self.blocks.append(Interaction(irreps_in, self.irreps, num_basis))
            irreps_in = self.irreps
        self.rbf = BesselBasis(num_basis, cutoff)
        self.cutoff = cutoff
        # Constant message normalisation (sqrt of the mean neighbour count), set from the
        # training set by `set_avg_neighbors`; a per-batch value made predictions batch-dependent.
        self.register_buffer("avg_neighbors", torch.tensor(1.0))
        self.readout = readout
        self.out = nn.Sequential(
            o3.Linear(self.irreps, o3.Irreps("16x0e")), nn.SiLU(), nn.Linear(16, 1)
        )

    @torch.no_grad()
    def set_avg_neighbors(self, mols: list[Molecule]) -> float:
        """Fix the normalisation to the mean neighbour count per atom over `mols` (training set)."""
        edges = atoms = 0
        for m in mols:
            pos = torch.as_tensor(m.pos, dtype=torch.float32)
            dist = torch.cdist(pos, pos)
            edges += int((dist < self.cutoff).sum()) - len(m.z)
            atoms += len(m.z)
        value = max(edges / max(atoms, 1), 1.0)
        self.avg_neighbors.fill_(value)
        return value

    def forward(self, b: Batch, cond: torch.Tensor | None = None):
        src, dst = radius_graph(b.pos, b.batch, self.cutoff)
        vec = b.pos[src] - b.pos[dst]
        sh = o3.spherical_harmonics(SH_IRREPS, vec, normalize=True, normalization="component")
        rbf = self.rbf(vec.norm(dim=-1))
        avg = float(self.avg_neighbors)
        h = self.embed(b.species)
        if cond is not None and cond.dim() == 2:  # one conditioning vector for every block
            cond = cond.expand(len(self.blocks), *cond.shape)
        for k, block in enumerate(self.blocks):
            if cond is not None:
                c = cond[k][b.batch]
                h = torch.cat([h[:, : self.n_scalars] + c, h[:, self.n_scalars :]], 1)
            h = block(h, src, dst, sh, rbf, avg)
        per_atom = self.out(h).squeeze(-1)
        total = scatter_sum(per_atom, b.batch, b.num_graphs)
        if self.readout == "mean":
            total = total / torch.bincount(b.batch, minlength=b.num_graphs).clamp(min=1)
        return total, h
