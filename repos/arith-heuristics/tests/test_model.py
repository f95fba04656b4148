"""Hook points: a saved checkpoint is found and hooked; a model without MLPs is a clear error."""

from __future__ import annotations

import pytest
import torch

from arith_heuristics.data import Vocab
from arith_heuristics.model import build_model, load_checkpoint, locate, value_vectors


def test_saved_checkpoint_loads_with_its_mlps(tiny, tmp_path):
    model = build_model(tiny, Vocab(tiny.n_numbers))
    model.save_pretrained(tmp_path / "ckpt")
    loaded = load_checkpoint(tmp_path / "ckpt")
    parts = locate(loaded)
    assert (
        parts.n_layer == tiny.n_layer and parts.d_mlp == tiny.d_mlp and parts.n_head == tiny.n_head
    )
    w = value_vectors(parts.mlp_out[0])
    assert w.shape == (tiny.d_mlp, tiny.d_model)
    # v_out^n is what neuron n adds to the residual stream per unit activation
    x = torch.zeros(1, 1, tiny.d_mlp)
    x[0, 0, 3] = 1.0
    out = parts.mlp_out[0](x) - parts.mlp_out[0](torch.zeros_like(x))
    assert torch.allclose(out[0, 0], w[3], atol=1e-6)


def test_checkpoint_without_mlp_modules_is_a_clear_error(tmp_path):
    from transformers import MambaConfig, MambaForCausalLM

    cfg = MambaConfig(vocab_size=32, hidden_size=16, state_size=4, num_hidden_layers=1)
    MambaForCausalLM(cfg).save_pretrained(tmp_path / "mamba")
    with pytest.raises(ValueError, match="no MLP output projection found in MambaForCausalLM"):
        load_checkpoint(tmp_path / "mamba")


def test_missing_checkpoint_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="local model folder"):
        load_checkpoint(tmp_path / "nope")


def test_train_and_evaluate_analyses_a_local_checkpoint(tiny, tmp_path):
    import dataclasses
    import math

    from arith_heuristics.train import train_and_evaluate

    build_model(tiny, Vocab(tiny.n_numbers)).save_pretrained(tmp_path / "ckpt")
    cfg = dataclasses.replace(tiny, checkpoint=str(tmp_path / "ckpt"))
    metrics = train_and_evaluate(cfg, tmp_path / "run")
    assert math.isfinite(metrics["train_acc"]) and "overlap_ckpt_0" not in metrics


def test_cli_rejects_a_checkpoint_without_mlps(tmp_path, capsys):
    from transformers import MambaConfig, MambaForCausalLM

    from arith_heuristics.cli import main

    cfg = MambaConfig(vocab_size=32, hidden_size=16, state_size=4, num_hidden_layers=1)
    MambaForCausalLM(cfg).save_pretrained(tmp_path / "mamba")
    argv = ["train", "--checkpoint", str(tmp_path / "mamba"), "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert "no MLP output projection" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["{not json", '{"model_type": "no-such-architecture"}', "{}"])
def test_checkpoint_with_a_bad_config_is_a_one_line_error(tmp_path, capsys, text):
    from arith_heuristics.cli import main

    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "config.json").write_text(text)
    with pytest.raises(ValueError, match="not a loadable Hugging Face causal-LM folder"):
        load_checkpoint(folder)
    assert main(["train", "--checkpoint", str(folder), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert str(folder) in err and err.count("\n") == 1 and "Traceback" not in err
