"""The command line: MNIST files reach the ReLU experiment, the README's Quick start is train, eval
and bench (the shared contract, misuse listed in skeleton.toml and the Quick start's run, is tested
by the generated test_skeleton.py)."""

from __future__ import annotations

import numpy as np
from test_data import write_idx

from bnn_renorm import train
from bnn_renorm.cli import main, parse
from conftest import shrink_flags


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


def test_readme_quick_start_is_train_eval_bench(readme_run):
    """The README's Quick start runs exactly train, eval and bench (the generated
    test_skeleton.py checks they exit 0, the bench's quick.json and that results/ is untouched)."""
    assert [c[:2] for c in readme_run.commands] == [
        ["bnn-renorm", "train"],
        ["bnn-renorm", "eval"],
        ["bnn-renorm", "bench"],
    ]
