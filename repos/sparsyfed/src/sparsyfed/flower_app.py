"""Flower 1.42 Message-API adapter: the same `client_round` and FedAvg run on Flower's engines.

The ServerApp uses `flwr.serverapp.strategy.FedAvg`; our subclass only decides which data
partition each connected node trains in a round (the same `sample_clients` draw as the in-process
loop), so the Simulation Engine reproduces the in-process global model for the same seed.
The Config travels inside every train message as JSON, so one module-level ClientApp serves the
Simulation Engine (`run_simulation`) and the Deployment Engine (SuperLink + SuperNodes). On the
Deployment Engine the module-level `server_app` builds its Config from the run config of
`flwr run` (`deploy/pyproject.toml`) and writes the final global model and its accuracy to disk.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from .config import PRESETS, Config, validate
from .federated import (
    State,
    accuracy,
    client_round,
    new_model,
    sample_clients,
    split_of,
    state_of,
)
from .results import atomic_write_bytes, atomic_write_json
from .sparsity import layer_densities

NODE_WAIT_SECONDS = 120.0  # how long a round waits for SuperNodes to connect (Deployment Engine)


def to_record(state: State) -> ArrayRecord:
    return ArrayRecord({k: v.detach().cpu() for k, v in state.items()})


def from_record(record: ArrayRecord) -> State:
    return {k: v.clone() for k, v in record.to_torch_state_dict().items()}


def config_from_json(text: str) -> Config:
    raw = json.loads(text)
    return validate(Config(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}))


client_app = ClientApp()


@client_app.train()
def train(msg: Message, context: Context) -> Message:
    """One client step (Algorithm 1, client side): local SGD from the global omega, then prune."""
    conf = msg.content["config"]
    cfg = config_from_json(str(conf["sparsyfed-config"]))
    torch.set_num_threads(cfg.threads)
    partition = int(conf.get("partition-id", context.node_config.get("partition-id", 0)))
    model = new_model(cfg)
    state = {k: v.to(cfg.device) for k, v in from_record(msg.content["arrays"]).items()}
    new, n = client_round(cfg, model, state, partition, int(conf["server-round"]))
    content = RecordDict({"arrays": to_record(new), "metrics": MetricRecord({"num-examples": n})})
    return Message(content=content, reply_to=msg)


class PartitionedFedAvg(FedAvg):
    """FedAvg whose round-t clients are `sample_clients(cfg, t)`, one per connected node."""

    def __init__(self, cfg: Config):
        super().__init__(fraction_evaluate=0.0, min_available_nodes=cfg.clients_per_round)
        self.cfg = cfg

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        nodes = wait_for_nodes(grid, self.cfg.clients_per_round)
        messages = []
        for node, part in zip(nodes, sample_clients(self.cfg, server_round), strict=False):
            conf = ConfigRecord(
                {
                    "server-round": server_round,
                    "partition-id": part,
                    "sparsyfed-config": json.dumps(dataclasses.asdict(self.cfg)),
                }
            )
            content = RecordDict({"arrays": arrays, "config": conf})
            messages.append(Message(content=content, message_type="train", dst_node_id=node))
        return messages


def wait_for_nodes(grid: Grid, needed: int, timeout: float = NODE_WAIT_SECONDS) -> list[int]:
    """Sorted ids of the connected nodes once at least `needed` are there (SuperNodes connect
    asynchronously on the Deployment Engine; in simulation they are all there from the start)."""
    deadline = time.monotonic() + timeout
    while len(nodes := sorted(grid.get_node_ids())) < needed:
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{len(nodes)} nodes connected after {timeout:g} s, need clients_per_round={needed}"
            )
        time.sleep(0.5)
    return nodes


def serve(cfg: Config, grid: Grid) -> tuple[State, float]:
    """cfg.rounds of PartitionedFedAvg from the seed's initial model; final state and seconds."""
    initial = to_record(state_of(new_model(cfg)))
    tic = time.perf_counter()
    result = PartitionedFedAvg(cfg).start(grid=grid, initial_arrays=initial, num_rounds=cfg.rounds)
    return from_record(result.arrays), time.perf_counter() - tic


