"""Flower 1.42 Message-API adapter: the same `client_round` and FedAvg run on Flower's engines.

The ServerApp uses `flwr.serverapp.strategy.FedAvg`; our subclass only decides which data
partition each connected node trains in a round (the same `sample_clients` draw as the in-process
loop), so the Simulation Engine reproduces the in-process global model for the same seed.
The Config travels inside every train message as JSON, so one module-level ClientApp serves the
Simulation Engine (`run_simulation`) and the Deployment Engine (SuperLink + SuperNodes).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterable

import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from .config import Config, validate
from .federated import State, client_round, new_model, sample_clients, state_of


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
        nodes = sorted(grid.get_node_ids())
        if len(nodes) < self.cfg.clients_per_round:
            raise ValueError(
                f"{len(nodes)} nodes connected, need clients_per_round={self.cfg.clients_per_round}"
            )
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


def make_server_app(cfg: Config, out: dict) -> ServerApp:
    """A ServerApp running cfg.rounds of PartitionedFedAvg; the final state lands in out."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        initial = to_record(state_of(new_model(cfg)))
        tic = time.perf_counter()
        result = PartitionedFedAvg(cfg).start(
            grid=grid, initial_arrays=initial, num_rounds=cfg.rounds
        )
        out["seconds"] = time.perf_counter() - tic
        out["state"] = from_record(result.arrays)

    return app


def run_flower_simulation(cfg: Config) -> tuple[State, float]:
    """cfg.rounds on Flower's Simulation Engine (Ray); returns the global state and wall time."""
    from flwr.simulation import run_simulation

    os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
    out: dict = {}
    run_simulation(
        server_app=make_server_app(cfg, out),
        client_app=client_app,
        num_supernodes=cfg.clients_per_round,
        backend_config={
            "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
            "init_args": {"num_cpus": 1, "include_dashboard": False},
        },
    )
    if "state" not in out:
        raise RuntimeError("the Flower simulation finished without a global model")
    return out["state"], out["seconds"]
