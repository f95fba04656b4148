"""The whole pipeline, sampling and camera recovery included, can learn pose: a model trained on
64 pairs and evaluated by `eval_ar` on those same pairs reaches the tokenizer ceiling, while the
untrained model stays at chance (issue 38, point 4)."""

from __future__ import annotations

import dataclasses

import pytest

from gst import train
from gst.config import PRESETS
from gst.floors import chance_pose, tokenizer_ceiling

OVERFIT = {
    "image_size": 12,
    "grid": 4,
    "n_objects": 2,
    "n_train": 64,
    "n_test": 8,
    "image_codes": 32,
    "camera_codes": 32,
    "width": 32,
    "depth": 1,
    "heads": 2,
    "steps": 200,
    "batch": 32,
    "lr": 1e-2,
    "warmup": 10,
    "quiet": True,
}


@pytest.fixture(scope="module")
def on_train():
    """The prepared data with the training pairs as the evaluation set."""
    cfg = dataclasses.replace(PRESETS["quick"], **OVERFIT)
    prep = train.prepare(cfg)
    codes = {"train": prep.codes["train"], "test": prep.codes["train"]}
    return cfg, dataclasses.replace(prep, test=prep.train, codes=codes)


def test_pose_only_overfit_reaches_the_tokenizer_ceiling(on_train):
    cfg, prep = on_train
    ceiling, chance = tokenizer_ceiling(prep), chance_pose(prep)
    trained = train.eval_ar(cfg, prep, train.train_ar(cfg, prep, "pose_only"), "pose_only")
    untrained = train.eval_ar(cfg, prep, train.build_model(cfg, prep.vocab).eval(), "pose_only")
    assert trained["rot_acc15"] >= ceiling["rot_acc15"] - 10, (trained, ceiling)
    assert untrained["rot_acc15"] <= chance["rot_acc15"] + 10, (untrained, chance)  # control