def make_server_app(cfg: Config, out: dict) -> ServerApp:
    """A ServerApp running cfg.rounds of PartitionedFedAvg; the final state lands in out."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        out["state"], out["seconds"] = serve(cfg, grid)

    return app


def config_from_run_config(run_config: Mapping[str, object]) -> Config:
    """The Config of a `flwr run`: the preset named by `preset`, overridden by the other keys
    (`n-clients` sets n_clients, ...); `out-dir` is where the result goes, not a Config field."""
    values = {k.replace("-", "_"): v for k, v in run_config.items() if k != "out-dir"}
    preset = str(values.pop("preset", "quick"))
    if preset not in PRESETS:
        raise ValueError(f"run config preset must be one of {sorted(PRESETS)}, got {preset!r}")
    unknown = sorted(set(values) - {f.name for f in dataclasses.fields(Config)})
    if unknown:
        raise ValueError(f"unknown run config keys {unknown}; expected Config fields")
    return validate(dataclasses.replace(PRESETS[preset], **values))


def save_deployment_result(cfg: Config, state: State, seconds: float, out_dir: Path) -> None:
    """global_model.npz (the final aggregate) and result.json (its accuracy, per-layer density)."""
    arrays = {k: v.detach().cpu().numpy() for k, v in state.items()}
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write_bytes(out_dir / "global_model.npz", buf.getvalue())
    model = new_model(cfg)
    _, (xte, yte), _ = split_of(cfg)
    summary = {
        "config": dataclasses.asdict(cfg),
        "accuracy": accuracy(model, state, xte, yte),
        "layer_density": layer_densities(model),
        "seconds": seconds,
    }
    atomic_write_json(out_dir / "result.json", summary)


server_app = ServerApp()


@server_app.main()
def deployment_main(grid: Grid, context: Context) -> None:
    """ServerApp for `flwr run` on the Deployment Engine (SuperLink + SuperNodes)."""
    cfg = config_from_run_config(context.run_config)
    torch.set_num_threads(cfg.threads)
    state, seconds = serve(cfg, grid)
    out_dir = Path(str(context.run_config.get("out-dir") or cfg.out))
    save_deployment_result(cfg, state, seconds, out_dir)


def backend_config(cfg: Config) -> dict:
    """Ray resources of the Simulation Engine from the config: per client cfg.flower_client_cpus
    cores and, on a CUDA device, cfg.flower_client_gpus of a GPU (the full preset: 1 core and 0.1
    GPU, so a round's 10 clients share one GPU); Ray itself gets cfg.flower_ray_cpus cores. On
    CPU the GPU share is 0 whatever the config says (Ray would wait forever for a GPU)."""
    gpus = cfg.flower_client_gpus if str(cfg.device).startswith("cuda") else 0.0
    return {
        "client_resources": {"num_cpus": cfg.flower_client_cpus, "num_gpus": gpus},
        "init_args": {"num_cpus": cfg.flower_ray_cpus, "include_dashboard": False},
    }


def run_flower_simulation(cfg: Config) -> tuple[State, float]:
    """cfg.rounds on Flower's Simulation Engine (Ray); returns the global state and wall time."""
    from flwr.simulation import run_simulation

    os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
    out: dict = {}
    run_simulation(
        server_app=make_server_app(cfg, out),
        client_app=client_app,
        num_supernodes=cfg.clients_per_round,
        backend_config=backend_config(cfg),
    )
    if "state" not in out:
        raise RuntimeError("the Flower simulation finished without a global model")
    return out["state"], out["seconds"]


def flower_train(cfg: Config) -> dict[str, float]:
    """The `flower` command: cfg.rounds of cfg.method on the Simulation Engine with the preset's
    client resources; config.json, the global model and metrics.json go to cfg.out, in the
    layout of `train`, so `eval --out` reloads and tests it."""
    from safetensors.torch import save as safetensors_bytes

    from .train import MODEL, evaluate

    validate(cfg)
    torch.set_num_threads(cfg.threads)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "config.json", dataclasses.asdict(cfg))
    state, seconds = run_flower_simulation(cfg)
    tensors = {k: v.detach().cpu().contiguous() for k, v in state.items()}
    atomic_write_bytes(out / MODEL, safetensors_bytes(tensors))
    metrics = {**evaluate(cfg, out), "flower_seconds": seconds}
    atomic_write_json(out / "metrics.json", metrics)
    return metrics
