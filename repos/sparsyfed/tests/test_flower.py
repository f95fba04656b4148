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


def test_full_preset_client_resources_are_config_for_a_gpu_machine():
    """The full preset shares one GPU among a round's 10 clients (0.1 each, 1 core each, 10 cores
    for Ray); on CPU the GPU share is dropped, as Ray would otherwise wait for a GPU."""
    from sparsyfed.flower_app import backend_config

    full = PRESETS["full"]
    gpu = backend_config(dataclasses.replace(full, device="cuda"))
    assert gpu["client_resources"] == {"num_cpus": 1.0, "num_gpus": 0.1}
    assert gpu["init_args"]["num_cpus"] == 10
    per_gpu = 1 / gpu["client_resources"]["num_gpus"]
    assert per_gpu == pytest.approx(full.clients_per_round)  # the whole round on one GPU
    cpu = backend_config(dataclasses.replace(full, device="cpu"))
    assert cpu["client_resources"]["num_gpus"] == 0.0
    quick = backend_config(PRESETS["quick"])
    assert quick["client_resources"] == {"num_cpus": 1.0, "num_gpus": 0.0}
    assert quick["init_args"]["num_cpus"] == 1
    custom = dataclasses.replace(full, device="cuda:0", flower_client_gpus=0.25)
    assert backend_config(custom)["client_resources"]["num_gpus"] == 0.25


@pytest.mark.parametrize(("field", "value"), [("flower_client_gpus", 1.5), ("flower_ray_cpus", 0)])
def test_bad_client_resources_are_a_clear_error(field, value):
    from sparsyfed.config import validate

    with pytest.raises(ValueError, match=field):
        validate(dataclasses.replace(PRESETS["full"], **{field: value}))


@pytest.mark.slow
@pytest.mark.timeout(420, method="thread")
def test_flower_command_runs_the_full_preset_at_tiny_size_and_eval_reads_it(tmp_path):
    """`sparsyfed flower --preset full` (ResNet-18 at width 4, CIFAR-10 batches the test writes,
    2 clients, 1 round, the preset's client resources with the GPU share dropped on CPU) in a
    child process group killed at 300 s; `eval --out` then reloads the model it saved."""
    import json
    import os
    import signal
    import subprocess
    import sys

    from sparsyfed.train import evaluate

    from .test_data import write_tiny_cifar

    write_tiny_cifar(tmp_path / "cifar", n=8)
    argv = [sys.executable, "-m", "sparsyfed.cli", "flower", "--preset", "full", "--device", "cpu"]
    argv += ["--data-dir", str(tmp_path / "cifar"), "--resnet-width", "4", "--n-clients", "2"]
    argv += ["--clients-per-round", "2", "--rounds", "1", "--flower-ray-cpus", "2", "--quiet"]
    argv += ["--out", str(tmp_path / "run")]
    env = {**os.environ, "FLWR_TELEMETRY_ENABLED": "0", "RAY_USAGE_STATS_ENABLED": "0"}
    proc = subprocess.Popen(argv, env=env, start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, out[-2000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["arch"] == "resnet18" and saved["flower_client_gpus"] == 0.1
    again = evaluate(dataclasses.replace(PRESETS["full"], device="cpu"), tmp_path / "run")
    assert again["accuracy"] == metrics["accuracy"] and metrics["final_density"] <= 0.2
