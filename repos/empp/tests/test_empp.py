"""EMPP: masking, targets, KL, equivariance of the head, neighbour query, reconstruction."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from e3nn import o3

from empp.data import Molecule, element_index
from empp.empp import (
    Conditioning,
    PositionHead,
    direction_target,
    gaussian_smearing,
    kl_divergence,
    mask_position,
    neighbours,
    radius_centres,
    radius_target,
)
from empp.model import SH_IRREPS as SH
from empp.model import EquivariantNet, collate

from .test_model import random_molecules


def test_mask_removes_exactly_one_atom_and_keeps_its_element():
    mols = random_molecules(5, seed=3)
    m = mask_position(mols, np.random.default_rng(0), num_mask=1)
    assert len(m.mols) == 5 and list(m.source) == [0, 1, 2, 3, 4]
    for orig, copy, elem, pos in zip(mols, m.mols, m.element, m.pos):
        assert len(copy.z) == len(orig.z) - 1
        hit = [i for i in range(len(orig.z)) if np.array_equal(orig.pos[i], pos)]
        assert len(hit) == 1 and orig.z[hit[0]] == elem
        rest = np.delete(orig.pos, hit[0], axis=0)
        np.testing.assert_array_equal(rest, copy.pos)
        np.testing.assert_array_equal(np.delete(orig.z, hit[0]), copy.z)


def test_num_mask_k_gives_k_single_atom_copies():
    mols = random_molecules(2, seed=4)
    m = mask_position(mols, np.random.default_rng(1), num_mask=3)
    assert list(m.source) == [0, 0, 0, 1, 1, 1]
    for i in (0, 1):
        removed = m.pos[m.source == i]
        assert len({tuple(p) for p in removed}) == 3  # three different atoms
        assert all(len(c.z) == len(mols[i].z) - 1 for c, s in zip(m.mols, m.source) if s == i)


def test_masking_a_one_atom_molecule_is_an_error():
    one = Molecule(np.array([6]), np.zeros((1, 3)), {"e": 0.0})
    with pytest.raises(ValueError, match="at least 2"):
        mask_position([one], np.random.default_rng(0))


def test_neighbours_match_brute_force_and_empty_is_an_error():
    mols = random_molecules(3, seed=5)
    b = collate(mols, "e", 0.0, 1.0)
    first = torch.tensor([0, len(mols[0].z), len(mols[0].z) + len(mols[1].z)])
    targets = b.pos[first] + torch.tensor([0.3, -0.2, 0.1])  # every copy has a neighbour
    atom, copy = neighbours(b.pos, b.batch, targets, 2.5)
    want = {
        (i, g)
        for i in range(len(b.pos))
        for g in range(3)
        if b.batch[i] == g and float((b.pos[i] - targets[g]).norm()) < 2.5
    }
    assert set(zip(atom.tolist(), copy.tolist())) == want
    assert len(want) > 3  # not only the atoms next to the targets
    with pytest.raises(ValueError, match="no neighbour"):
        neighbours(b.pos, b.batch, targets + 100.0, 2.5)


def test_direction_target_peaks_within_one_grid_cell():
    head = PositionHead(o3.Irreps("4x0e+2x1o+2x2e"), 4, (16, 17), 8)
    grid = head.grid_directions()
    unit = torch.nn.functional.normalize(torch.randn(50, 3), dim=-1)
    target = direction_target(unit, grid, 0.1)
    assert torch.allclose(target.sum(-1), torch.ones(50))
    best = grid[target.argmax(-1)]
    angle = torch.arccos((best * unit).sum(-1).clamp(-1, 1))
    cell = math.hypot(math.pi / 16, 2 * math.pi / 17)  # diagonal of the coarsest grid cell
    assert float(angle.max()) <= cell


def test_radius_target_mode_at_true_distance():
    centres = radius_centres(64, 6.0)
    dist = torch.rand(40) * 5.5 + 0.2
    target = radius_target(dist, centres)
    nearest = (centres[None, :] - dist[:, None]).abs().argmin(-1)
    assert torch.equal(target.argmax(-1), nearest)
    assert torch.allclose(target.sum(-1), torch.ones(40))


def test_kl_zero_iff_prediction_equals_target():
    t = torch.softmax(torch.randn(6, 30), -1)
    assert torch.allclose(kl_divergence(t, t.log()), torch.zeros(6), atol=1e-6)
    other = torch.log_softmax(torch.randn(6, 30), -1)
    assert (kl_divergence(t, other) > 1e-4).all()
    # slow, obvious reference
    ref = [
        sum(float(t[i, j] * (math.log(t[i, j]) - other[i, j])) for j in range(30)) for i in range(6)
    ]
    assert torch.allclose(kl_divergence(t, other), torch.tensor(ref), atol=1e-5)


def test_grid_matmul_equals_e3nn_to_s2grid():
    head = PositionHead(o3.Irreps("4x0e+2x1o+2x2e"), 3, (8, 9), 8)
    coeffs = torch.randn(5, 3, 9)
    direct = head.to_grid(coeffs).flatten(2)
    assert torch.allclose(coeffs @ head.grid_basis, direct, atol=1e-5)
    dirs = head.grid_directions().expand(5, -1, -1)
    assert torch.allclose(
        head.direction_logits(coeffs), head.direction_logits_at(coeffs, dirs), atol=1e-5
    )


def test_direction_logits_rotate_with_the_molecule():
    torch.manual_seed(2)
    irreps = "8x0e+4x1o+2x2e"
    net = EquivariantNet(irreps, 2, 4.0, 6)
    head = PositionHead(net.irreps, 4, (8, 9), 8)
    cond = Conditioning(net.n_scalars, use_label=True, num_blocks=2)
    mols = random_molecules(2, seed=6)
    rot, shift = o3.rand_matrix(), torch.randn(3)
    query = torch.nn.functional.normalize(torch.randn(1, 20, 3), dim=-1)

    def logits(transform: bool):
        b = collate(mols, "e", 0.0, 1.0)
        if transform:
            b.pos = b.pos @ rot.T + shift
        c = cond(np.array([6, 8]), b.y)
        _, h = net(b, c)
        coeffs = head.coefficients(h)
        q = query @ rot.T if transform else query
        return head.direction_logits_at(coeffs, q.expand(len(h), -1, -1)), head.radius_log_probs(
            coeffs
        )

    (d0, r0), (d1, r1) = logits(False), logits(True)
    assert torch.allclose(d0, d1, atol=1e-4) and torch.allclose(r0, r1, atol=1e-4)
    assert d0.std() > 1e-4


def test_conditioning_is_per_block_silu_then_linear():
    """Official layout: block k gets Linear_k(SiLU(element + label embedding))."""
    cond = Conditioning(8, use_label=True, num_blocks=3)
    y = torch.tensor([0.3, -1.0])
    out = cond(np.array([6, 8]), y)
    assert out.shape == (3, 2, 8)
    assert not torch.allclose(out[0], out[1])
    rows = torch.as_tensor(element_index(np.array([6, 8])))
    inner = torch.nn.functional.silu(cond.element(rows) + cond.label(gaussian_smearing(y)))
    torch.testing.assert_close(out[2], cond.per_block[2](inner))


def _batch_and_targets(seed: int):
    mols = random_molecules(3, seed=seed)
    b = collate(mols, "e", 0.0, 1.0)
    first = torch.tensor([0, len(mols[0].z), len(mols[0].z) + len(mols[1].z)])
    return b, b.pos[first] + torch.tensor([0.9, -0.6, 0.4])  # a masked atom near each molecule


def test_empp_loss_matches_a_direct_computation():
    """Direction: KL(softmax(Y(u).Y(grid) / T) || log_softmax(logits / T)) with u the unit vector
    from each neighbour to the masked atom; radius: KL of the smoothed bins; mean over edges."""
    from types import SimpleNamespace

    from empp.empp import empp_loss

    b, targets = _batch_and_targets(7)
    net = EquivariantNet("8x0e+4x1o+2x2e", 1, 4.0, 6)
    head = PositionHead(net.irreps, 4, (10, 11), 32)
    _, h = net(b)
    cfg = SimpleNamespace(head_cutoff=2.5, temperature=0.1, num_radius_bins=32, radius_max=6.0)
    loss, _ = empp_loss(head, h, b.pos, b.batch, targets, cfg)
    pairs = [
        (i, g)
        for g in range(3)
        for i in range(len(b.pos))
        if b.batch[i] == g and float((b.pos[i] - targets[g]).norm()) < 2.5
    ]
    grid = head.grid_directions()
    kw = {"normalize": True, "normalization": "integral"}
    total = []
    for i, g in pairs:
        rel = targets[g] - b.pos[i]
        coeffs = head.coefficients(h[i : i + 1])
        log_dir = torch.log_softmax(head.direction_logits(coeffs)[0] / 0.1, -1)
        sh = o3.spherical_harmonics(SH, rel / rel.norm(), **kw)
        t_dir = torch.softmax((o3.spherical_harmonics(SH, grid, **kw) @ sh) / 0.1, -1)
        centres = torch.linspace(0, 6.0, 32)
        t_rad = torch.softmax(torch.exp(-0.3 * ((centres - rel.norm()) / 0.5) ** 2), -1)
        log_rad = torch.log_softmax(head.radius_mlp(coeffs[:, :, 0])[0], -1)
        kl = torch.nn.functional.kl_div
        total.append(kl(log_dir, t_dir, reduction="sum") + kl(log_rad, t_rad, reduction="sum"))
    assert len(pairs) > 3
    torch.testing.assert_close(loss, torch.stack(total).mean(), rtol=1e-4, atol=1e-5)


def test_reconstruct_recovers_the_masked_atom_from_perfect_predictions():
    """With the targets as predictions, the read-out lands within a grid cell (times the
    distance) and a radius bin of the true position; far better than the neighbours' centroid."""
    from types import SimpleNamespace

    from empp.empp import empp_loss, reconstruct

    b, targets = _batch_and_targets(8)
    net = EquivariantNet("8x0e+4x1o+2x2e", 1, 4.0, 6)
    head = PositionHead(net.irreps, 4, (40, 41), 128)
    _, h = net(b)
    cfg = SimpleNamespace(head_cutoff=3.0, temperature=0.1, num_radius_bins=128, radius_max=6.0)
    _, out = empp_loss(head, h, b.pos, b.batch, targets, cfg)
    perfect = {**out, "log_dir": out["t_dir"].log(), "log_rad": out["t_rad"].log()}
    guess = reconstruct(b.pos, perfect, 3)
    centroid = reconstruct(b.pos, {**out, "centres": out["centres"] * 0}, 3)
    cell = math.hypot(math.pi / 40, 2 * math.pi / 41)
    dist = (targets[out["copy"]] - b.pos[out["atom"]]).norm(dim=-1)
    bound = torch.zeros(3).scatter_reduce_(0, out["copy"], dist * cell + 6.0 / 127, "amax")
    err = (guess - targets).norm(dim=-1)
    assert (err <= bound).all(), (err, bound)
    assert (err < 0.5 * (centroid - targets).norm(dim=-1)).all()


def test_head_mlps_are_the_official_linear_layers():
    """Official `fc_logit` / `fc_radius`: nn.Linear with biases, plain SiLU (not e3nn's
    bias-free FullyConnectedNet with a rescaled SiLU)."""
    head = PositionHead(o3.Irreps("4x0e+2x1o"), 5, (6, 7), 12)
    x = torch.randn(3, 5)
    for mlp, sizes in ((head.point_mlp, (5, 16, 1)), (head.radius_mlp, (5, 64, 12))):
        first, last = mlp[0], mlp[2]
        assert (first.in_features, first.out_features, last.out_features) == sizes
        assert first.bias is not None and last.bias is not None
        want = torch.nn.functional.silu(x @ first.weight.T + first.bias) @ last.weight.T + last.bias
        torch.testing.assert_close(mlp(x), want)
    e3 = PositionHead(o3.Irreps("4x0e+2x1o"), 5, (6, 7), 12, mlp="e3nn")
    assert sum(p.numel() for p in e3.point_mlp.parameters()) == 5 * 16 + 16
    with pytest.raises(ValueError, match="head_mlp"):
        PositionHead(o3.Irreps("4x0e+2x1o"), 5, (6, 7), 12, mlp="mystery")
