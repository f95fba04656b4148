"""STCH-Set and TCH-Set against closed forms, bounds, invariances and a library logsumexp."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from scipy.special import logsumexp as scipy_logsumexp

from stch_set import baselines
from stch_set.scalarization import (
    average_case,
    logsumexp,
    stch_set,
    sum_of_minimum,
    tch_set,
    worst_case,
)


def random_values(k: int, m: int, seed: int) -> torch.Tensor:
    return torch.rand(k, m, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 3


@pytest.mark.parametrize(("k", "m", "mu"), [(1, 7, 0.1), (3, 20, 0.05), (5, 128, 0.3), (8, 9, 1.0)])
def test_smoothing_bounds(k, m, mu):
    values = random_values(k, m, seed=k * m)
    tch, stch = float(tch_set(values)), float(stch_set(values, mu))
    assert tch - mu * math.log(k) - 1e-12 <= stch <= tch + mu * math.log(m) + 1e-12


def test_matches_scipy_logsumexp_with_preference_and_ideal():
    values = random_values(4, 30, seed=1)
    pref = torch.rand(30, dtype=torch.float64) + 0.1
    ideal = torch.rand(30, dtype=torch.float64) * 0.1
    mu, f = 0.2, values.numpy() - ideal.numpy()
    inner = -mu * scipy_logsumexp(-f / mu, axis=0)
    expected = mu * scipy_logsumexp(pref.numpy() * inner / mu)
    assert float(stch_set(values, mu, pref, ideal)) == pytest.approx(expected, rel=1e-12)


def test_small_mu_gives_tch_set():
    values = random_values(5, 40, seed=2)
    assert float(stch_set(values, 1e-5)) == pytest.approx(float(tch_set(values)), abs=1e-4)
    assert float(tch_set(values)) == float(worst_case(values))


def test_single_solution_is_single_stch():
    values = random_values(1, 25, seed=3)
    pref = torch.rand(25, dtype=torch.float64)
    single = baselines.stch_preference(values, pref[None], mu=0.1)
    assert float(stch_set(values, 0.1, pref)) == pytest.approx(float(single), rel=1e-12)


def test_permutation_invariance_over_solutions():
    values = random_values(6, 50, seed=4)
    perm = torch.randperm(6, generator=torch.Generator().manual_seed(0))
    for fn in (lambda v: stch_set(v, 0.1), tch_set, sum_of_minimum):
        assert float(fn(values[perm])) == pytest.approx(float(fn(values)), rel=1e-12)


def test_every_solution_gets_gradient_only_under_stch_set():
    values = random_values(5, 64, seed=5)
    values[4] += 10.0  # solution 4 is the minimiser of no objective
    grads = {}
    for name, fn in {
        "stch": lambda v: stch_set(v, 0.5),
        "tch": tch_set,
        "som": sum_of_minimum,
    }.items():
        v = values.clone().requires_grad_()
        fn(v).backward()
        grads[name] = v.grad.abs().sum(dim=1)
    assert (grads["stch"] > 0).all()
    assert grads["tch"][4] == 0 and grads["som"][4] == 0
    assert (grads["tch"] > 0).sum() == 1  # the subgradient touches one solution


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mu": 0.0}, "mu must be a finite number > 0"),
        ({"mu": -1.0}, "mu must be a finite number > 0"),
        ({"mu": 0.1, "pref": -torch.ones(10)}, "preference weights must be >= 0"),
        ({"mu": 0.1, "pref": torch.ones(9)}, "one weight per objective (m=10)"),
        ({"mu": 0.1, "ideal": torch.zeros(3)}, "ideal point must have length m=10"),
    ],
)
def test_bad_arguments_raise_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        stch_set(random_values(3, 10, seed=0), **kwargs)


def test_bad_objective_matrices_raise_clear_errors():
    with pytest.raises(ValueError, match="need K <= m"):
        stch_set(random_values(11, 10, seed=0), 0.1)
    for shape in [(5,), (0, 5), (3, 0), (2, 3, 0)]:  # not K x m with K, m >= 1 (also batched)
        for fn in (lambda v: stch_set(v, 0.1), tch_set):
            with pytest.raises(ValueError, match="must be a K x m matrix with K, m >= 1"):
                fn(torch.zeros(shape))
    nan = random_values(3, 10, seed=0)
    nan[1, 2] = float("nan")
    for fn in (lambda v: stch_set(v, 0.1), tch_set, sum_of_minimum):
        with pytest.raises(ValueError, match="objectives returned NaN"):
            fn(nan)
    with pytest.raises(ValueError, match="preferences must be K x m"):
        baselines.tch_preference(random_values(3, 10, 0), torch.ones(2, 10))


def test_greedy_select_is_monotone_and_distinct():
    values = random_values(30, 12, seed=6)
    assert baselines.greedy_select(values, 1) == [int(values.amax(dim=1).argmin())]
    worst = [float(worst_case(values[baselines.greedy_select(values, k)])) for k in range(1, 8)]
    assert all(b <= a for a, b in itertools.pairwise(worst))
    assert len(set(baselines.greedy_select(values, 7))) == 7


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("scale", [1.0, 100.0, 1e4])
def test_clamped_logsumexp_matches_torch_in_value_and_gradient(dtype, scale):
    """Far-below-maximum terms (exp underflows) are clamped; nothing measurable changes."""
    x = (torch.randn(7, 300, generator=torch.Generator().manual_seed(0)) * scale).to(dtype)
    for dim in (0, 1, -1):
        a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
        ours, ref = logsumexp(a, dim), torch.logsumexp(b, dim)
        torch.testing.assert_close(ours, ref)
        weights = torch.rand(ours.shape, generator=torch.Generator().manual_seed(1)).to(dtype)
        (ours * weights).sum().backward()
        (ref * weights).sum().backward()
        tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == torch.float32 else {}  # x ~ 1e4: ulp 1e-3
        torch.testing.assert_close(a.grad, b.grad, **tol)
    empty = torch.full((3, 4), -torch.inf, dtype=dtype)
    assert torch.equal(logsumexp(empty, 0), torch.logsumexp(empty, 0))


def test_batched_matrices_give_the_per_matrix_values():
    """A (S, K, m) batch (one matrix per seed) gives each seed's value, also for the baselines."""
    batch = torch.stack([random_values(4, 30, seed=s) for s in range(3)])
    prefs = torch.rand(3, 4, 30, dtype=torch.float64)
    fns = {
        "stch": lambda v, p: stch_set(v, 0.2),
        "tch": lambda v, p: tch_set(v),
        "som": lambda v, p: sum_of_minimum(v),
        "worst": lambda v, p: worst_case(v),
        "average": lambda v, p: average_case(v),
        "stch-pref": lambda v, p: baselines.stch_preference(v, p, 0.1),
        "tch-pref": baselines.tch_preference,
        "ls": baselines.linear_preference,
    }
    for name, fn in fns.items():
        together = fn(batch, prefs)
        assert together.shape == (3,), name
        for s in range(3):
            assert float(together[s]) == pytest.approx(float(fn(batch[s], prefs[s])), rel=1e-12)


