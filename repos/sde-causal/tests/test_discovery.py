"""CI test calibration, the discovery algorithm with an oracle, the SDE simulator, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from sde_causal import citest, discovery, sde


def _rbf(v: np.ndarray) -> np.ndarray:
    d2 = ((v[:, None] - v[None]) ** 2).sum(-1)
    return np.exp(-d2 / np.median(d2[d2 > 0]))


def test_null_pvalues_are_roughly_uniform_and_dependence_is_detected():
    """X and Y both depend on Z but X _||_ Y | Z: p-values uniform (KS); Y = f(X) + noise: p small."""
    rng = np.random.default_rng(0)
    null_p = []
    for _ in range(60):
        z = rng.normal(size=(60, 1))
        x, y = z + 0.5 * rng.normal(size=z.shape), np.sin(2 * z) + 0.5 * rng.normal(size=z.shape)
        null_p.append(citest.kernel_ci_test(_rbf(x), _rbf(y), _rbf(z), 99, rng)[1])
    assert stats.kstest(null_p, "uniform").pvalue > 0.01
    z = rng.normal(size=(60, 1))
    x = z + 0.5 * rng.normal(size=z.shape)
    y = np.sin(3 * x) + 0.1 * rng.normal(size=z.shape)
    assert citest.kernel_ci_test(_rbf(x), _rbf(y), _rbf(z), 99, rng)[1] < 0.05


def test_algorithm_with_oracle_recovers_random_graphs_exactly():
    rng = np.random.default_rng(1)
    for _ in range(15):
        graph = sde.random_dag(int(rng.integers(2, 7)), rng, edge_prob=0.5)
        found, _ = discovery.discover(len(graph), discovery.dsep_oracle(graph), alpha=0.5)
        assert np.array_equal(found, graph)
        assert discovery.shd(graph, found) == 0 and discovery.f1(graph, found) == 1.0


def test_shd_counts_missing_extra_and_reversed_edges_once():
    true = np.zeros((3, 3), bool)
    true[0, 1] = true[1, 2] = True
    est = np.zeros((3, 3), bool)
    est[1, 0] = est[0, 2] = True  # reversed 0-1, missing 1-2, extra 0-2
    assert discovery.shd(true, est) == 3
    assert discovery.shd(true, true) == 0  # every edge right: nothing counted
    est = true.copy()
    est[2, 0] = True  # one extra edge against the index order
    assert discovery.shd(true, est) == 1


def test_ou_variance_matches_closed_form():
    model = sde.SDEModel(
        "linear", np.array([0.8]), np.zeros((1, 1)), np.zeros((1, 1)), base_noise=0.5
    )
    x = sde.simulate(model, 20_000, 200, seed=2)
    t = np.linspace(0, 1, 201)
    expect = sde.ou_variance(0.8, 0.5, 0.2, t)
    np.testing.assert_allclose(x[..., 0].var(0)[::50], expect[::50], rtol=0.05)
    assert np.abs(x[:, -1, 0].mean()) < 0.02


def test_diffusion_coupling_moves_only_the_child_variance():
    graph = np.array([[False, True], [False, False]])
    model = sde.model_from_graph(graph, "diffusion", np.random.default_rng(3))
    assert np.array_equal(model.graph, graph) and not model.drift.any()
    x = sde.simulate(model, 4000, 200, seed=3)
    child_inc = x[:, -1, 1] - x[:, 100, 1]
    parent_big = np.abs(x[:, 100, 0]) > np.median(np.abs(x[:, 100, 0]))
    assert child_inc[parent_big].var() > 1.5 * child_inc[~parent_big].var()
    assert abs(np.corrcoef(child_inc, x[:, 100, 0])[0, 1]) < 0.1


def test_simulation_and_sigker_test_are_deterministic():
    graph = np.array([[False, True], [False, False]])
    model = sde.model_from_graph(graph, "tanh", np.random.default_rng(4))
    a, b = sde.simulate(model, 30, 50, seed=4), sde.simulate(model, 30, 50, seed=4)
    assert np.array_equal(a, b)
    paths, times = sde.observe(a, 11, seed=4, irregular=True)
    assert (np.diff(times, axis=1) > 0).all() and times[:, 0].max() == 0 and times[:, -1].min() == 1
    data = discovery.PathData(paths, times, 0.5, 0.5, names=["x", "y"])
    p1 = discovery.SigKerTest(data, 1, 19, 0.01, seed=0)("x", "y")
    assert p1 == discovery.SigKerTest(data, 1, 19, 0.01, seed=0)(0, 1)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: t("x", "y", ["q"]), "unknown variable 'q'"),
        (lambda t: t(0, 5), "unknown variable index 5"),
        (lambda t: t(0, 1, [0]), "must be disjoint"),
    ],
)
def test_bad_edge_queries_raise(call, message):
    paths = np.random.default_rng(5).normal(size=(10, 11, 2)).cumsum(1)
    data = discovery.PathData(paths, np.linspace(0, 1, 11), 0.5, 0.5, names=["x", "y"])
    with pytest.raises(ValueError, match=message):
        call(discovery.SigKerTest(data, 0, 9, 0.01, seed=0))


@pytest.mark.parametrize(("s", "h"), [(1.0, 0.2), (0.0, 0.5), (0.6, 0.5), (0.5, 0.0)])
def test_cut_outside_the_time_grid_raises(s, h):
    with pytest.raises(ValueError, match="s < s \\+ h"):
        discovery.PathData(np.zeros((4, 11, 1)), np.linspace(0, 1, 11), s, h)


@pytest.mark.parametrize(
    ("times", "names", "message"),
    [
        (np.linspace(0, 1, 7), None, "times must have shape"),
        (np.r_[np.linspace(0, 0.5, 6), 0.4, np.linspace(0.6, 1, 4)], None, "strictly increasing"),
        (np.linspace(0, 1, 11), ["a", "b"], "2 names for 3 variables"),
    ],
)
def test_bad_path_data_raises(times, names, message):
    with pytest.raises(ValueError, match=message):
        discovery.PathData(np.zeros((4, 11, 3)), times, 0.5, 0.5, names=names)


def test_null_permutations_swap_only_within_conditioning_neighbours():
    """The conditional permutation keeps Z: tight Z-pairs are matched and X moves only inside them."""
    rng = np.random.default_rng(6)
    centres = rng.normal(0, 10, (15, 1))
    z = np.repeat(centres, 2, axis=0) + 0.01 * rng.normal(size=(30, 1))
    pairs = citest.nearest_pairs(_rbf(z))
    assert sorted(map(sorted, pairs.tolist())) == [[2 * k, 2 * k + 1] for k in range(15)]
    # X equal within each Z-pair: every swap leaves Kx unchanged, so every null statistic ties
    x = np.repeat(rng.normal(size=(15, 1)), 2, axis=0)
    y = np.repeat(rng.normal(size=(15, 1)), 2, axis=0)
    _, p = citest.kernel_ci_test(_rbf(x), _rbf(y), _rbf(z), 49, rng)
    assert p == 1.0


def test_alpha_outside_unit_interval_raises():
    with pytest.raises(ValueError, match="alpha must be in"):
        discovery.discover(3, discovery.dsep_oracle(np.zeros((3, 3), bool)), alpha=1.5)


def _strong_edge_data(seed: int = 8) -> discovery.PathData:
    graph = np.array([[False, True], [False, False]])
    model = sde.SDEModel("linear", np.array([0.0, 0.0]), 2.5 * graph, np.zeros((2, 2)))
    paths, times = sde.observe(sde.simulate(model, 60, 200, seed=seed), 11, seed=seed)
    return discovery.PathData(paths, times, 0.5, 0.5)


def test_negative_control_variants_lose_what_they_remove():
    """shuffled: a strong edge is no longer found; no-cond: the time-reversed null (effect's
    past vs cause's future) is rejected once the cause's own past is not conditioned on."""
    test = discovery.SigKerTest(_strong_edge_data(), 0, 99, 0.01, seed=0)
    assert test(0, 1) < 0.05
    assert test.at(variant="shuffled")(0, 1) > 0.05
    assert test(1, 0) > 0.05
    assert test.at(variant="no-cond")(1, 0) < 0.05
    assert test.at(ridge=0.3)._grams is test._grams  # variants share the cached Grams
    with pytest.raises(ValueError, match="variant must be one of"):
        test.at(variant="half")


def test_quadratic_family_couples_through_the_parents_square():
    """OLS of the child's drift on the parent and its square finds the weight on the square."""
    graph = np.array([[False, True], [False, False]])
    model = sde.model_from_graph(graph, "quadratic", np.random.default_rng(11))
    x = sde.simulate(model, 4000, 200, seed=12)
    t = np.arange(20, 190, 5)
    parent, child = x[:, t, 0].ravel(), x[:, t, 1].ravel()
    drift = ((x[:, t + 1, 1] - x[:, t, 1]) * 200).ravel()
    design = np.column_stack([np.ones_like(parent), child, parent, parent**2])
    coef = np.linalg.lstsq(design, drift, rcond=None)[0]
    w = model.drift[0, 1]
    assert abs(coef[3] - w) < 0.3 and abs(coef[2]) < 0.3, (coef, w)
