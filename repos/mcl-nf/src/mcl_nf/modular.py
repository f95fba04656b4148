"""MCL-NF: modular SIREN fields, a MAML-learned shared initialisation, and the FIM loss.

Every function works on *batched* functional parameters: a dict name -> tensor of shape
(M, *param_shape), one slice per module (or per signal). `torch.func.vmap` runs the M fields
together; since the M losses are summed, each slice's gradient is its own module's gradient, so
modules never interact (no forgetting by construction: learning sub-task k only moves theta_k).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn
from torch.func import functional_call, jacrev, vmap

Params = dict[str, torch.Tensor]


class Siren(nn.Module):
    """Coordinate MLP in_dim -> hidden -> hidden -> out_dim with sine activations (Sitzmann et
    al. 2020): 2 -> 3 for RGB images, 1 -> 1 for audio, 3 -> 3 for video.

    A field's *sample* (what the loss and the FIM weights are per) is one coordinate here; a
    subclass may map a sample to `group` MLP rows (`lift`) and the rows' outputs back to one
    value per sample (`reduce`), as `nerf.NerfField` does for a ray and its points."""

    group = 1
    """MLP rows per sample."""

    def __init__(self, hidden: int, omega0: float, in_dim: int = 2, out_dim: int = 3):
        super().__init__()
        self.omega0 = omega0
        self.layers = nn.ModuleList(
            [nn.Linear(in_dim, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, out_dim)]
        )
        with torch.no_grad():
            self.layers[0].weight.uniform_(-1 / in_dim, 1 / in_dim)
            bound = math.sqrt(6 / hidden) / omega0
            for layer in self.layers[1:]:
                layer.weight.uniform_(-bound, bound)

    def lift(self, samples: torch.Tensor) -> torch.Tensor:
        """Samples (..., m, in) -> MLP inputs (..., m * group, in_dim): coordinates as they are."""
        return samples

    def reduce(self, out: torch.Tensor, samples: torch.Tensor) -> torch.Tensor:
        """MLP outputs (..., m * group, out_dim) of `samples` -> one value each (..., m, C)."""
        return out

    def forward(self, coords: torch.Tensor) -> torch.Tensor:
        weights, biases = [la.weight for la in self.layers], [la.bias for la in self.layers]
        return self.reduce(siren_apply(self.omega0, weights, biases, self.lift(coords)), coords)


def siren_apply(
    omega0: float,
    weights: list[torch.Tensor],
    biases: list[torch.Tensor],
    x: torch.Tensor,
    taps: list[tuple[torch.Tensor, torch.Tensor]] | None = None,
) -> torch.Tensor:
    """The SIREN forward pass, for one field (W (o, i), x (m, i)) or a batch of M fields
    (W (M, o, i), x (M, m, i)). `taps` collects each layer's input a and pre-activation z."""
    for i, (w, b) in enumerate(zip(weights, biases)):
        z = x @ w.transpose(-1, -2) + b.unsqueeze(-2)
        if taps is not None:
            taps.append((x, z))
        x = torch.sin(omega0 * z) if i < len(weights) - 1 else z
    return x + 0.5  # signals live in [0, 1]


def init_params(
    hidden: int,
    omega0: float,
    seed: int,
    device: str = "cpu",
    in_dim: int = 2,
    out_dim: int = 3,
    make: Callable[..., Siren] = Siren,
) -> tuple[Siren, Params]:
    """A template module (for functional calls) and its freshly initialised parameters;
    `make(hidden, omega0, in_dim, out_dim)` builds it (a Siren, or e.g. a NeRF field)."""
    torch.manual_seed(seed)
    module = make(hidden, omega0, in_dim, out_dim).to(device)
    return module, {k: v.detach().clone() for k, v in module.named_parameters()}


def broadcast(params: Params, copies: int) -> Params:
    """theta_0 -> M copies (every module starts from the shared initialisation)."""
    return {k: v.unsqueeze(0).expand(copies, *v.shape) for k, v in params.items()}


def fields(module: Siren, params: Params, coords: torch.Tensor) -> torch.Tensor:
    """Evaluate M fields at once: params (M, ...), coords (M, m, in_dim) -> (M, m, out_dim)."""
    return vmap(lambda p, x: functional_call(module, p, (x,)))(params, coords)


