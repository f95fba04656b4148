"""Flower's Deployment Engine on loopback: one SuperLink, two SuperNodes, `flwr run`, 2 rounds.

Slow (`pytest -m slow`): 11 Python processes start, 7 of them import torch.

Every process the test starts is stopped by its pid in the fixture's teardown, together with
the processes they spawned (SuperExec, ServerApp, ClientApps), even when the test fails.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from sparsyfed.federated import run_federated
from sparsyfed.flower_app import config_from_run_config

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RUN_TIMEOUT = 300  # seconds for `flwr run --stream` (the run ends the stream)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process {proc.args} exited with {proc.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def descendants(pid: int) -> list[int]:
    """Pids of every live process below `pid` (Linux /proc; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def stop(pids: list[int], timeout: float = 15.0) -> None:
    """SIGTERM each pid, wait, then SIGKILL whatever is still alive."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            if alive(pid):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:  # exited since the check
                    pass
        deadline = time.monotonic() + timeout
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)


@pytest.fixture
def deployment(tmp_path):
    """SuperLink + 2 SuperNodes on free loopback ports; yields (connection name, env, logs)."""
    if not Path("/proc").is_dir():
        pytest.skip("the teardown tracks spawned processes through /proc (Linux)")
    home = tmp_path / "flwr"
    home.mkdir()
    link_port = free_port()
    (home / "config.toml").write_text(
        f'[superlink]\ndefault = "loopback"\n\n[superlink.loopback]\n'
        f'address = "127.0.0.1:{link_port}"\ninsecure = true\n'
    )
    env = dict(os.environ, FLWR_HOME=str(home), FLWR_TELEMETRY_ENABLED="0")
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # SuperLink spawns flower-superexec
    procs: list[subprocess.Popen] = []
    logs = {}

    def start(name: str, args: list[str]) -> subprocess.Popen:
        logs[name] = tmp_path / f"{name}.log"
        with logs[name].open("wb") as fh:
            proc = subprocess.Popen(
                [str(BIN / args[0]), *args[1:]],
                stdout=fh,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=tmp_path,
            )
        procs.append(proc)
        return proc

    try:
        link = start(
            "superlink",
            ["flower-superlink", "--insecure", "--port", str(link_port)]
            + ["--disable-runtime-dependency-installation"],
        )
        wait_for_port(link_port, link)
        for i in range(2):
            start(
                f"supernode{i}",
                ["flower-supernode", "--insecure", "--superlink", f"127.0.0.1:{link_port}"]
                + [
                    "--port",
                    str(free_port()),
                    "--node-config",
                    f"partition-id={i} num-partitions=2",
                ],
            )
        yield "loopback", env, logs
    finally:
        started = [p.pid for p in procs]
        spawned = [c for pid in started for c in descendants(pid)]
        stop(started)
        stop(spawned)  # SuperExec/ServerApp/ClientApps also watch their parent; make sure
        for proc in procs:
            proc.wait(timeout=5)  # reap, so no zombie outlives the test
        leftover = [p for p in started + spawned if alive(p)]
        assert not leftover, f"processes still alive after teardown: {leftover}"


@pytest.mark.slow  # 85-115 s on a shared 2-core machine: the 2-minute default suite cannot hold it
def test_deployment_engine_two_rounds_match_the_in_process_loop(deployment, tmp_path):
    """`flwr run` on SuperLink + 2 SuperNodes gives the in-process global model (same seed)."""
    connection, env, logs = deployment
    out = tmp_path / "deploy-out"
    run_config = {
        "preset": "quick",
        "method": "sparsyfed",
        "seed": 0,
        "rounds": 2,
        "n-clients": 4,
        "clients-per-round": 2,
        "out-dir": str(out),
    }
    overrides = " ".join(f"{k}={json.dumps(v)}" for k, v in run_config.items())
    cmd = [str(BIN / "flwr"), "run", str(ROOT / "deploy"), connection]
    cmd += ["--run-config", overrides, "--stream"]
    done = subprocess.run(
        cmd, check=False, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    log_tail = "\n".join(f"--- {n}\n{p.read_text()[-2000:]}" for n, p in logs.items())
    assert done.returncode == 0, done.stdout + done.stderr + log_tail
    assert (out / "result.json").exists(), done.stdout[-3000:] + log_tail

    result = json.loads((out / "result.json").read_text())
    cfg = config_from_run_config(run_config)
    assert result["config"]["rounds"] == 2 and cfg.clients_per_round == 2
    assert 0.0 <= result["accuracy"] <= 1.0
    with np.load(out / "global_model.npz") as npz:
        deployed = {k: torch.from_numpy(npz[k]) for k in npz.files}
    expected, _, _ = run_federated(cfg)
    assert deployed.keys() == expected.keys()
    for key, value in expected.items():
        assert torch.allclose(deployed[key], value, atol=1e-6), key
