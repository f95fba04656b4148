"""Stage B: the loss at initialisation, the NaN guard, the timestep window, the parameter set."""

from __future__ import annotations

import pytest
import torch

from cogfd import decoupling, models


def _pair(small_unet, prompts):
    unet, text = small_unet
    x = torch.randn(len(prompts), 3, 8, 8, generator=torch.Generator().manual_seed(0))
    t = torch.full((len(prompts),), 995)
    with torch.no_grad():
        h, m = models.encode(text, prompts)
    return unet, x, t, h, m


def test_loss_is_exactly_1_1_at_init_and_gradient_is_zero(small_unet):
    unet, x, t, h, m = _pair(small_unet, ["red circle", "red", "circle"])
    student, params = decoupling.trainable_copy(unet, decoupling.cogfd_params)
    eps = models.denoise(student, x, t, h, m)
    with torch.no_grad():
        eps0 = models.denoise(unet, x, t, h, m)
    loss, l_e, l_r = decoupling.cogfd_loss(eps, eps0, torch.tensor([True, False, False]))
    assert l_e.item() == 0.0 and l_r.item() == 0.0
    assert loss.item() == torch.tensor(1.1).item()  # 0.1 e^0 + e^0
    grads = torch.autograd.grad(l_r, params, allow_unused=True)
    assert all(g is None or torch.count_nonzero(g) == 0 for g in grads)


def test_loss_matches_a_python_loop():
    g = torch.Generator().manual_seed(1)
    eps, eps0 = torch.randn(5, 3, 2, 2, generator=g), torch.randn(5, 3, 2, 2, generator=g)
    is_erase = torch.tensor([True, False, True, False, False])
    le = sum(((eps[i] - eps0[i]) ** 2).mean() for i in (0, 2)) / 2
    lr = sum(((eps[i] - eps0[i]) ** 2).mean() for i in (1, 3, 4)) / 3
    loss = decoupling.cogfd_loss(eps, eps0, is_erase)[0]
    assert torch.allclose(loss, 0.1 * torch.exp(-le) + torch.exp(lr))


@pytest.mark.parametrize("all_erase", [True, False])
def test_no_nan_when_a_batch_lacks_erase_or_retain_prompts(all_erase):
    eps = torch.randn(4, 3, 2, 2, requires_grad=True)
    eps0 = torch.randn(4, 3, 2, 2)
    rows = torch.full((4,), all_erase)
    empty = ~rows if all_erase else rows
    assert torch.isnan(torch.nn.functional.mse_loss(eps[empty], eps0[empty]))  # the bug guarded
    loss = decoupling.cogfd_loss(eps, eps0, rows)[0]
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(eps.grad).all()


def test_timesteps_stay_in_window_and_bad_windows_fail():
    t = decoupling.window_timesteps(2000, 990, 1000, torch.Generator().manual_seed(0))
    assert int(t.min()) == 990 and int(t.max()) == 999
    with pytest.raises(ValueError, match="window"):
        decoupling.window_timesteps(4, 10, 10, torch.Generator())


def _erase(unet, text, steps, lr=1e-2):
    return decoupling.erase_cogfd(
        unet,
        text,
        torch.rand(2, 3, 8, 8) * 2 - 1,
        ["red circle", "ruby circle"],
        ["red", "circle"],
        steps=steps,
        lr=lr,
        batch=20,
        t_window=(990, 1000),
        erase_weight=0.1,
        gen=torch.Generator().manual_seed(0),
    )


def test_first_step_moves_weights_by_weight_decay_only(small_unet):
    """The stall mechanism: at step 0 the gradient is exactly zero, so AdamW's first update is
    the decoupled weight decay p <- p (1 - lr wd) and nothing else."""
    unet, text = small_unet
    edited, losses, erase_curve = _erase(unet, text, steps=1)
    assert losses[0] == pytest.approx(1.1, abs=1e-6) and erase_curve[0] == 0.0
    for k, v in edited.state_dict().items():
        expected = unet.state_dict()[k]
        if "attn2" in k and "to_v" not in k:
            expected = expected * (1 - 1e-2 * 0.01)
        assert torch.allclose(v, expected, atol=1e-9), k


