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
from torch.func import functional_call, grad, vmap

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


def per_sample_grads(
    module: Siren, params: Params, coords: torch.Tensor, weights: torch.Tensor
) -> Params:
    """For every module and sample j: grad_theta sum_c weights_jc f_c(x_j), by vmap(grad).

    params (M, ...), coords (M, m, 2), weights (M, m, 3) -> dict of (M, m, *param_shape)."""
    params = {k: v.detach() for k, v in params.items()}

    def weighted_output(p: Params, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (functional_call(module, p, (x[None],))[0] * w).sum()

    return vmap(vmap(grad(weighted_output), in_dims=(None, 0, 0)))(params, coords, weights.detach())


def fisher_trace(
    module: Siren, params: Params, coords: torch.Tensor, targets: torch.Tensor, sigma: float
) -> torch.Tensor:
    """Per-sample Fisher information trace I_j = ||s_j||^2 of the Gaussian score
    s_j = sum_c (y_jc - f_c(x_j)) grad_theta f_c(x_j) / sigma^2: shape (M, m)."""
    resid = targets - fields(module, {k: v.detach() for k, v in params.items()}, coords)
    scores = per_sample_grads(module, params, coords, resid / sigma**2)
    return sum(g.pow(2).flatten(2).sum(-1) for g in scores.values())


def layer_grads(
    module: Siren, params: Params, coords: torch.Tensor, weights: torch.Tensor
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per layer, the inputs a_j and the gradients delta_j = d(sum_c weights_jc f_c(x_j)) / d z_j
    of every MLP row's pre-activation, from one batched backward pass (samples never interact, so
    the gradient of the sum is each sample's own). A sample's gradient of that layer's weight is
    the outer product delta_j a_j^T, and of its bias delta_j: nothing per sample is materialised.
    With `module.group` = G > 1 rows per sample (a ray's points), rows j*G .. j*G+G-1 belong to
    sample j and its gradient is the sum of their outer products."""
    n_layers = len(module.layers)
    with torch.enable_grad():
        p = {k: v.detach().requires_grad_() for k, v in params.items()}
        taps: list[tuple[torch.Tensor, torch.Tensor]] = []
        out = module.reduce(
            siren_apply(
                module.omega0,
                [p[f"layers.{i}.weight"] for i in range(n_layers)],
                [p[f"layers.{i}.bias"] for i in range(n_layers)],
                module.lift(coords),
                taps,
            ),
            coords,
        )
        deltas = torch.autograd.grad((out * weights.detach()).sum(), [z for _, z in taps])
    return [(a.detach(), d) for (a, _), d in zip(taps, deltas)]


def fisher_trace_fast(
    module: Siren, params: Params, coords: torch.Tensor, targets: torch.Tensor, sigma: float
) -> torch.Tensor:
    """`fisher_trace` for a SIREN in closed form per layer: ||delta_j a_j^T||^2 + ||delta_j||^2
    = ||delta_j||^2 (||a_j||^2 + 1), summed over layers; exact, without per-sample gradients.

    A sample of G > 1 rows (a ray of G points) has the weight gradient sum_s delta_s a_s^T, whose
    squared norm is sum_{s,s'} (a_s . a_s')(delta_s . delta_s'); with the bias term that is the
    sum of the elementwise product of the G x G Gram matrices (A A^T + 1) and D D^T."""
    resid = targets - fields(module, {k: v.detach() for k, v in params.items()}, coords)
    grads = layer_grads(module, params, coords, resid / sigma**2)
    if module.group == 1:
        return sum(d.pow(2).sum(-1) * (a.pow(2).sum(-1) + 1) for a, d in grads)
    m = coords.shape[-2]
    total = 0
    for a, d in grads:
        a, d = a.unflatten(-2, (m, module.group)), d.unflatten(-2, (m, module.group))
        total = total + ((a @ a.transpose(-1, -2) + 1) * (d @ d.transpose(-1, -2))).sum((-1, -2))
    return total


def fim_weights(trace: torch.Tensor, lam: float) -> torch.Tensor:
    """FIM loss weights w_j = 1 + lam * I_j / mean(I), renormalised to mean 1 per module and
    detached (constants in the loss, so the model cannot lower the loss by moving the weights)."""
    w = 1 + lam * trace / trace.mean(-1, keepdim=True).clamp_min(1e-30)
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

    `create_graph=True` keeps the graph for second-order MAML; `fim=(lam, sigma)` switches on the
    FIM-weighted loss; `extra_loss` adds a penalty (EWC, replay); `on_step(s, params)` is called
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
            losses = losses * fim_weights(fisher_trace_fast(module, params, x, y, fim[1]), fim[0])
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
) -> torch.Tensor:
    """MAML outer objective (1/t) sum_i (1/m) sum_j l(f_{theta_i'}(x_ij), y_ij), averaged over the
    batch, where theta_i' is the inner loop's result for module i started from theta_0.

    First order: the inner gradients are constants, so d theta_i' / d theta_0 = Id."""
    params = broadcast(theta0, coords.shape[0])
    adapted = adapt(module, params, coords, targets, steps, lr, create_graph=not first_order)
    if first_order:
        adapted = {k: params[k] + (v - params[k]).detach() for k, v in adapted.items()}
    return point_losses(module, adapted, coords, targets).mean()


def fisher_trace_loop(
    module: Siren, params: Params, coords: torch.Tensor, targets: torch.Tensor, sigma: float
) -> torch.Tensor:
    """Slow, obvious reference for `fisher_trace`: one autograd call per module and sample."""
    trace = torch.zeros(coords.shape[:2], dtype=coords.dtype)
    for i in range(coords.shape[0]):
        p = {k: v[i].detach().requires_grad_() for k, v in params.items()}
        for j in range(coords.shape[1]):
            out = functional_call(module, p, (coords[i, j][None],))[0]
            score_dot = ((targets[i, j] - out).detach() * out).sum() / sigma**2
            trace[i, j] = sum(
                g.pow(2).sum() for g in torch.autograd.grad(score_dot, list(p.values()))
            )
    return trace
