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
    ids = torch.cat([train, val, test_id]).tolist()
    assert len(ids) == len(set(ids)) == 300  # disjoint: no test node is a validation node


def test_bad_graphs_raise_clear_errors():
    g = data.csbm(50, 2, 3, 1.0, 4.0, 0.5, "random", seed=0)
    empty = data.Graph(g.x, torch.zeros(2, 0, dtype=torch.long), g.y)
    with pytest.raises(ValueError, match="no edges"):
        data.check_graph(empty, 2)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\)"):
        data.check_graph(data.Graph(g.x, g.edge_index, g.y + 1), 2)
    with pytest.raises(ValueError, match="homophily must lie in"):
        data.csbm(50, 2, 3, 1.0, 4.0, 1.5, "random", seed=0)


def _write_npz(path, x=None, csr_attr=False, **override):
    """A 3-node path graph 0-1-2 stored one way (the loader symmetrises), in the .npz format."""
    cols = np.array([1, 2])  # edges 0-1 and 1-2, rows from adj_indptr
    arrays = {
        "adj_data": np.ones(2), "adj_indices": cols, "adj_indptr": np.array([0, 1, 2, 2]),
        "adj_shape": np.array([3, 3]), "labels": np.array([0, 1, 1]),
    }  # fmt: skip
    x = np.arange(6, dtype=np.float32).reshape(3, 2) if x is None else x
    if csr_attr:
        r, c = np.nonzero(x)
        arrays |= {
            "attr_data": x[r, c], "attr_indices": c,
            "attr_indptr": np.searchsorted(r, np.arange(4)), "attr_shape": np.array(x.shape),
        }  # fmt: skip
    else:
        arrays["attr_matrix"] = x
    np.savez(path, **(arrays | override))
    return path


def test_npz_loader_round_trip_dense_features(tmp_path):
    g = data.load_npz(_write_npz(tmp_path / "tiny.npz"))
    assert sorted(map(tuple, g.edge_index.t().tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    assert torch.equal(g.x, torch.arange(6, dtype=torch.float32).reshape(3, 2))
    assert g.y.tolist() == [0, 1, 1]


def test_npz_loader_matches_pyg_read_npz_on_csr_features(tmp_path):
    from torch_geometric.io import read_npz

    x = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0]], dtype=np.float32)
    path = _write_npz(tmp_path / "csr.npz", x=x, csr_attr=True)
    ours, ref = data.load_npz(path), read_npz(str(path))
    assert torch.equal(ours.x, ref.x) and torch.equal(ours.y, ref.y)
    assert torch.equal(ours.edge_index, ref.edge_index)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_text("not a zip"), "not a .npz graph file"),
        (lambda p: np.savez(p, labels=np.array([0])), "lacks the keys"),
        (lambda p: _write_npz(p, labels=np.array([0, 1])), "labels for features"),
        (lambda p: _write_npz(p, adj_indices=np.array([1, 7])), "outside"),
        (lambda p: _write_npz(p, labels=np.array([0, -1, 1])), "labels must be >= 0"),
    ],
)
def test_npz_loader_rejects_bad_files_naming_them(tmp_path, make, message):
    path = tmp_path / "bad.npz"
    make(path)
    with pytest.raises(ValueError, match=message) as err:
        data.load_npz(path)
    assert "bad.npz" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ValueError, match="no such graph file"):
        data.load_npz(tmp_path / "missing.npz")


def test_edge_homophily_and_normalisation_follow_their_definitions():
    from degem.degem import normalized_adjacency

    g = data.csbm(200, 4, 3, 1.0, 6.0, 0.4, "random", seed=0)
    same = (g.y[g.edge_index[0]] == g.y[g.edge_index[1]]).float().mean()
    assert data.edge_homophily(g.edge_index, g.y) == pytest.approx(float(same))
    a = torch.zeros(g.n, g.n)
    a[g.edge_index[0], g.edge_index[1]] = 1.0
    d = a.sum(1).clamp(min=1).rsqrt()
    ref = d[:, None] * a * d[None, :]
    assert torch.allclose(normalized_adjacency(g.edge_index, g.n).to_dense(), ref, atol=1e-6)


def test_class_means_are_the_generators_and_the_oracle_matches_a_loop():
    g = data.csbm(60, 3, 4, 2.0, 5.0, 0.7, "cyclic", seed=2)
    means = data.class_means(3, 4, 2.0, seed=2)
    resid = g.x - means[g.y]
    assert abs(float(resid.mean())) < 0.3 and abs(float(resid.std()) - 1) < 0.2
    probs = data.block_probs(3, 20, 5.0, 0.7, "cyclic")
    score = data.generative_score(g, g.y, means, probs, [0, 2])
    for i in (0, 7, 31):
        nbrs = g.edge_index[1][g.edge_index[0] == i]
        terms = [
            -0.5 * float((g.x[i] - means[c]).pow(2).sum())
            + sum(float(probs[c, g.y[j]].clamp(min=1e-6).log()) for j in nbrs)
            for c in (0, 2)
        ]
        assert float(score[i]) == pytest.approx(float(np.logaddexp(*terms)), rel=1e-5)