def point_losses(
    module: Siren, params: Params, coords: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """Squared error per sample l_j, averaged over colour channels: (M, m)."""
    return ((fields(module, params, coords) - targets) ** 2).mean(-1)


def tapped_forward(
    module: Siren, params: Params, coords: torch.Tensor
) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
    """Outputs per sample of detached copies of params, and each layer's (input a, pre-activation
    z) for backward passes to z (call under torch.enable_grad)."""
    n_layers = len(module.layers)
    p = {k: v.detach().requires_grad_() for k, v in params.items()}
    taps: list[tuple[torch.Tensor, torch.Tensor]] = []
    out = siren_apply(
        module.omega0,
        [p[f"layers.{i}.weight"] for i in range(n_layers)],
        [p[f"layers.{i}.bias"] for i in range(n_layers)],
        module.lift(coords),
        taps,
    )
    return module.reduce(out, coords), taps


def layer_grads(
    module: Siren, params: Params, coords: torch.Tensor, weights: torch.Tensor
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per layer, the inputs a_j and the gradients delta_j = d(sum_c weights_jc f_c(x_j)) / d z_j
    of every MLP row's pre-activation, from one batched backward pass (samples never interact, so
    the gradient of the sum is each sample's own). A sample's gradient of that layer's weight is
    the outer product delta_j a_j^T, and of its bias delta_j: nothing per sample is materialised.
    With `module.group` = G > 1 rows per sample (a ray's points), rows j*G .. j*G+G-1 belong to
    sample j and its gradient is the sum of their outer products."""
    with torch.enable_grad():
        out, taps = tapped_forward(module, params, coords)
        deltas = torch.autograd.grad((out * weights.detach()).sum(), [z for _, z in taps])
    return [(a.detach(), d) for (a, _), d in zip(taps, deltas)]


def information_gain(
    module: Siren, params: Params, coords: torch.Tensor, damping: float
) -> torch.Tensor:
    """Per-sample information gain of FisherRF (Jiang et al. 2024), label-free: (M, m).

    With a Gaussian likelihood the Fisher of sample j is J_j^T J_j / sigma^2 (J_j: the Jacobian
    of its C outputs in theta), which needs no target. FisherRF scores new data by
    tr(F_j (F_batch + eps I)^{-1}) with the diagonal approximation of the batch Fisher, so
    g_j = sum_p d_jp / (sum_i d_ip + eps), d_jp = sum_c (df_c(x_j) / d theta_p)^2: the share of
    every parameter's batch information that sample j holds (sigma cancels). eps = damping x the
    module's mean diagonal. Per layer d_j is delta_j^2 (a_j^2)^T for the weight and delta_j^2 for
    the bias (as in `layer_grads`, one backward pass per output channel); for G > 1 rows per sample
    (a NeRF ray) d_j = (sum_s delta_s a_s^T)^2, formed per sample."""
    with torch.enable_grad():  # one forward pass, one backward pass per output channel
        out, taps = tapped_forward(module, params, coords)
        zs = [z for _, z in taps]
        per_channel = [
            torch.autograd.grad(out[..., c].sum(), zs, retain_graph=c < out.shape[-1] - 1)
            for c in range(out.shape[-1])
        ]
    m, g = coords.shape[-2], module.group
    sq = []  # per layer: per-sample squared gradients summed over channels, (weight, bias)
    for i, (a, _) in enumerate(taps):
        a = a.detach()
        deltas = [grads[i] for grads in per_channel]
        if g == 1:
            sq.append((a.pow(2), sum(d.pow(2) for d in deltas)))
            continue
        a = a.unflatten(-2, (m, g))
        weight = sum((d.unflatten(-2, (m, g)).transpose(-1, -2) @ a).pow(2) for d in deltas)
        bias = sum(d.unflatten(-2, (m, g)).sum(-2).pow(2) for d in deltas)
        sq.append((weight, bias))
    if g == 1:  # weight: d_j[o, i] = D_jo A_ji, never materialised per sample
        fisher = [(d.transpose(-1, -2) @ a, d.sum(-2)) for a, d in sq]
    else:
        fisher = [(w.sum(-3), b.sum(-2)) for w, b in sq]
    count = sum(w[0].numel() + b[0].numel() for w, b in fisher)
    mean = sum(w.flatten(1).sum(1) + b.flatten(1).sum(1) for w, b in fisher) / count
    eps = (damping * mean).clamp_min(1e-30)
    gain = 0
    for (w_sq, b_sq), (w_f, b_f) in zip(sq, fisher):
        w_pre = 1 / (w_f + eps[:, None, None])
        b_pre = 1 / (b_f + eps[:, None])
        if g == 1:
            gain = gain + (b_sq * (w_sq @ w_pre.transpose(-1, -2))).sum(-1)
        else:
            gain = gain + (w_sq * w_pre[:, None]).sum((-1, -2))
        gain = gain + (b_sq * b_pre[:, None]).sum(-1)
    return gain.detach()


def information_gain_reference(
    module: Siren, params: Params, coords: torch.Tensor, damping: float
) -> torch.Tensor:
    """Slow, obvious reference for `information_gain`: full per-sample Jacobians by vmap(jacrev)."""
    params = {k: v.detach() for k, v in params.items()}

    def outputs(p: Params, x: torch.Tensor) -> torch.Tensor:
        return functional_call(module, p, (x[None],))[0]

    jac = vmap(vmap(jacrev(outputs), in_dims=(None, 0)))(params, coords)
    d = torch.cat([j.pow(2).sum(2).flatten(2) for j in jac.values()], -1)  # (M, m, P)
    fisher = d.sum(1, keepdim=True)
    eps = damping * fisher.mean(-1, keepdim=True)
    return (d / (fisher + eps)).sum(-1)


def fim_weights(gain: torch.Tensor, lam: float) -> torch.Tensor:
    """FIM loss weights w_j = 1 + lam * g_j / mean(g), renormalised to mean 1 per module and
    detached (constants in the loss, so the model cannot lower the loss by moving the weights)."""
    w = 1 + lam * gain / gain.mean(-1, keepdim=True).clamp_min(1e-30)
    return (w / w.mean(-1, keepdim=True)).detach()


def adapt(
    module: Siren,
    params: Params,
    coords: torch.Tensor,
    targets: torch.Tensor,
    steps: int,
    lr: float,
    create_graph: bool = False,
    fim: tuple[float, float] | None = None,
    extra_loss: Callable[[Params], torch.Tensor] | None = None,
    on_step: Callable[[int, Params], None] | None = None,
    batch: tuple[int, int] | None = None,
) -> Params:
    """Inner loop: theta^(s+1) = theta^(s) - lr * grad (1/m) sum_j w_j l_j(theta^(s)), per module.

    `create_graph=True` keeps the graph for second-order MAML; `fim=(lam, damping)` switches on
    the FIM-weighted loss (weights from `information_gain` at the current parameters); `extra_loss` adds a penalty (EWC, replay); `on_step(s, params)` is called
    after step s (1-based) for evaluation at intermediate step counts. `batch=(size, seed)`: each
    step uses `size` random samples (the same for every module), as NeRF fits ray batches; the
    FIM weights are then normalised over the batch.
    """
    if not create_graph:
        params = {k: v.detach().clone().requires_grad_() for k, v in params.items()}
    gen = torch.Generator().manual_seed(batch[1]) if batch is not None else None
    for step in range(1, steps + 1):
        x, y = coords, targets
        if batch is not None and batch[0] < coords.shape[-2]:
            keep = torch.randperm(coords.shape[-2], generator=gen)[: batch[0]].to(coords.device)
            x, y = coords[:, keep], targets[:, keep]
        losses = point_losses(module, params, x, y)
        if fim is not None and fim[0] > 0:
            losses = losses * fim_weights(information_gain(module, params, x, fim[1]), fim[0])
        loss = losses.mean(-1).sum()
        if extra_loss is not None:
            loss = loss + extra_loss(params)
        grads = torch.autograd.grad(loss, list(params.values()), create_graph=create_graph)
        params = {k: v - lr * g for (k, v), g in zip(params.items(), grads)}
        if not create_graph:
            params = {k: v.detach().requires_grad_() for k, v in params.items()}
        if on_step is not None:
            on_step(step, params)
    return params


def fit_modules(
    module: Siren,
    theta0: Params,
    coords: torch.Tensor,
    targets: torch.Tensor,
    steps: int,
    lr: float,
    fim: tuple[float, float] | None = None,
    on_step: Callable[[int, int, Params], None] | None = None,
    batch: tuple[int, int] | None = None,
) -> list[Params]:
    """Test-time MCL-NF on n signals at once: for sub-tasks k = 1..t in order, module k starts
    from theta_0 and takes `steps` SGD steps on sub-task k's data only (no replay); finished
    modules are never touched again. coords (t, m, d), targets (n, t, m, C); on_step(k, s, params);
    `batch` as in `adapt`, its seed advanced per sub-task. Returns the t finished modules, each
    batched over the n signals."""
    n, t = targets.shape[:2]
    finished: list[Params] = []
    for k in range(t):

        def record(step: int, p: Params, k: int = k) -> None:
            if on_step is not None:
                on_step(k, step, p)

        x = coords[k].expand(n, -1, -1)
        fitted = adapt(
            module,
            broadcast(theta0, n),
            x,
            targets[:, k],
            steps,
            lr,
            fim=fim,
            on_step=record,
            batch=(batch[0], batch[1] + k) if batch is not None else None,
        )
        finished.append({name: v.detach() for name, v in fitted.items()})
    return finished


def maml_outer_loss(
    module: Siren,
    theta0: Params,
    coords: torch.Tensor,
    targets: torch.Tensor,
    steps: int,
    lr: float,
    first_order: bool,
    fim: tuple[float, float] | None = None,
) -> torch.Tensor:
    """MAML outer objective (1/t) sum_i (1/m) sum_j l(f_{theta_i'}(x_ij), y_ij), averaged over the
    batch, where theta_i' is the inner loop's result for module i started from theta_0.

    First order: the inner gradients are constants, so d theta_i' / d theta_0 = Id. `fim`: the
    inner loop uses the FIM loss (its weights are constants, so they carry no meta-gradient)."""
    params = broadcast(theta0, coords.shape[0])
    adapted = adapt(module, params, coords, targets, steps, lr, not first_order, fim)
    if first_order:
        adapted = {k: params[k] + (v - params[k]).detach() for k, v in adapted.items()}
    return point_losses(module, adapted, coords, targets).mean()
