"""The command line beyond the generated tests/test_skeleton.py (which runs this project's misuse
cases and the README's Quick start from tests/skeleton.toml): the real-format loaders are
reachable."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from empp.cli import main

from .conftest import TINY


def _flags(cfg: dict) -> list[str]:
    out = []
    for key, value in cfg.items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            out += [flag] if value else []
        elif isinstance(value, tuple):
            out += [flag, *map(str, value)]
        else:
            out += [flag, str(value)]
    return out


def test_real_format_loaders_are_reachable_from_train(tmp_path, capsys):
    """`--qm9-dir` (QM9 .xyz folder) and `--md17-npz` feed `train`; bad paths are one line."""
    from empp import data

    folder = tmp_path / "qm9"
    folder.mkdir()
    for i, smi in enumerate(data.nci_smiles(5)[:12]):
        mol, _ = data.conformer(smi)
        props = {k: 0.1 * i + j for j, k in enumerate(data.QM9_PROPS)}
        data.write_qm9_xyz(folder / f"dsgdb9nsd_{i:06d}.xyz", mol, props, i + 1)
    out = tmp_path / "run"
    argv = ["train", "--qm9-dir", str(folder), "--out", str(out), *_flags(TINY)]
    assert main(argv) == 0
    assert "mae" in json.loads((out / "metrics.json").read_text())
    frames = data.md_like("ethanol", 9, stride=2)
    npz = tmp_path / "md17.npz"
    np.savez(
        npz,
        z=frames[0].z,
        R=np.stack([f.pos for f in frames]),
        E=np.array([f.y["energy"] for f in frames]),
        F=np.stack([f.forces for f in frames]),
    )
    md = ["train", "--task", "md", "--md17-npz", str(npz), "--out", str(tmp_path / "md")]
    assert main([*md, *_flags(TINY)]) == 0
    capsys.readouterr()
    other = tmp_path / "mine"  # eval on a user's rMD17 folder
    other.mkdir()
    np.savez(
        other / "rmd17_ethanol.npz",
        nuclear_charges=frames[0].z,
        coords=np.stack([f.pos for f in frames[:4]]),
        energies=np.array([f.y["energy"] for f in frames[:4]]),
        forces=np.stack([f.forces for f in frames[:4]]),
    )
    assert main(["eval", "--md17-npz", str(other), "--out", str(tmp_path / "md")]) == 0
    shown = capsys.readouterr().out
    assert "file_force_mae" in shown and "file_molecules" in shown
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"garbage")
    bad = ["train", "--task", "md", "--md17-npz", str(junk), "--out", str(tmp_path / "x")]
    assert main([*bad, *_flags(TINY)]) == 2
    err = capsys.readouterr().err.strip()
    assert "junk.npz" in err and len(err.splitlines()) == 1
    none = ["train", "--qm9-dir", str(tmp_path / "none"), "--out", str(tmp_path / "y")]
    assert main([*none, *_flags(TINY)]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_qm9_csv_is_reachable_from_train(tmp_path, capsys):
    """`--qm9-csv` (qm9pack layout, hydrogens kept) feeds `train`; a missing file is one line."""
    from empp import data

    table = tmp_path / "qm9.csv"
    data.write_qm9_csv(table, data.qm9_like(18, max_heavy=6, hydrogens=True))
    out = tmp_path / "run"
    argv = ["train", "--qm9-csv", str(table), "--n-val", "2", "--out", str(out), *_flags(TINY)]
    assert main(argv) == 0
    assert "val_mae" in json.loads((out / "metrics.json").read_text())
    capsys.readouterr()
    # eval on a user's file in the same layout: every molecule of it, the run's normaliser
    mine = tmp_path / "mine.csv"
    data.write_qm9_csv(mine, data.qm9_like(5, max_heavy=5, hydrogens=True), start=500)
    assert main(["eval", "--qm9-csv", str(mine), "--out", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "file_mae" in shown and "file_molecules" in shown
    from empp.config import PRESETS
    from empp.train import evaluate

    again = evaluate(dataclasses.replace(PRESETS["quick"], qm9_csv=str(mine), quiet=True), out)
    assert again["file_molecules"] == 5 and again["file_mae"] >= 0
    wrong = ["eval", "--qm9-dir", str(tmp_path), "--out", str(out)]
    assert main(wrong) == 2
    err = capsys.readouterr().err.strip()
    assert "trained on qm9-csv" in err and len(err.splitlines()) == 1
    nope = ["train", "--qm9-csv", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "y")]
    assert main([*nope, *_flags(TINY)]) == 2
    err = capsys.readouterr().err.strip()
    assert "nope.csv" in err and len(err.splitlines()) == 1
