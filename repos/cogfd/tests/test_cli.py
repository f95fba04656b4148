"""The command line beyond the generated tests/test_skeleton.py (which runs this project's misuse
cases and the README's Quick start from tests/skeleton.toml): broken files and the CLI's flags."""

from __future__ import annotations

import json

import pytest

from cogfd.cli import main

SHRINK = [  # the [readme.shrink] of tests/skeleton.toml, less its --methods
    "--pretrain-steps",
    "2",
    "--pretrain-batch",
    "8",
    "--oracle-steps",
    "2",
    "--erase-steps",
    "2",
    "--eval-samples",
    "2",
    "--ddim-steps",
    "2",
    "--n-train-images",
    "2",
    "--seeds",
    "0",
    "--widths",
    "8",
    "16",
    "--window-ablation",
    "900",
    "--steps-ablation",
    "3",
    "--lr-grid",
    "2e-3",
    "--uce-lambda-grid",
    "0.1",
    "--quiet",
]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # not in skeleton.toml: the generated check found a runs/ folder written before the rejection
        (["train", "--ca-anchor", "blue"], "ca_anchor 'blue' must name a colour and a shape"),
        # not in skeleton.toml: the generated check found a runs/ folder written before the rejection
        (["train", "--combination", "red"], "a combination needs at least two concepts, got 'red'"),
    ],
)
def test_misuse_checked_after_the_output_folder_exits_2(
    argv, message, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # a failed run must not leave files in the project folder
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_broken_graph_file_exits_2(tmp_path, capsys):
    bad = tmp_path / "graph.json"
    bad.write_text("{not json")
    argv = ["train", "--graph-json", str(bad), "--out", str(tmp_path / "r"), *SHRINK]
    assert main(argv) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_corrupted_checkpoint_with_resume_exits_2(tmp_path, capsys):
    run = tmp_path / "r"
    run.mkdir()
    (run / "base.safetensors").write_bytes(b"not a checkpoint")
    assert main(["train", "--resume", "--out", str(run), *SHRINK]) == 2
    err = capsys.readouterr().err
    assert "base.safetensors is not a checkpoint" in err and "Traceback" not in err


def _every_combination():
    from cogfd import data

    return [f"{c} {s}" for c in data.COLOURS for s in data.SHAPES]


def test_every_combination_runs_or_fails_in_one_line_before_pretraining(monkeypatch):
    """Each colour-shape prompt of the world either passes the checks run before pretraining or
    gets a one-line ValueError naming the value; only an anchor equal to the combination fails."""
    import dataclasses

    from cogfd import concept_graph, train
    from cogfd.config import PRESETS

    failed = []
    for combo in _every_combination():
        cfg = dataclasses.replace(PRESETS["quick"], combination=combo, theme=combo)
        erase, retain = concept_graph.extract_sets(train.load_graph(cfg))
        try:
            train.check_world(cfg, erase, retain)
        except ValueError as exc:
            assert "\n" not in str(exc) and "ca_anchor" in str(exc)
            failed.append(combo)
    assert failed == ["blue circle", "blue disk", "blue ring"]


def test_same_anchor_fails_before_pretraining(tmp_path, capsys, monkeypatch):
    from cogfd import models

    def no_pretrain(*args, **kwargs):
        raise AssertionError("pretraining started")

    monkeypatch.setattr(models, "pretrain", no_pretrain)
    argv = ["train", "--combination", "blue circle", "--out", str(tmp_path / "r")]
    assert main(argv) == 2
    assert "ca_anchor 'blue circle' shows the combination" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("combo", "anchor"), [("blue circle", "red circle"), ("red square", "blue circle")]
)
def test_combinations_without_held_out_synonyms_run_end_to_end(combo, anchor, tmp_path, capsys):
    """These ended in KeyError 'held_out' after pretraining; their erase set holds every synonym,
    so the held-out metric is left out instead."""
    out = tmp_path / "r"
    argv = ["train", "--combination", combo, "--theme", combo, "--ca-anchor", anchor]
    argv += ["--out", str(out), "--methods", "original", "cogfd", "uce", *SHRINK]
    assert main(argv) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert "cogfd/forget_drop" in metrics and "cogfd/forget_drop_held_out" not in metrics
    capsys.readouterr()
