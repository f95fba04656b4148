"""The backbone: SE(3)/E(3) invariance of the energy, equivariance of forces, graph building."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from e3nn import o3

from empp.data import Molecule
from empp.model import EquivariantNet, collate, radius_graph


def random_molecules(n_mols: int = 3, seed: int = 0) -> list[Molecule]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_mols):
        n = int(rng.integers(3, 7))
        z = rng.choice([1, 6, 7, 8, 9], size=n)
        out.append(Molecule(z, rng.normal(size=(n, 3)) * 1.2, {"e": float(rng.normal())}))
    return out


def energy_and_forces(net, mols, rot=None, shift=None):
    b = collate(mols, "e", 0.0, 1.0)
    pos = b.pos
    if rot is not None:
        pos = pos @ rot.T + shift
    b.pos = pos.detach().requires_grad_(True)
    energy, _ = net(b)
    return energy.detach(), -torch.autograd.grad(energy.sum(), b.pos)[0]


def test_energy_invariant_forces_equivariant():
    torch.manual_seed(0)
    net = EquivariantNet("8x0e+4x1o+2x2e", 2, 4.0, 6)
    mols = random_molecules()
    rot, shift = o3.rand_matrix(), torch.randn(3)
    e0, f0 = energy_and_forces(net, mols)
    e1, f1 = energy_and_forces(net, mols, rot, shift)
    assert torch.allclose(e0, e1, atol=1e-4)
    assert torch.allclose(f0 @ rot.T, f1, atol=1e-4)
    assert f0.abs().max() > 1e-3  # not trivially zero


def test_energy_invariant_to_reflection():
    torch.manual_seed(1)
    net = EquivariantNet("8x0e+4x1o+2x2e", 2, 4.0, 6)
    mols = random_molecules(seed=1)
    e0, _ = energy_and_forces(net, mols)
    e1, _ = energy_and_forces(net, mols, -torch.eye(3), torch.zeros(3))
    assert torch.allclose(e0, e1, atol=1e-4)


def test_radius_graph_matches_brute_force():
    mols = random_molecules(4, seed=2)
    b = collate(mols, "e", 0.0, 1.0)
    src, dst = radius_graph(b.pos, b.batch, 2.0)
    got = set(zip(src.tolist(), dst.tolist()))
    want = {
        (i, j)
        for i in range(len(b.pos))
        for j in range(len(b.pos))
        if i != j and b.batch[i] == b.batch[j] and float((b.pos[i] - b.pos[j]).norm()) < 2.0
    }
    assert got == want and want


def test_irreps_must_start_with_scalars():
    import pytest

    with pytest.raises(ValueError, match="start with scalars"):
        EquivariantNet("4x1o", 1, 4.0, 4)


def test_prediction_does_not_depend_on_the_batch():
    """The neighbour normalisation is a constant from the training set, not a batch statistic."""
    net = EquivariantNet("8x0e+2x1o+2x2e", 2, 4.0, 8)
    mols = random_molecules(5, seed=3)
    assert net.set_avg_neighbors(mols) > 1.0
    alone, _ = net(collate(mols[:1], "e", 0.0, 1.0))
    together, _ = net(collate(mols, "e", 0.0, 1.0))
    torch.testing.assert_close(alone[0], together[0], rtol=1e-5, atol=1e-6)


def test_bessel_basis_matches_the_closed_form():
    from empp.model import BesselBasis

    r = torch.linspace(0.3, 4.5, 50)
    got = BesselBasis(8, 4.0)(r)
    n = torch.arange(1, 9) * np.pi / 4.0
    x = (r / 4.0).clamp(max=1.0)
    env = 1 - 28 * x**6 + 48 * x**7 - 21 * x**8
    want = np.sqrt(2 / 4.0) * torch.sin(n * r[:, None]) / r[:, None] * env[:, None]
    want[r >= 4.0] = 0.0
    torch.testing.assert_close(got, want.float(), rtol=1e-4, atol=1e-5)


def test_avg_neighbors_is_the_mean_neighbour_count_without_self_pairs():
    net = EquivariantNet("8x0e+2x1o", 1, 3.0, 4)
    mols = random_molecules(4, seed=9)
    count = sum(
        sum(
            1
            for i in range(len(m.z))
            for j in range(len(m.z))
            if i != j and np.linalg.norm(m.pos[i] - m.pos[j]) < 3.0
        )
        for m in mols
    )
    want = max(count / sum(len(m.z) for m in mols), 1.0)
    assert net.set_avg_neighbors(mols) == pytest.approx(want)
    assert float(net.avg_neighbors) == pytest.approx(want)