def test_gradient_after_a_perturbation_reaches_only_q_k_out(small_unet):
    """Away from the start (here: to_q perturbed), L has a real gradient, and only on the
    trainable attn2.to_q/to_k/to_out weights; the frozen original is untouched."""
    unet, text = small_unet
    before = {k: v.clone() for k, v in unet.state_dict().items()}
    student, _ = decoupling.trainable_copy(unet, decoupling.cogfd_params)
    with torch.no_grad():
        for name, p in student.named_parameters():
            if name.endswith("attn2.to_q.weight"):
                p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1)))
    _unet, x, t, h, m = _pair((unet, text), ["red circle", "ruby circle", "red", "circle"])
    eps = models.denoise(student, x, t, h, m)
    with torch.no_grad():
        eps0 = models.denoise(unet, x, t, h, m)
    loss = decoupling.cogfd_loss(eps, eps0, torch.tensor([True, True, False, False]))[0]
    loss.backward()
    names = {
        n for n, p in student.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0
    }
    assert names and all("attn2" in n and "to_v" not in n for n in names), names
    assert any("to_k" in n for n in names) and any("to_out" in n for n in names)
    assert all(torch.equal(v, before[k]) for k, v in unet.state_dict().items())


def test_several_steps_push_the_erase_prompts_away(small_unet):
    unet, text = small_unet
    _edited, _losses, erase_curve = _erase(unet, text, steps=8, lr=3e-2)
    assert erase_curve[0] == 0.0 and erase_curve[-1] > 0.0


def test_empty_erase_set_is_a_clear_error(small_unet):
    unet, text = small_unet
    with pytest.raises(ValueError, match="erase set is empty"):
        decoupling.erase_cogfd(
            unet,
            text,
            torch.zeros(1, 3, 8, 8),
            [],
            ["red"],
            steps=1,
            lr=1e-3,
            batch=20,
            t_window=(990, 1000),
            erase_weight=0.1,
            gen=torch.Generator(),
        )


@pytest.fixture(scope="module")
def overfit_toy():
    """A tiny UNet overfit to denoise two images in CoGFD's window, each named by its own prompt
    ("red circle" -> image 0, "blue square" -> image 1): its denoising error there is low, so
    erasing can only raise it, and by how much is the drop in that prompt's likelihood."""
    from cogfd import text

    torch.manual_seed(0)
    unet, encoder = models.make_unet(8, (8, 16)), text.tiny_text_encoder().eval()
    prompts = ["red circle", "blue square"]
    gen = torch.Generator().manual_seed(0)
    images = torch.rand(2, 3, 8, 8, generator=gen) * 2 - 1
    with torch.no_grad():
        h, m = models.encode(encoder, prompts)
    x0, h, m = images.repeat(4, 1, 1, 1), h.repeat(4, 1, 1), m.repeat(4, 1)
    sched = models.make_scheduler()
    opt = torch.optim.Adam(unet.parameters(), lr=3e-2)
    for _ in range(30):
        noise = torch.randn(x0.shape, generator=gen)
        t = torch.randint(990, 1000, (len(x0),), generator=gen)
        loss = ((models.denoise(unet, sched.add_noise(x0, noise, t), t, h, m) - noise) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return unet.eval().requires_grad_(False), encoder, images, prompts


def denoising_error(unet, encoder, images, prompts, n=32):
    """Per prompt: E ||eps_theta(x_t, t, prompt) - eps||^2 over t in [990, 1000) and fresh noise
    (the same draws for every model), on the prompt's own image: the negative log-likelihood term
    of that window, up to constants."""
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        h, m = models.encode(encoder, prompts)
        x0, h, m = images.repeat(n, 1, 1, 1), h.repeat(n, 1, 1), m.repeat(n, 1)
        noise = torch.randn(x0.shape, generator=gen)
        t = torch.randint(990, 1000, (len(x0),), generator=gen)
        pred = models.denoise(unet, models.make_scheduler().add_noise(x0, noise, t), t, h, m)
    return ((pred - noise) ** 2).mean((1, 2, 3)).view(n, len(prompts)).mean(0)


def test_erasing_lowers_the_erase_sets_likelihood_not_the_retain_sets(overfit_toy):
    """CoGFD pushes the erase prompt's prediction away and holds the retain prompt's: the
    denoising error rises on the erase set and stays put on the retain set (both sets swapped,
    the retain prompt is the one that gets erased)."""
    unet, encoder, images, prompts = overfit_toy
    before = denoising_error(unet, encoder, images, prompts)
    edited, _losses, _curve = decoupling.erase_cogfd(
        unet,
        encoder,
        images,
        ["red circle"],
        ["blue square"],
        steps=20,
        lr=0.1,
        batch=20,
        t_window=(990, 1000),
        erase_weight=0.1,
        gen=torch.Generator().manual_seed(0),
    )
    rise = denoising_error(edited, encoder, images, prompts) - before
    assert before.max() < 0.2  # the toy is fitted
    assert rise[0] > 0.01, rise  # the erase prompt's likelihood dropped
    assert rise[0] > 10 * abs(rise[1]), rise  # ... far more than the retain prompt's
