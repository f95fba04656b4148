"""Flower adapter: Flower's FedAvg arithmetic equals ours; the simulation equals the loop."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch
from flwr.app import MetricRecord, RecordDict
from flwr.serverapp.strategy.strategy_utils import aggregate_arrayrecords

from sparsyfed.config import PRESETS
from sparsyfed.federated import client_round, fedavg, new_model, state_of
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
@pytest.mark.timeout(420, method="thread")  # backstop: the child below is killed at 300 s
def test_simulation_engine_gives_the_in_process_global_model(tiny):
    """run_simulation (Ray), 2 supernodes, 2 rounds == the in-process loop, same seed; run as the
    bench's time-limited child process group, so a slow Ray start-up fails, never hangs."""
    from sparsyfed.bench import flower_timing

    cfg = dataclasses.replace(tiny, method="sparsyfed", flower_rounds=2, flower_timeout_s=300)
    rows, skipped = flower_timing(cfg)
    assert not skipped, skipped
    assert rows[0]["max_abs_diff"] <= 1e-6


def test_run_config_maps_onto_the_preset():
    from sparsyfed.flower_app import config_from_run_config

    cfg = config_from_run_config({"preset": "quick", "n-clients": 6, "out-dir": "/tmp/x"})
    assert cfg.n_clients == 6 and cfg.rounds == PRESETS["quick"].rounds


@pytest.mark.parametrize(
    ("run_config", "message"),
    [
        ({"preset": "huge"}, "preset must be one of"),
        ({"n-clientz": 3}, "unknown run config keys ['n_clientz']"),
        ({"sparsity": 1.0}, "sparsity must lie in [0, 1)"),
    ],
)
def test_run_config_rejects_bad_values(run_config, message):
    from sparsyfed.flower_app import config_from_run_config

    with pytest.raises(ValueError, match=re.escape(message)):
        config_from_run_config(run_config)
