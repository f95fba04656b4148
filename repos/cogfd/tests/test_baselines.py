"""UCE's closed form against numpy's least squares; the fine-tuning baselines touch attn2 only."""

from __future__ import annotations

import numpy as np
import torch

from cogfd import baselines


def test_uce_closed_form_matches_lstsq():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(6, 4, generator=g, dtype=torch.float64)
    c_e, c_p = (
        torch.randn(3, 4, generator=g, dtype=torch.float64),
        torch.randn(5, 4, generator=g, dtype=torch.float64),
    )
    v = torch.randn(3, 6, generator=g, dtype=torch.float64)
    lam, scale = 0.3, 0.1  # scale: the official preserve_scale weighs the preserved rows
    a = np.vstack([c_e.numpy(), np.sqrt(scale) * c_p.numpy(), np.sqrt(lam) * np.eye(4)])
    b = np.vstack([v.numpy(), np.sqrt(scale) * (c_p @ w.T).numpy(), np.sqrt(lam) * w.T.numpy()])
    ref = np.linalg.lstsq(a, b, rcond=None)[0].T
    got = baselines.uce_solve(w, c_e, v, c_p, lam, preserve_scale=scale)
    np.testing.assert_allclose(got.numpy(), ref, atol=1e-10)


def test_uce_preserves_every_token_row_of_empty_and_sub_concepts(small_unet, monkeypatch):
    """The official edit_model preserves [""] + preserve_concepts with all token rows (padding
    included) at preserve_scale; the erase side keeps the last-token slice."""
    unet, text = small_unet
    seen = []
    real = baselines.uce_solve

    def spy(w, c_e, v, c_p, lam, preserve_scale=1.0):
        seen.append((c_e.shape[0], c_p.shape[0], preserve_scale))
        return real(w, c_e, v, c_p, lam, preserve_scale)

    monkeypatch.setattr(baselines, "uce_solve", spy)
    baselines.uce(unet, text, "red circle", "blue circle", ["red", "circle"], 0.1, 0.1)
    length = text(["red"])[0].shape[1]  # padded sequence length
    n_erase = length - 2  # from "circle" (token 2 of <bos> red circle) to the end
    assert seen and all(s == (n_erase, 3 * length, 0.1) for s in seen)


def test_uce_maps_the_concept_onto_the_anchor(small_unet):
    unet, text = small_unet
    edited = baselines.uce(unet, text, "red circle", "blue circle", ["red", "circle"], lam=1e-4)
    from cogfd import models

    with torch.no_grad():
        h, _m = models.encode(text, ["red circle", "blue circle"])
    originals = dict(unet.named_modules())
    for name, mod in edited.named_modules():
        if name.endswith("attn2"):
            # the edited rows: from the concept's last token ("circle") on, as in official UCE
            k, k0 = mod.to_k(h[:, 2:]), originals[name].to_k(h[:, 2:])
            assert (k[0] - k0[1]).norm() < 0.5 * (k0[0] - k0[1]).norm()  # concept -> anchor
    changed = [
        k for k, v in edited.state_dict().items() if not torch.equal(v, unet.state_dict()[k])
    ]
    assert changed and all("attn2.to_k" in k or "attn2.to_v" in k for k in changed)


def test_esd_x_is_on_policy(small_unet, monkeypatch):
    """x_t comes from the model being edited (the official code), not from the frozen original
    or from noised images of the concept."""
    unet, text = small_unet
    used = []
    real = baselines.sample_until

    def spy(model, *args):
        used.append(model)
        return real(model, *args)

    monkeypatch.setattr(baselines, "sample_until", spy)
    edited, _ = baselines.esd_x(
        unet,
        text,
        torch.zeros(2, 3, 8, 8),
        "red circle",
        steps=2,
        lr=1e-2,
        eta=1.0,
        gen=torch.Generator().manual_seed(0),
    )
    assert len(used) == 2 and all(m is edited for m in used) and edited is not unet


def test_sample_until_stops_after_k_ddim_steps(small_unet):
    """k = 0 is the noise itself at t = 999; after k steps x sits at the k-th DDIM timestep."""
    from diffusers import DDIMScheduler

    from cogfd import models

    unet, text = small_unet
    ddim = DDIMScheduler.from_config(models.make_scheduler().config, timestep_spacing="trailing")
    ddim.set_timesteps(5)
    args = (unet, text, "red", 2, (3, 8, 8), 5, 3.0)
    x0, t0 = baselines.sample_until(*args, 0, torch.Generator().manual_seed(1))
    noise = torch.randn((2, 3, 8, 8), generator=torch.Generator().manual_seed(1))
    assert torch.equal(x0, noise) and int(t0) == 999
    x2, t2 = baselines.sample_until(*args, 2, torch.Generator().manual_seed(1))
    assert int(t2) == int(ddim.timesteps[2]) and not torch.equal(x2, noise)
    # the same two steps by hand
    x = noise
    for t in ddim.timesteps[:2]:
        h, m = models.encode(text, ["", "", "red", "red"])
        eps_u, eps_c = models.denoise(unet, torch.cat([x, x]), t.expand(4), h, m).chunk(2)
        x = ddim.step(eps_u + 3.0 * (eps_c - eps_u), t, x).prev_sample
    torch.testing.assert_close(x2, x)


def test_esd_x_trains_cross_attention_only(small_unet):
    unet, text = small_unet
    edited, losses = baselines.esd_x(
        unet,
        text,
        torch.zeros(2, 3, 8, 8),
        "red circle",
        steps=2,
        lr=1e-2,
        eta=1.0,
        gen=torch.Generator().manual_seed(0),
    )
    changed = [
        k for k, v in edited.state_dict().items() if not torch.equal(v, unet.state_dict()[k])
    ]
    assert changed and all("attn2" in k for k in changed) and len(losses) == 2
