"""Our instances and `--init official` against the port of the official code (official.py).

Inputs, centres, teachers and noise are bit-identical; the nonlinear targets agree to rounding.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from stch_set.data import OFFICIAL_RUNS, make_problem, official_init
from stch_set.official import OfficialProblem, OfficialSetModel, official_loss, train_official
from stch_set.scalarization import stch_set

SIZES = {"quadratic": (16, 3), "linear": (20, 4), "nonlinear": (20, 4)}


@pytest.mark.parametrize("name", list(SIZES))
@pytest.mark.parametrize("seed", [0, 3])
def test_our_instance_is_the_official_instance(name, seed):
    m, k = SIZES[name]
    ours = make_problem(name, seed, m, k, n_dim=6)
    official = OfficialProblem(name, 6, m, k, seed).data()
    assert torch.equal(ours.a.reshape(m, 6), official["A"])
    if name == "nonlinear":  # the teachers' forward pass rounds differently (matmul order)
        torch.testing.assert_close(ours.b.reshape(m, 1), official["b"], rtol=1e-6, atol=1e-6)
    else:
        assert torch.equal(ours.b.reshape(m, 1), official["b"].reshape(m, 1))
    if name == "linear":
        assert torch.equal(ours.truth[0], official["centres"])
    if name == "nonlinear":  # our layout [W, q, p, o] holds the official (W, p, q, o)
        w, q, p, o = ours.truth
        for mine, theirs in [(w, "W"), (q, "q"), (p, "p"), (o, "o")]:
            assert torch.equal(mine, official[theirs])


@pytest.mark.parametrize("name", list(SIZES))
def test_objective_matrix_matches_the_official_evaluate(name):
    m, k = SIZES[name]
    torch.manual_seed(5)
    sols = list(OfficialSetModel(name, k, 6).parameters())
    ours = make_problem(name, 2, m, k, n_dim=6)
    theirs = OfficialProblem(name, 6, m, k, 2).evaluate(sols[0] if len(sols) == 1 else sols)
    mine = [sols[0]] if len(sols) == 1 else [sols[0], sols[2], sols[1], sols[3]]
    torch.testing.assert_close(ours.evaluate(mine), theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(SIZES))
@pytest.mark.parametrize("seed", [0, 1, 4])
def test_official_init_replays_the_official_rng_stream(name, seed):
    """What the official loop draws for run `seed`: after run seed-1's last evaluate (run 9 for
    run 0), then get_problem, then SetModel, all from the global RNG."""
    m, k = SIZES[name]
    previous = seed - 1 if seed else OFFICIAL_RUNS - 1
    OfficialProblem(name, 6, m, k, previous).evaluate(
        torch.zeros(k, 6)
        if name != "nonlinear"
        else list(OfficialSetModel(name, k, 6).parameters())
    )
    OfficialProblem(name, 6, m, k, seed)
    expected = list(OfficialSetModel(name, k, 6).parameters())
    replayed = official_init(name, seed, m, k, 6)
    if name == "nonlinear":
        expected = [expected[0], expected[2], expected[1], expected[3]]
    assert len(replayed) == len(expected)
    for mine, theirs in zip(replayed, expected):
        assert torch.equal(mine, theirs.detach())


def test_official_init_differs_from_ours_and_rejects_other_problems():
    assert not torch.equal(
        official_init("linear", 1, 20, 4, 6)[0], official_init("linear", 2, 20, 4, 6)[0]
    )
    with pytest.raises(ValueError, match="quadratic, linear and nonlinear only"):
        official_init("deep", 0, 20, 4, 6)


def test_official_stch_set_loss_is_ours():
    values = torch.rand(5, 40, generator=torch.Generator().manual_seed(0)) * 3
    ref = official_loss("stch-set", values, torch.ones(5, 40), 0.1)
    torch.testing.assert_close(stch_set(values, 0.1), ref)


def test_official_port_follows_our_trajectory_from_the_official_init():
    """Same instance, same initial solutions, same optimiser: the two loops differ in cost only."""
    from stch_set.config import PRESETS
    from stch_set.perf import official_hyperparameters
    from stch_set.train import optimize, prepare

    cfg = official_hyperparameters(PRESETS["quick"])
    batch, start, prefs, _, _ = prepare(cfg, "quadratic", (3,), 16, 3, "official")
    cfg = dataclasses.replace(cfg, steps=150)
    final, _ = optimize(batch, "stch-set", cfg, start, prefs)
    worst, done, _ = train_official("quadratic", "stch-set", 3, 150, 16, 3, 10)
    assert done == 150
    assert worst == pytest.approx(float(batch.evaluate(final).amin(-2).amax(-1)), rel=1e-4)
