"""Real-format loaders: an .npz of snapshots and a folder of image sequences, and their errors."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from trendy.cli import main
from trendy.data import load_fields
from trendy.train import train_and_evaluate


def write_npz(path, n=6, frames=5, channels=None, theta=True):
    rng = np.random.default_rng(0)
    shape = (n, frames, 12, 12) if channels is None else (n, frames, channels, 12, 12)
    growth = np.linspace(0, 1, frames)[None, :, None, None]
    fields = rng.normal(size=shape) * (1 + growth if channels is None else 1 + growth[:, :, None])
    extra = {"theta": rng.uniform(size=(n, 2))} if theta else {}
    np.savez(path, fields=fields, **extra)
    return fields


def test_npz_round_trip_keeps_every_trajectory_once(tiny, tmp_path):
    fields = write_npz(tmp_path / "snap.npz", channels=2)
    ds = load_fields(tmp_path / "snap.npz", dataclasses.replace(tiny, n_test=2))
    assert ds["train"].shape == (4, 5, 2, 12, 12) and ds["test"].shape == (2, 5, 2, 12, 12)
    got = torch.cat([ds["train"], ds["test"]]).double().flatten(1).sum(1).sort().values
    want = torch.tensor(fields).flatten(1).sum(1).sort().values
    assert torch.allclose(got, want, atol=1e-3)
    assert ds["theta_train"].shape == (4, 2)


def test_folder_of_png_sequences_loads_as_one_channel(tiny, tmp_path):
    import matplotlib.image

    rng = np.random.default_rng(1)
    for t in range(4):
        seq = tmp_path / "lizards" / f"animal{t}"
        seq.mkdir(parents=True)
        for f in range(3):
            matplotlib.image.imsave(
                seq / f"day{f:02d}.png", rng.uniform(size=(10, 14)), cmap="gray"
            )
    ds = load_fields(tmp_path / "lizards", dataclasses.replace(tiny, n_test=1))
    assert ds["train"].shape == (3, 3, 1, 10, 14)
    assert float(ds["theta_train"].abs().max()) == 0.0  # no theta.npy: one parameter, 0


def test_train_on_loaded_snapshots_from_the_cli(tiny, tmp_path, capsys):
    write_npz(tmp_path / "snap.npz")
    argv = ["train", "--data", str(tmp_path / "snap.npz"), "--out", str(tmp_path / "run"),
            "--epochs", "3", "--n-test", "2", "--quiet", "--scattering-l", "4"]  # fmt: skip
    assert main(argv) == 0
    trained = json.loads(capsys.readouterr().out)
    assert main(["eval", "--out", str(tmp_path / "run")]) == 0  # reloads the model, same data
    again = json.loads(capsys.readouterr().out)
    assert again["test_nmse"] == trained["test_nmse"] and again["n_test"] == 2
    cfg = dataclasses.replace(tiny, data=str(tmp_path / "snap.npz"), n_test=2)
    metrics = train_and_evaluate(cfg, tmp_path / "again")
    assert math.isfinite(metrics["test_nmse"]) and "turing_rel_err" not in metrics


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p, "does not exist"),
        (lambda p: (p.write_text("x"), p)[1], "expected a folder of sequences or an .npz"),
        (lambda p: (p.write_bytes(b"not a zip"), p)[1], "cannot be read"),
        (lambda p: (np.savez(p, other=np.ones(3)), p)[1], "no array named 'fields'"),
        (lambda p: (np.savez(p, fields=np.ones((2, 3, 4))), p)[1], "fields must be"),
        (lambda p: (np.savez(p, fields=np.full((4, 3, 8, 8), np.nan)), p)[1], "NaN/inf"),
        (
            lambda p: (np.savez(p, fields=np.ones((4, 3, 8, 8)), theta=np.ones((3, 1))), p)[1],
            "one row per trajectory",
        ),
    ],
)
def test_bad_data_files_exit_2_with_a_line_naming_the_file(make, message, tmp_path, capsys):
    name = "bad.npz" if "folder" not in message else "bad.txt"
    path = make(tmp_path / name)
    assert main(["train", "--data", str(path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert message in err and str(path) in err and err.count("\n") == 1


def test_folder_without_sequences_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["train", "--data", str(tmp_path / "empty")]) == 2
    assert "no subfolders" in capsys.readouterr().err


def test_above_hopf_share_puts_more_training_draws_above_the_hopf_line(tiny):
    from trendy import data, pde
    from trendy.config import hopf_config

    cfg = dataclasses.replace(hopf_config(tiny), n_train=400, n_test=50)
    gen = torch.Generator().manual_seed(0)
    share = {}
    for s in (0.0, 0.5):
        train, _ = data.sample_parameters(dataclasses.replace(cfg, above_hopf_share=s), gen)
        above = train[:, 1] > pde.hopf_line(train[:, 0])
        share[s] = float(above.float().mean())
        assert (train[:, 1] <= pde.hopf_line(train[:, 0]) + cfg.b_over_hopf).all()
    assert share[0.5] > share[0.0] + 0.15