def write_geom_gcn(folder, index_features: bool = False):
    """A 6-node graph in the geom-gcn raw format; features dense 0/1 or (Actor) column indices."""
    folder.mkdir(parents=True, exist_ok=True)
    feats = [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0], [1, 1, 0, 0], [0, 0, 0, 1], [0, 1, 1, 1]]
    labels = [0, 1, 2, 0, 1, 2]
    order = [3, 0, 5, 1, 4, 2]  # node lines need not be sorted
    head = (
        "node_id\tfeature(feature_amount:4)\tlabel" if index_features else "node_id\tfeature\tlabel"
    )
    lines = [head]
    for i in order:
        f = [str(j) for j, v in enumerate(feats[i]) if v] if index_features else map(str, feats[i])
        lines.append(f"{i}\t{','.join(f)}\t{labels[i]}")
    (folder / data.GEOM_GCN_NODES).write_text("\n".join(lines) + "\n")
    edges = [(0, 1), (1, 2), (2, 2), (3, 4), (4, 3), (5, 0)]  # a self-loop and a duplicate pair
    (folder / data.GEOM_GCN_EDGES).write_text(
        "node_id\tnode_id\n" + "".join(f"{a}\t{b}\n" for a, b in edges)
    )
    return torch.tensor(feats, dtype=torch.float32), torch.tensor(labels)


@pytest.mark.parametrize("index_features", [False, True])
def test_geom_gcn_loader_reads_both_feature_layouts(tmp_path, index_features):
    x, y = write_geom_gcn(tmp_path / "g", index_features)
    g = data.load_graph(tmp_path / "g", normalize=False)
    assert torch.equal(g.x, x) and torch.equal(g.y, y)
    pairs = set(map(tuple, g.edge_index.t().tolist()))
    assert pairs == {(0, 1), (1, 0), (1, 2), (2, 1), (3, 4), (4, 3), (5, 0), (0, 5)}
    same = data.load_graph(tmp_path / "g" / data.GEOM_GCN_NODES, normalize=False)
    assert torch.equal(same.edge_index, g.edge_index)
    normed = data.load_graph(tmp_path / "g")  # NormalizeFeatures: rows sum to 1
    assert torch.allclose(normed.x, x / x.sum(1, keepdim=True))


def test_geom_gcn_loader_rejects_bad_files_naming_them(tmp_path):
    write_geom_gcn(tmp_path / "g")
    nodes = tmp_path / "g" / data.GEOM_GCN_NODES
    nodes.write_text("node_id\tfeature\tlabel\n0\t1,0\n")
    with pytest.raises(ValueError, match="out1_node_feature_label.txt: expected lines"):
        data.load_graph(tmp_path / "g")
    (tmp_path / "h").mkdir()
    with pytest.raises(ValueError, match="neither a geom-gcn nor a Planetoid"):
        data.load_graph(tmp_path / "h")


def write_planetoid(folder, prefix: str = "toy"):
    """A 530-node ring in the Planetoid raw format (pickled scipy / numpy objects, as published;
    PyG's reader wants 500 validation nodes after the labelled ones)."""
    import pickle

    import scipy.sparse as sp

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    n, d, c = 530, 5, 3
    feats = (rng.random((n, d)) < 0.5).astype(np.float32)
    feats[:, 0] = 1.0
    labels = np.arange(n) % c
    onehot = np.eye(c)[labels]
    test = [528, 525, 529, 527, 526]  # tx rows are listed in test.index order, not sorted
    graph = {i: [(i + 1) % n] for i in range(n)}
    graph[3].append(3)  # a self-loop, dropped
    parts = {
        "x": sp.csr_matrix(feats[:20]), "allx": sp.csr_matrix(feats[:525]),
        "tx": sp.csr_matrix(feats[test]), "y": onehot[:20], "ally": onehot[:525],
        "ty": onehot[test], "graph": graph,
    }  # fmt: skip
    for k, v in parts.items():
        with open(folder / f"ind.{prefix}.{k}", "wb") as f:
            pickle.dump(v, f)
    (folder / f"ind.{prefix}.test.index").write_text("".join(f"{i}\n" for i in test))
    return torch.as_tensor(feats), torch.as_tensor(labels)


def test_planetoid_loader_reads_the_raw_files_by_file_or_folder(tmp_path):
    x, y = write_planetoid(tmp_path / "p")
    g = data.load_graph(tmp_path / "p" / "ind.toy.x", normalize=False)
    assert torch.equal(g.x, x) and torch.equal(g.y, y)
    pairs = set(map(tuple, g.edge_index.t().tolist()))
    assert (3, 3) not in pairs and all((j, i) in pairs for i, j in pairs)
    assert {(0, 1), (1, 0), (529, 0)} <= pairs and len(pairs) == 2 * 530
    assert torch.equal(data.load_graph(tmp_path / "p", normalize=False).edge_index, g.edge_index)
    (tmp_path / "p" / "ind.toy.ty").unlink()
    with pytest.raises(ValueError, match=r"lacks ind\.toy\.\['ty'\]"):
        data.load_graph(tmp_path / "p")


def test_split_ignores_the_exposure_class_in_the_label_protocol():
    y = torch.arange(200) % 5
    train, val, test_id, test_ood = data.split(y, (0,), 0.1, seed=0, ignore=(1,))
    assert set(y[test_ood].tolist()) == {0}
    for part in (train, val, test_id):
        assert set(y[part].tolist()) <= {2, 3, 4}
    assert len(train) + len(val) + len(test_id) == 120 and len(test_ood) == 40
