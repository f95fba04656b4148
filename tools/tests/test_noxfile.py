"""The noxfile works from a plain `pip install nox` (virtualenv backend) and with uv."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("nox") is None, reason="nox is not installed in this environment"
)


def nox(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "nox", "--noxfile", str(ROOT / "noxfile.py")]
    cmd += ["--envdir", str(tmp_path / "envs"), *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOX")}
    return subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=600)


def test_sessions_are_listed(tmp_path):
    out = nox("-l", tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    text = out.stdout + out.stderr
    for name in (
        "reproduce-paper",
        "gpu-smoke",
        "verify-",
        "gpu-smoke-",
        "bench-",
        "test-",
        "mutants-",
    ):
        assert name in text, name


def test_backend_falls_back_from_uv_to_virtualenv():
    text = (ROOT / "noxfile.py").read_text()
    assert 'default_venv_backend = "uv|virtualenv"' in text


@pytest.mark.parametrize("backend", ["virtualenv", "uv"])
def test_an_environment_is_made_and_installed_into(backend, tmp_path):
    if backend == "uv" and importlib.util.find_spec("uv") is None:
        pytest.skip("uv is not installed in this environment")
    out = nox("-s", "env-smoke", "--force-venv-backend", backend, tmp_path=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert str(tmp_path / "envs" / "env-smoke") in out.stdout
