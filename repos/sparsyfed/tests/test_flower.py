"""Flower adapter: Flower's FedAvg arithmetic equals ours; the simulation equals the loop."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from flwr.app import MetricRecord, RecordDict
from flwr.serverapp.strategy.strategy_utils import aggregate_arrayrecords

from sparsyfed.federated import client_round, fedavg, new_model, run_federated, state_of
from sparsyfed.flower_app import config_from_json, from_record, to_record


def test_flower_fedavg_equals_ours(tiny):
    cfg = dataclasses.replace(tiny, method="sparsyfed")
    model = new_model(cfg)
    start = state_of(model)
    replies = [client_round(cfg, model, start, c, 1) for c in range(3)]
    records = [
        RecordDict({"arrays": to_record(s), "metrics": MetricRecord({"num-examples": n})})
        for s, n in replies
    ]
    theirs = from_record(aggregate_arrayrecords(records, "num-examples"))
    ours = fedavg([s for s, _ in replies], [n for _, n in replies])
    for key, value in ours.items():
        assert torch.allclose(theirs[key], value, atol=1e-7), key
        assert torch.equal(theirs[key] != 0, value != 0)


def test_config_travels_as_json(tiny):
    import json

    assert config_from_json(json.dumps(dataclasses.asdict(tiny))) == tiny


@pytest.mark.slow
def test_simulation_engine_gives_the_in_process_global_model(tiny, tmp_path, monkeypatch):
    """run_simulation (Ray), 2 supernodes, 2 rounds == the in-process loop, same seed."""
    from sparsyfed.flower_app import run_flower_simulation

    monkeypatch.setenv("FLWR_HOME", str(tmp_path / "flwr"))
    cfg = dataclasses.replace(tiny, method="sparsyfed")
    flwr_state, _ = run_flower_simulation(cfg)
    loop_state, _, _ = run_federated(cfg)
    for key, value in loop_state.items():
        assert torch.allclose(flwr_state[key], value, atol=1e-6), key
