"""sparsyfed's own command-line checks: CIFAR-10 batch files (training on them, evaluating a user's
file, one-line errors on garbage); the generic contract (help, unknown commands, bounds, paths,
corrupt runs, the misuse cases of skeleton.toml, the README's Quick start) is test_skeleton.py."""

from __future__ import annotations

import dataclasses
import json

from sparsyfed.cli import main


def test_garbage_cifar_file_is_one_line_naming_the_file(tmp_path, capsys):
    from .test_data import write_tiny_cifar

    write_tiny_cifar(tmp_path / "cifar")
    (tmp_path / "cifar" / "test_batch").write_bytes(b"\x00garbage")
    argv = ["train", "--dataset", "cifar10", "--data-dir", str(tmp_path / "cifar")]
    assert main([*argv, "--arch", "cifar_cnn_gn", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "test_batch is not a CIFAR-10 python batch" in err and err.count("\n") == 1


def test_cifar_train_then_eval_reads_the_batches_and_a_user_file(tmp_path, capsys):
    """`train --dataset cifar10 --data-dir DIR` on tiny fake python batches, then `eval --out`
    reloads the model and tests it on the run's test_batch and, with --eval-file, on a file of
    the user's in that format; a garbage file or a digits run is a one-line error."""
    import pickle

    import numpy as np
    from safetensors.torch import load_file

    from sparsyfed.config import PRESETS, validate
    from sparsyfed.data import load_cifar_batch
    from sparsyfed.federated import accuracy, new_model
    from sparsyfed.train import evaluate

    from .test_data import write_tiny_cifar

    write_tiny_cifar(tmp_path / "cifar", n=12)
    run = tmp_path / "run"
    argv = ["train", "--dataset", "cifar10", "--data-dir", str(tmp_path / "cifar"), "--quiet"]
    argv += ["--arch", "cifar_cnn_gn", "--rounds", "2", "--n-clients", "2"]
    argv += ["--clients-per-round", "2", "--out", str(run)]
    assert main(argv) == 0
    trained = json.loads((run / "metrics.json").read_text())
    capsys.readouterr()
    assert main(["eval", "--out", str(run), "--eval-file", str(tmp_path / "cifar/test_batch")]) == 0
    printed = capsys.readouterr().out
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 10, 9)
    data = rng.integers(0, 256, (9, 3072), dtype=np.uint8)
    user = tmp_path / "mine.pkl"
    user.write_bytes(pickle.dumps({b"data": data, b"labels": labels.tolist()}))
    out = evaluate(dataclasses.replace(PRESETS["quick"], eval_file=str(user)), run)
    assert out["accuracy"] == trained["accuracy"]  # the saved model on the run's test_batch
    assert "accuracy_file" in printed
    # the user's file: the saved model's accuracy on those 9 images, recomputed here
    keys = ("dataset", "data_dir", "arch", "method", "seed", "n_clients", "clients_per_round")
    saved = json.loads((run / "config.json").read_text())
    cfg = validate(dataclasses.replace(PRESETS["quick"], **{k: saved[k] for k in keys}))
    model = new_model(cfg)
    expected = accuracy(model, load_file(str(run / "model.safetensors")), *load_cifar_batch(user))
    assert out["accuracy_file"] == expected and 0 <= expected <= 1
    (tmp_path / "bad").write_bytes(b"\x00garbage")
    assert main(["eval", "--out", str(run), "--eval-file", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert "bad is not a CIFAR-10 python batch" in err and err.count("\n") == 1
    assert main(["eval", "--out", str(run), "--eval-file", str(tmp_path / "none")]) == 2
    assert "none: no such CIFAR-10 python batch file" in capsys.readouterr().err
    digits = tmp_path / "digits"
    assert main(["train", "--rounds", "1", "--n-clients", "4", "--clients-per-round", "2",
                 "--quiet", "--out", str(digits)]) == 0  # fmt: skip
    assert main(["eval", "--out", str(digits), "--eval-file", str(user)]) == 2
    assert "needs a run trained on cifar10" in capsys.readouterr().err
