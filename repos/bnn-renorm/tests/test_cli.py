"""The command line: the project's own misuse exits 2 with a clear message, MNIST files reach the
ReLU experiment, the README quick start runs (the generic contract: tests/test_skeleton.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import shrink_flags
from test_data import write_idx

from bnn_renorm import train
from bnn_renorm.cli import main, parse


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--temperature", "0"], "temperature must be > 0"),
        (["train", "--s2", "-1"], "s2 must be > 0"),
        (["train", "--burn-in", "5000"], "burn_in"),
        (["bench", "--preset"], "--preset needs a value"),
        (["train", "--sub-relu-widths", "300"], "every width < sub_relu_p=60"),
        (["train", "--sub-restarts", "0"], "sub_restarts must be >= 1"),
        (["train", "--mnist-images", "img.gz"], "must be given together"),
        (
            ["train", "--mnist-images", "nowhere/img.gz", "--mnist-labels", "nowhere/lab.gz"],
            "mnist_images: no such file 'nowhere/img.gz'",
        ),
    ],
)
def test_misuse_exits_2_with_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_corrupt_mnist_file_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "img").write_bytes(b"\x00\x00\x08\x03garbage")
    (tmp_path / "lab").write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x02\x01\x02")
    flags = ["--mnist-images", str(tmp_path / "img"), "--mnist-labels", str(tmp_path / "lab")]
    assert main(["train", "--out", str(tmp_path / "run"), *flags, *shrink_flags()]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and str(tmp_path / "img") in err and "\n" not in err


def test_mnist_idx_files_reach_the_relu_experiment_from_the_cli(tmp_path):
    rng = np.random.default_rng(0)
    write_idx(tmp_path / "img.gz", rng.integers(0, 256, size=(12, 7, 9)))
    write_idx(tmp_path / "lab.gz", rng.integers(0, 10, size=12))
    flags = ["--mnist-images", str(tmp_path / "img.gz"), "--mnist-labels", str(tmp_path / "lab.gz")]
    cfg = parse("train", [*flags, *shrink_flags()])
    x, y, x_test, _ = train.relu_problem(cfg, 0)
    assert x.shape == (6, 63) and x_test.shape == (3, 63) and y.shape == (6,)


def test_readme_quick_start_commands_run(readme_run):
    """Every `bnn-renorm ...` line of the README's Quick start, shrunk by extra flags, exits 0."""
    folder, commands, codes = readme_run
    assert [c[:2] for c in commands] == [
        ["bnn-renorm", "train"],
        ["bnn-renorm", "eval"],
        ["bnn-renorm", "bench"],
    ]
    assert codes == [0, 0, 0]
    doc = json.loads((folder / "runs" / "quick" / "quick.json").read_text())
    assert doc["paper"] == "bnn-renorm"
    assert not (folder / "results").exists()  # a plain bench never writes the committed results/
