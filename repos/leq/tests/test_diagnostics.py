"""Issue 29: blocked moves in the data, the diagnostics, the official expansion and the paired
claims with their negative control."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from leq import agents, data, maze, train
from leq.bench import floor_parts, gap_parts, maze_claims
from leq.config import PRESETS, validate
from leq.results import gate as read_under_preconditions
from leq.results import verdict


def test_blocked_flags_a_move_into_a_wall_and_not_a_free_one():
    m = maze.make_maze("umaze")
    start = jnp.array([*m.start, 0.0, 0.0])  # cell (1, 1): wall to the west, free to the east
    obs = jnp.stack([start, start])
    act = jnp.array([[-1.0, 0.0], [1.0, 0.0]])
    for _ in range(5):  # accelerate until the westward move crosses into the wall cell
        hit = np.asarray(maze.blocked(m.walls, obs, act))
        if hit[0]:
            break
        obs = jax.vmap(lambda o, a: maze.move(jnp.asarray(m.walls), o, a)[0])(obs, act)
    assert hit[0] == 1.0 and hit[1] == 0.0
    nxt, flags = maze.move(jnp.asarray(m.walls), obs[0], act[0])
    assert float(nxt[2]) == 0.0 and bool(flags[0])  # stopped against the wall


def test_controller_alone_never_blocks_and_random_segments_do():
    """The issue's finding (0 blocked transitions) and its fix, at a small size."""
    plain = data.maze_dataset("umaze", "diverse", 2000, 50, seed=0)
    mixed = data.maze_dataset("umaze", "diverse", 2000, 50, seed=0, explore=(0.05, 10))
    assert data.blocked_fraction(plain, "umaze") == 0.0
    assert data.blocked_fraction(mixed, "umaze") > 0.03
    assert mixed.terminals.sum() > 0  # the data still reaches the goal
    with pytest.raises(ValueError, match="explore must be"):
        data.maze_dataset("umaze", "diverse", 400, 50, seed=0, explore=(1.5, 10))


def test_bad_explore_flags_are_clear_errors(tiny):
    with pytest.raises(ValueError, match="explore_prob"):
        validate(dataclasses.replace(tiny, explore_prob=-0.1))


def test_expansion_buffer_holds_the_rollout_start_states(tiny):
    """As the official `_rollout`: the buffer stores the states each step starts from, so its
    first block is the sampled dataset states themselves."""
    ds = train.load_data(tiny)
    wm = train.fit_world_model(tiny, ds)
    hp = train.make_hp(tiny, "LEQ", 4, 2)
    actor_p, _, _ = train.init_params(tiny, ds, jax.random.PRNGKey(0))
    states = agents.expansion_fn(hp, 8, 3, 1.0)(
        actor_p, wm, train.as_arrays(tiny, ds), jax.random.PRNGKey(1)
    )
    assert states.shape == (24, 4)
    first = np.asarray(states[:8])
    assert all(np.isclose(ds.observations, row, atol=0).all(1).any() for row in first)
    assert not np.allclose(np.asarray(states[8:16]), first)  # later steps moved on


def test_critic_normalises_state_and_action_jointly(tiny):
    ds = train.load_data(tiny)
    _, critic_p, value_p = train.init_params(tiny, ds, jax.random.PRNGKey(0))
    assert critic_p["params"]["obs_mean"].shape == (6,)  # [x, y, vx, vy, ax, ay]
    np.testing.assert_allclose(critic_p["params"]["obs_mean"][4:], ds.actions.mean(0), rtol=1e-5)
    assert value_p["params"]["obs_mean"].shape == (4,)


def gate(a, b, kind):
    return verdict(gap_parts(a, b, kind, "LEQ", "other"))


def test_gates_fail_on_noise_and_on_the_negative_control():
    assert gate([90.0, 95.0, 92.0], [0.0, 0.0, 4.0], "beats") == "holds"
    assert gate([100.0, 0.0, 0.0], [0.0, 0.0, 0.0], "beats") == "inconclusive"  # one lucky seed
    assert gate([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], "beats") == "contradicted"  # no gap at all
    assert gate([25.0, 18.0, 26.0], [0.0, 0.0, 4.0], "beats") == "inconclusive"  # margin 20
    assert gate([90.0, 88.0, 94.0], [92.0, 90.0, 90.0], "not-worse") == "holds"
    assert gate([0.0, 2.0, 0.0], [92.0, 90.0, 90.0], "not-worse") == "contradicted"
    assert gate([90.0, 95.0], [0.0, 0.0], "beats") == "inconclusive"  # 2 seeds never hold
    assert gate([90.0], [0.0], "beats") == "inconclusive"  # one seed: no interval


def test_floor_parts_subtract_the_floor_of_the_same_seed():
    floor = [60.0, 70.0, 65.0]
    parts = floor_parts({"LEQ": [90.0, 88.0, 94.0], "IQL": [92.0, 90.0, 60.0]}, floor)
    assert [p["what"].split(" success")[0] for p in parts] == ["LEQ - BC floor", "IQL - BC floor"]
    assert parts[0]["estimate"] == pytest.approx(77 / 3) and parts[1]["estimate"] == pytest.approx(
        47 / 3
    )
    assert [p["n"] for p in parts] == [3, 3] and all(p["threshold"] == 0.0 for p in parts)
    assert verdict(parts[:1]) == "holds" and verdict(parts[1:]) == "inconclusive"  # 32, 20, -5


