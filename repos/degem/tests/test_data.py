"""Generator, OOD shifts, splits and the .npz loader."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from degem import data


@pytest.mark.parametrize(("h", "pattern"), [(0.8, "random"), (0.2, "random"), (0.2, "cyclic")])
def test_generated_homophily_within_003_of_target(h, pattern):
    g = data.csbm(1500, 5, 8, 1.0, 10.0, h, pattern, seed=3)
    assert abs(data.edge_homophily(g.edge_index, g.y) - h) < 0.03
    assert abs(g.edge_index.shape[1] / g.n - 10.0) < 0.6  # mean degree
    if pattern == "cyclic":  # inter-class edges join neighbouring classes only
        diff = (g.y[g.edge_index[0]] - g.y[g.edge_index[1]]) % 5
        assert set(diff.tolist()) <= {0, 1, 4}


def test_generator_is_deterministic_and_undirected():
    a = data.csbm(300, 3, 4, 1.0, 6.0, 0.5, "random", seed=1)
    b = data.csbm(300, 3, 4, 1.0, 6.0, 0.5, "random", seed=1)
    c = data.csbm(300, 3, 4, 1.0, 6.0, 0.5, "random", seed=2)
    assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x)
    assert not torch.equal(a.edge_index, c.edge_index)
    pairs = set(map(tuple, a.edge_index.t().tolist()))
    assert all((j, i) in pairs for i, j in pairs) and all(i != j for i, j in pairs)


def test_structure_shift_keeps_density_and_destroys_homophily():
    g = data.csbm(1500, 5, 8, 1.0, 10.0, 0.8, "random", seed=0)
    s = data.structure_shift(g, 5, seed=0)
    assert abs(data.density(s) / data.density(g) - 1) < 0.05
    assert torch.equal(s.x, g.x) and torch.equal(s.y, g.y)
    assert abs(data.edge_homophily(s.edge_index, s.y) - 0.2) < 0.05  # blocks ignore labels


def test_feature_shift_interpolates_between_nodes():
    g = data.csbm(100, 2, 3, 1.0, 4.0, 0.5, "random", seed=0)
    f = data.feature_shift(g, seed=0)
    assert torch.equal(f.edge_index, g.edge_index)
    lo, hi = g.x.min(0).values, g.x.max(0).values
    assert bool(((f.x >= lo - 1e-6) & (f.x <= hi + 1e-6)).all())  # convex combinations
    assert not torch.allclose(f.x, g.x)


def test_split_keeps_ood_classes_out_of_training():
    y = torch.arange(500) % 5
    train, val, test_id, test_ood = data.split(y, (3, 4), 0.1, seed=0)
    assert not torch.isin(y[torch.cat([train, val, test_id])], torch.tensor([3, 4])).any()
    assert bool((y[test_ood] >= 3).all()) and test_ood.numel() == 200
    assert len(set(torch.cat([train, val, test_id]).tolist())) == 300


def test_bad_graphs_raise_clear_errors():
    g = data.csbm(50, 2, 3, 1.0, 4.0, 0.5, "random", seed=0)
    empty = data.Graph(g.x, torch.zeros(2, 0, dtype=torch.long), g.y)
    with pytest.raises(ValueError, match="no edges"):
        data.check_graph(empty, 2)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\)"):
        data.check_graph(data.Graph(g.x, g.edge_index, g.y + 1), 2)
    with pytest.raises(ValueError, match="homophily must lie in"):
        data.csbm(50, 2, 3, 1.0, 4.0, 1.5, "random", seed=0)


def test_npz_loader_round_trip(tmp_path):
    adj = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])  # one direction only, loader symmetrises
    rows, cols = np.nonzero(adj)
    indptr = np.searchsorted(rows, np.arange(4))
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.savez(
        tmp_path / "tiny.npz", adj_data=np.ones(len(rows)), adj_indices=cols, adj_indptr=indptr,
        adj_shape=np.array([3, 3]), attr_matrix=x, labels=np.array([0, 1, 1]),
    )  # fmt: skip
    g = data.load_npz(tmp_path / "tiny.npz")
    assert sorted(map(tuple, g.edge_index.t().tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    assert torch.equal(g.x, torch.as_tensor(x)) and g.y.tolist() == [0, 1, 1]
    np.savez(tmp_path / "bad.npz", labels=np.array([0]))
    with pytest.raises(ValueError, match="lacks the keys"):
        data.load_npz(tmp_path / "bad.npz")
