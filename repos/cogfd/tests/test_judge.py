"""The judge: accurate on renders, abstains on pure noise, and SDEdit gives labelled samples."""

from __future__ import annotations

import torch

from cogfd import data, judge


def test_judge_is_accurate_on_renders_and_abstains_on_noise():
    oracle = judge.train_oracle(8, steps=600, batch=64, seed=0)
    gen = torch.Generator().manual_seed(5)
    x, c, s = data.render_batch(data.random_prompts(256, gen, p_empty=0.0), 8, gen)
    acc = judge.accuracy(oracle, x, c, s)
    assert acc["colour_acc"] >= 95 and acc["shape_acc"] >= 80
    red, circle = data.expected_classes("red circle")
    noise = judge.noise_reading(oracle, judge.pure_noise(256, 8, gen), (red, circle))
    assert noise["reads_combination"] <= 5.0  # the first-pass judge read 50% here


def test_sdedit_set_keeps_labels_and_starts_from_the_render(small_unet):
    unet, text = small_unet
    x, c, s = judge.generated_validation_set(unet, text, 8, 8, 4, 3.0, 400, seed=0)
    assert x.shape == (8, 3, 8, 8) and x.abs().max() <= 1
    assert c.tolist()[:4] == [0, 1, 2, 3] and s.tolist()[:4] == [0, 0, 0, 0]


def test_pool_of_generated_images_is_used():
    gen = torch.Generator().manual_seed(0)
    pool = (
        torch.zeros(4, 3, 8, 8),
        torch.zeros(4, dtype=torch.long),
        torch.ones(4, dtype=torch.long),
    )
    oracle = judge.train_oracle(8, steps=2, batch=8, seed=0, generated=pool)
    assert oracle(judge.pure_noise(2, 8, gen))[0].shape == (2, len(judge.COLOURS))


def test_template_judge_reads_renders_and_sees_nothing_in_noise():
    """The second judge (template matching, nothing learned) on degraded renders and noise."""
    for size in (8, 16):
        gen = torch.Generator().manual_seed(0)
        x, c, s = data.render_batch(data.random_prompts(200, gen, p_empty=0.0), size, gen)
        col, shp = judge.template_judge(judge._degrade(x, gen))
        assert (col == c).float().mean() > 0.95 and (shp == s).float().mean() > 0.9
        _, shp = judge.template_judge(judge.pure_noise(50, size, gen))
        assert (shp == len(judge.SHAPES) - 1).all()


def test_judge_agreement_counts_each_prompts_labels(small_unet):
    unet, text = small_unet
    out = judge.judge_agreement(judge.Oracle().eval(), unet, text, 8, 2, 3.0, 0, n=3)
    assert set(out["per_prompt"]) == set(judge.AGREEMENT_PROMPTS)
    for row in out["per_prompt"].values():
        assert sum(row["cnn_shape"]) == sum(row["template_shape"]) == 3
    agree = [r["shape_agree"] for r in out["per_prompt"].values()]
    assert abs(sum(agree) / len(agree) - out["shape_agree"]) < 1e-6
