"""Problems: vectorised evaluation against the naive loop, determinism, a clustered toy problem."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from stch_set.config import PRESETS
from stch_set.data import load_csv_problem, load_entry_problem, make_problem, stack
from stch_set.scalarization import worst_case
from stch_set.train import optimize


@pytest.mark.parametrize("name", ["quadratic", "linear", "nonlinear", "deep"])
def test_vectorised_evaluation_equals_naive_loop(name):
    problem = make_problem(name, seed=0, m=9, k=3, n_dim=4)
    params = problem.init_solutions(3, torch.Generator().manual_seed(1))
    fast, slow = problem.evaluate(params), problem.evaluate_naive(params)
    assert fast.shape == (3, 9)
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["quadratic", "linear", "nonlinear", "deep"])
def test_stacked_seeds_evaluate_as_each_seed_alone(name):
    problems = [make_problem(name, seed=s, m=9, k=3, n_dim=4) for s in range(3)]
    params = [problems[0].init_solutions(3, torch.Generator().manual_seed(s)) for s in range(3)]
    together = stack(problems).evaluate([torch.stack(ps) for ps in zip(*params)])
    assert together.shape == (3, 3, 9)
    for s in range(3):
        torch.testing.assert_close(together[s], problems[s].evaluate(params[s]))


def test_ground_truth_centres_fit_the_linear_data_up_to_noise():
    problem = make_problem("linear", 0)
    residual = problem.evaluate(problem.truth).amin(dim=0)
    assert float(residual.mean()) == pytest.approx(0.1**2, rel=0.2)  # sigma = 0.1


def test_problem_data_is_deterministic_in_seed():
    a, b = make_problem("nonlinear", 3, 20, 4), make_problem("nonlinear", 3, 20, 4)
    assert torch.equal(a.a, b.a) and torch.equal(a.b, b.b)
    assert not torch.equal(a.b, make_problem("nonlinear", 4, 20, 4).b)


class PointClusters:
    """f_i(x) = ||x - c_i||^2 with c_i one of 4 corners of a square, 10 identical copies each."""

    def __init__(self) -> None:
        corners = torch.tensor([[2.0, 2.0], [2.0, -2.0], [-2.0, 2.0], [-2.0, -2.0]])
        self.a = corners[torch.arange(40) % 4]
        self.m = 40

    def evaluate(self, params: list[torch.Tensor]) -> torch.Tensor:
        return ((params[0][..., :, None, :] - self.a) ** 2).sum(-1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_clustered_toy_problem_puts_one_solution_per_cluster(seed):
    """One solution cannot serve two corners, so worst ~ 0 needs one solution per cluster
    (mu = 1 matches the objectives' scale; see Deviations on mu and scale)."""
    problem = PointClusters()
    cfg = dataclasses.replace(
        PRESETS["quick"], steps=600, optimizer="adam", lr=0.05, mu=1.0, quiet=True
    )
    start = [torch.randn(1, 4, 2, generator=torch.Generator().manual_seed(seed))]
    sols, _ = optimize(problem, "stch-set", cfg, start, torch.ones(1, 4, 40))
    values = problem.evaluate(sols)[0]
    assert worst_case(values) < 1e-3
    assert sorted(values.argmin(dim=0)[:4].tolist()) == [0, 1, 2, 3]


def test_csv_problem_round_trip(tmp_path):
    path = tmp_path / "objectives.csv"
    path.write_text("a1,a2,b\n1,0,1\n0,1,-1\n1,1,0\n")
    problem = load_csv_problem(path)
    x = torch.tensor([[1.0, -1.0], [0.0, 0.0]])
    expected = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    torch.testing.assert_close(problem.evaluate([x]), expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1,2,3\n", "needs >= 2 rows"),
        ("1,2\n3\n", "data row 2 has 1 columns, expected 2"),
        ("1,2\n3,x\n", "non-finite or non-numeric value 'x'"),
        ("1,2\n3,nan\n", "non-finite or non-numeric value 'nan'"),
    ],
)
def test_bad_csv_problem_names_the_file_and_row(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_csv_problem(path)
    with pytest.raises(ValueError, match="does not exist"):
        load_csv_problem(tmp_path / "missing.csv")


def test_entry_point_problem(tmp_path, monkeypatch):
    (tmp_path / "my_objectives.py").write_text(
        "import torch\n"
        "def f(x):\n    return (x[:, :1] - torch.arange(7.0)) ** 2\n"
        "def bad(x):\n    return x.sum()\n"
        "def boom(x):\n    raise RuntimeError('no')\n"
        "value = 3\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    problem = load_entry_problem("my_objectives:f", n_dim=2)
    assert problem.m == 7
    batch = torch.zeros(2, 3, 2)
    assert problem.evaluate([batch]).shape == (2, 3, 7)
    for entry, message in [
        ("my_objectives", "module:function"),
        ("no_such_module:f", "cannot be imported"),
        ("my_objectives:value", "not callable"),
        ("my_objectives:bad", "must map a"),
        ("my_objectives:boom", "failed: RuntimeError: no"),
    ]:
        with pytest.raises(ValueError, match=message):
            load_entry_problem(entry, n_dim=2)
