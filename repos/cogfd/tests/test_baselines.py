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
    lam = 0.3
    a = np.vstack([c_e.numpy(), c_p.numpy(), np.sqrt(lam) * np.eye(4)])
    b = np.vstack([v.numpy(), (c_p @ w.T).numpy(), np.sqrt(lam) * w.T.numpy()])
    ref = np.linalg.lstsq(a, b, rcond=None)[0].T
    np.testing.assert_allclose(baselines.uce_solve(w, c_e, v, c_p, lam).numpy(), ref, atol=1e-10)


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