def test_tch_set_uses_its_preference_and_ideal_point():
    """TCH-Set with a preference and an ideal point against a Python loop (found by mutmut: a
    TCH-Set that ignored lambda or z*, or added z*, passed every other test)."""
    values = random_values(3, 6, seed=4)
    pref = torch.tensor([0.5, 2.0, 1.0, 0.1, 3.0, 1.5], dtype=torch.float64)
    ideal = torch.tensor([0.3, -0.2, 0.1, 0.0, 0.4, -0.5], dtype=torch.float64)
    loop = max(
        float(pref[i]) * (min(float(values[k, i]) for k in range(3)) - float(ideal[i]))
        for i in range(6)
    )
    assert float(tch_set(values, pref, ideal)) == pytest.approx(loop, rel=1e-12)
    assert float(tch_set(values, pref, ideal)) != pytest.approx(float(tch_set(values)))


def test_boundary_inputs_are_valid_and_match_closed_forms():
    """K = m, m = 1 and a zero preference weight are valid (K <= m, lambda >= 0), and lambda and
    z* take the objectives' dtype. Found by mutmut 3.8.1: rejecting K = m, m = 1 or a zero weight,
    or not casting lambda / z*, passed every other test."""
    # K = m = 1: both log-sum-exps run over one term, so STCH-Set = TCH-Set = lambda (f - z*)
    one = torch.tensor([[2.5]], dtype=torch.float64)
    pref, ideal = torch.tensor([3.0], dtype=torch.float64), torch.tensor([0.5], dtype=torch.float64)
    for mu in (0.01, 1.0):
        assert float(stch_set(one, mu, pref, ideal)) == pytest.approx(6.0, rel=1e-12)
    assert float(tch_set(one, pref, ideal)) == pytest.approx(6.0, rel=1e-12)
    # K = m = 3, solution k best (0) on objective k and 5 elsewhere: TCH-Set = 0, and
    # STCH-Set = mu log 3 - mu log(1 + 2 exp(-5 / mu)) (inner soft-min equal for every i)
    square = 5.0 * (1 - torch.eye(3, dtype=torch.float64))
    assert float(tch_set(square)) == 0.0
    for mu in (0.5, 1.0, 2.0):
        expected = mu * math.log(3) - mu * math.log(1 + 2 * math.exp(-5 / mu))
        assert float(stch_set(square, mu)) == pytest.approx(expected, rel=1e-12)
    # a zero weight drops its objective: TCH-Set max(1 * 1, 0 * 9) = 1 whatever the 9 is, and
    # STCH-Set = mu log(exp(1 / mu) + exp(0))
    values = torch.tensor([[1.0, 9.0]], dtype=torch.float64)
    zero = torch.tensor([1.0, 0.0], dtype=torch.float64)
    assert float(tch_set(values, zero)) == 1.0
    assert float(stch_set(values, 0.5, zero)) == pytest.approx(0.5 * math.log(math.exp(2) + 1))
    # float64 lambda and z* with float32 objectives: the value stays float32 (as training uses)
    values32 = random_values(3, 6, seed=5).float()
    pref64, ideal64 = torch.rand(6, dtype=torch.float64) + 0.5, torch.rand(6, dtype=torch.float64)
    for fn in (lambda *a: stch_set(values32, 0.1, *a), lambda *a: tch_set(values32, *a)):
        assert fn(pref64, None).dtype == torch.float32
        assert fn(None, ideal64).dtype == torch.float32