def claims_of(leq, iql, floor):
    """The umaze claims of the paper preset's seeds from per-seed success rates, read under
    their preconditions as the results file reads them: id -> claim."""
    cfg = dataclasses.replace(PRESETS["paper"], seeds=tuple(range(len(leq))))
    runs = {("pm-umaze", "LEQ", s): {"bc_success_rate": f} for s, f in enumerate(floor)}
    vals = {"LEQ": leq, "IQL": iql, "MB-onestep": [0.0] * len(leq)}
    return {c["id"]: c for c in read_under_preconditions(maze_claims(cfg, runs, vals, "pm-umaze"))}


def test_non_inferiority_is_read_only_where_every_method_clears_the_bc_floor():
    """Both failing together (0 vs 0, or below the BC floor) is not non-inferiority: the margin
    claim carries the BC-floor claim as its precondition and is inconclusive unless that holds."""
    pre = "leq-at-least-iql-minus-10-precondition-clear-bc-floor"
    both_fail = claims_of([0.0] * 4, [0.0] * 4, [0.0] * 4)
    c = both_fail["leq-at-least-iql-minus-10"]
    assert c["precondition"] == pre and both_fail[pre]["verdict"] == "inconclusive"  # at it
    assert c["verdict_of_numbers"] == "holds"  # the bare margin is fooled (0 vs 0) ...
    assert c["verdict"] == "inconclusive" and "not_read" in c  # ... but it is not read
    assert "seeds_needed" not in c
    below = claims_of([10.0, 5.0, 0.0], [8.0, 6.0, 0.0], [60.0, 70.0, 65.0])
    assert below[pre]["verdict"] == "contradicted"
    assert below["leq-at-least-iql-minus-10"]["verdict"] == "inconclusive"
    trained = claims_of([90.0, 88.0, 94.0], [92.0, 90.0, 90.0], [60.0, 70.0, 65.0])
    assert (
        trained[pre]["verdict"] == "holds"
        and "not_read" not in trained["leq-at-least-iql-minus-10"]
    )
    assert trained["leq-at-least-iql-minus-10"]["verdict"] == "holds"
    worse = claims_of([60.0, 65.0, 62.0], [92.0, 90.0, 90.0], [20.0, 30.0, 25.0])
    assert worse["leq-at-least-iql-minus-10"]["verdict"] == "contradicted"  # read: clears floor
    # one method below the floor is enough to leave the claim unread
    iql_low = claims_of([90.0, 88.0, 94.0], [50.0, 60.0, 55.0], [60.0, 70.0, 65.0])
    assert iql_low[pre]["verdict"] == "contradicted"
    assert iql_low["leq-at-least-iql-minus-10"]["verdict"] == "inconclusive"


def test_claims_record_each_methods_update_budget():
    cfg = dataclasses.replace(PRESETS["paper"], seeds=(0, 1, 2), steps=12_000, iql_steps=60_000)
    runs = {("pm-umaze", "LEQ", s): {"bc_success_rate": 0.0} for s in cfg.seeds}
    vals = {m: [0.0] * 3 for m in ("LEQ", "IQL", "MB-onestep")}
    for c in maze_claims(cfg, runs, vals, "pm-umaze"):
        if "IQL" in c.get("updates", {}):
            assert c["updates"]["IQL"] == 60_000 and c["updates"]["LEQ"] == 12_000
    assert train.iql_steps(dataclasses.replace(cfg, iql_steps=0)) == 12_000
    assert train.iql_hp(cfg, 2).steps == 60_000


def test_oracle_imagines_with_the_true_maze_step(tiny):
    hp = train.make_hp(tiny, "LEQ-oracle", 4, 2)
    step = agents.dynamics_fn(hp, None)
    m = maze.make_maze("umaze")
    s, a = jnp.array([*m.start, 0.1, 0.0]), jnp.array([1.0, -0.5])
    ref = maze.step(jnp.asarray(m.walls), jnp.asarray(m.goal), s, a)
    for got, want in zip(step(s, a, jax.random.PRNGKey(0)), ref):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="needs a maze env"):
        agents.dynamics_fn(hp._replace(env="pendulum"), None)


def test_contact_weight_repeats_the_blocked_transitions_in_the_model_fit(tiny, monkeypatch):
    ds = train.load_data(tiny)
    flags = train.wall_rows(tiny.env, ds)
    assert flags.mean() == pytest.approx(data.blocked_fraction(ds, tiny.env)) and flags.any()
    seen = {}
    monkeypatch.setattr(train.wmod, "fit", lambda *a, **k: seen.setdefault("repeat", k["repeat"]))
    train.fit_world_model(dataclasses.replace(tiny, model_contact_weight=5, seed=123), ds)
    np.testing.assert_array_equal(seen["repeat"], np.where(flags, 5, 1))


def test_iql_trains_for_its_own_budget(tiny, monkeypatch):
    """--iql-steps sets IQL's updates (the paper preset trains IQL where it is trained); 0 keeps
    the shared --steps."""
    seen = []
    chunk = train.baselines.iql_chunk
    monkeypatch.setattr(train.baselines, "iql_chunk", lambda hp, n: seen.append(n) or chunk(hp, n))
    ds = train.load_data(tiny)
    for iql_steps, want in ((0, tiny.steps), (3 * tiny.steps, 3 * tiny.steps)):
        seen.clear()
        train.train_iql(dataclasses.replace(tiny, iql_steps=iql_steps), ds, jax.random.PRNGKey(0))
        assert sum(seen) == want
