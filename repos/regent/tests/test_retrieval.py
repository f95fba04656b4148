"""Retrieval: faiss vs brute force, own-episode exclusion, the p95 normaliser, R&P, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from regent.data import Demos, rollout_expert, take_episodes
from regent.envs import make_tasks
from regent.retrieval import (
    Retriever,
    brute_force_knn,
    knn,
    knn_all,
    knn_other_episodes,
    l2_index,
    p95_normaliser,
)


@pytest.fixture(scope="module")
def point_demos():
    return rollout_expert(make_tasks("point", 1, seed=3)[0], 6, seed=3, noise=0.1)


def test_faiss_equals_brute_force(point_demos):
    rng = np.random.default_rng(0)
    queries = rng.uniform(-1, 1, (50, 2)).astype(np.float32)
    dist, idx = knn(l2_index(point_demos.obs), queries, 7)
    ref_dist, ref_idx = brute_force_knn(point_demos.obs, queries, 7)
    np.testing.assert_allclose(dist, ref_dist, atol=1e-5)
    assert (idx == ref_idx).mean() > 0.99  # only exact ties may swap


@pytest.mark.parametrize("dim", [2, 6, 16])
def test_knn_all_equals_brute_force_at_every_dimension(dim):
    """k-d tree up to KD_TREE_MAX_DIM, faiss above: both exact."""
    rng = np.random.default_rng(dim)
    x, queries = rng.random((300, dim), dtype=np.float32), rng.random((40, dim), dtype=np.float32)
    dist, idx = knn_all(x, queries, 9)
    ref_dist, ref_idx = brute_force_knn(x, queries, 9)
    np.testing.assert_allclose(dist, ref_dist, atol=1e-5)
    assert (idx == ref_idx).all()


def test_retrieval_never_returns_own_episode(point_demos):
    dist, idx = knn_other_episodes(point_demos, 10)
    assert idx.shape == (len(point_demos), 10)
    assert not (point_demos.episode[idx] == point_demos.episode[:, None]).any()
    # and they are the 10 nearest rows of other episodes, closest first
    for row in range(0, len(point_demos), 17):
        other = np.flatnonzero(point_demos.episode != point_demos.episode[row])
        d = np.linalg.norm(point_demos.obs[other] - point_demos.obs[row], axis=1)
        np.testing.assert_allclose(dist[row], np.sort(d)[:10], atol=1e-5)


def test_context_is_sorted_by_distance(point_demos):
    retriever = Retriever(point_demos)
    queries = np.random.default_rng(1).uniform(-1, 1, (20, 2)).astype(np.float32)
    idx, dist = retriever.retrieve(queries, 19)
    assert (np.diff(dist, axis=1) >= -1e-6).all()
    true = np.linalg.norm(point_demos.obs[idx] - queries[:, None], axis=-1)
    np.testing.assert_allclose(dist, true, atol=1e-5)


def test_p95_normaliser_matches_loop(point_demos):
    nearest = []
    for row in range(len(point_demos)):
        other = point_demos.episode != point_demos.episode[row]
        nearest.append(np.linalg.norm(point_demos.obs[other] - point_demos.obs[row], axis=1).min())
    assert p95_normaliser(point_demos) == pytest.approx(np.percentile(nearest, 95), rel=1e-5)


def test_official_context_normaliser_is_p95_of_distances_to_the_first_retrieved(point_demos):
    """The official statistic: per query, its n other-episode neighbours closest first; the
    distances of each of them and of the query to the first one (zeros included), then p95."""
    n, every, to_query = 5, [], []
    obs = point_demos.obs.astype(np.float64)
    for row in range(len(point_demos)):
        other = np.flatnonzero(point_demos.episode != point_demos.episode[row])
        d = np.linalg.norm(obs[other] - obs[row], axis=1)
        near = other[np.argsort(d, kind="stable")[:n]]
        states = np.vstack([obs[near], obs[row]])
        every.extend(np.linalg.norm(states - obs[near[0]], axis=1))
        to_query.extend(np.sort(d)[:n])
    official = p95_normaliser(point_demos, "context", n)
    assert official == pytest.approx(np.percentile(every, 95), rel=1e-4)
    # not the p95 of query-to-neighbour distances (the second pass's "context")
    assert abs(official - np.percentile(to_query, 95)) > 1e-3 * official
    with pytest.raises(ValueError, match="normaliser must be one of"):
        p95_normaliser(point_demos, "p99")


def test_rp_returns_stored_action_on_exact_match(point_demos):
    retriever = Retriever(point_demos)
    rows = np.arange(0, len(point_demos), 9)
    np.testing.assert_array_equal(retriever.rp_action(point_demos.obs[rows]), point_demos.act[rows])


def test_rp_discrete_exact_match():
    demos = rollout_expert(make_tasks("grid", 1, seed=0)[0], 3, seed=0, noise=0.0)
    first = np.unique(demos.obs, axis=0, return_index=True)[1]  # a repeated cell has one action
    got = Retriever(demos).rp_action(demos.obs[first])
    np.testing.assert_array_equal(got, demos.act[first])


def test_no_demonstrations_is_a_clear_error():
    empty = Demos(
        np.zeros((0, 2), np.float32),
        np.zeros((0, 2), np.float32),
        np.zeros(0, np.float32),
        np.zeros(0, np.int64),
    )
    with pytest.raises(ValueError, match="no demonstrations"):
        Retriever(empty)


def test_shape_mismatch_is_a_clear_error(point_demos):
    with pytest.raises(ValueError, match=r"shape \(3,\) do not match .* \(2,\)"):
        Retriever(point_demos).retrieve(np.zeros((4, 3), np.float32), 2)


def test_n_larger_than_demonstrations_is_a_clear_error(point_demos):
    one = take_episodes(point_demos, 1)
    with pytest.raises(ValueError, match=f"n=100 must be between 1 and the {len(one)}"):
        Retriever(one).retrieve(one.obs[:2], 100)
    with pytest.raises(ValueError, match="n=500 neighbours requested"):
        knn_other_episodes(point_demos, 500)
