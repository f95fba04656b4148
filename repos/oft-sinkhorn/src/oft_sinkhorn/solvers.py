"""Three ways to the same EOFT fixed point, and the eps-annealing driver `oft_sinkhorn`.

- `jacobi`: the OFT-Sinkhorn iteration (eoft.Problem.jacobi_step), damped; damping < 0 is
  over-relaxation. One iteration = one evaluation of the plan.
- `anderson`: Anderson acceleration (type II, memory m) of that same map, restarted when the error
  stops falling. One iteration = one evaluation of the map.
- `lbfgs`: L-BFGS-B on the EOFT dual (below), whose gradient is minus the balance error, so its
  stationary point is the fixed point of the other two. One iteration = one evaluation of the dual
  (an L-BFGS step may take several; the count stops at max_iter even inside a line search).

EOFT dual (divided by eps), with phi = h / eps and nu_i >= 0 the multiplier of node i's bound:

    J(phi, nu) = <phi, s> - <nu, Q> + sum_e g_e(z_e),  z_e = phi_tail - phi_head - nu_head - D_e / eps,
    g_e(z) = -exp(z) for exp(z) <= c_e, else c_e (log c_e - 1) - c_e z,

concave and C^1 with dJ/dphi = s - P1 + P^T 1 and dJ/dnu = P^T 1 - Q; maximised by L-BFGS-B.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import scipy.optimize
import torch

from .config import SOLVERS
from .data import Instance, validate
from .eoft import Problem, Stage


class ConvergenceWarning(UserWarning):
    """An eps stage spent its iteration budget before the error fell under the tolerance."""


class _BudgetSpent(Exception):
    """Raised inside the dual evaluation once L-BFGS has spent max_iter evaluations."""


def run_jacobi(prob: Problem, h, eps, tol, max_iter, damping=0.5, check_every=10, **_):
    """Damped OFT-Sinkhorn until the error is under tol; returns (h, iterations, converged)."""
    for it in range(max_iter + 1):
        check = it % check_every == 0 or it == max_iter
        _, _, log_out, log_in, err = prob.evaluate(h, eps, with_error=check)
        if check and err < tol:
            return h, it, True
        if it == max_iter:
            break
        h = prob.jacobi_step(h, eps, damping, log_out, log_in)
    return h, max_iter, False


def run_anderson(prob: Problem, h, eps, tol, max_iter, damping=0.5, memory=10, check_every=10, **_):
    """Anderson-accelerated OFT-Sinkhorn; the memory restarts when about 100 iterations pass
    without the error falling by 1% (a stale history can stall the extrapolation)."""
    d_g, d_f, g_old, f_old = [], [], None, None
    best, stalled = math.inf, 0
    for it in range(max_iter + 1):
        check = it % check_every == 0 or it == max_iter
        _, _, log_out, log_in, err = prob.evaluate(h, eps, with_error=check)
        if check:
            if err < tol:
                return h, it, True
            best, stalled = (err, 0) if err < 0.99 * best else (best, stalled + 1)
            if stalled * check_every > 100:  # restart: plain steps rebuild the memory
                d_g, d_f, g_old, f_old, best, stalled = [], [], None, None, err, 0
        if it == max_iter:
            break
        g = prob.jacobi_step(h, eps, damping, log_out, log_in)
        f = g - h
        if g_old is not None:
            d_g, d_f = (d_g + [g - g_old])[-memory:], (d_f + [f - f_old])[-memory:]
        g_old, f_old = g, f
        if not d_f:
            h = g
            continue
        df, dg = torch.stack(d_f, 1), torch.stack(d_g, 1)
        gram = df.T @ df
        gram = gram + 1e-10 * torch.trace(gram) * torch.eye(
            len(d_f), dtype=h.dtype, device=h.device
        )
        gamma = torch.linalg.solve(gram, df.T @ f)
        h = g - dg @ gamma
        if not torch.all(torch.isfinite(h)):  # singular history: fall back to the plain step
            h, d_g, d_f, g_old, f_old = g, [], [], None, None
    return h, max_iter, False


def dual(prob: Problem, x: torch.Tensor, eps: float):
    """-J and -grad J at x = [phi, nu at the capped nodes], plus the stopping error."""
    n = prob.n
    phi, nu = x[:n], torch.zeros_like(x[:n])
    nu[prob.capped] = x[n:]
    z, log_p, log_out, log_in, err = prob.evaluate(torch.cat([phi, phi + nu]) * eps, eps)
    log_cap = prob.gibbs.log_cap
    over = torch.where(z > log_cap, z - log_cap, torch.zeros_like(z))  # saturated arcs
    arcs = -(log_p.exp() * (1 + over)).sum()
    cap = prob.log_node_cap.exp()
    value = (phi * prob.supply).sum() - (nu[prob.capped] * cap[prob.capped]).sum() + arcs
    inflow = log_in.exp()
    grad = torch.cat([prob.supply - log_out.exp() + inflow, (inflow - cap)[prob.capped]])
    return -value, -grad, err


def run_lbfgs(prob: Problem, h, eps, tol, max_iter, memory=10, **_):
    """L-BFGS-B on the EOFT dual from h, stopped by the same error test as the iterations."""
    n, capped = prob.n, prob.capped
    phi0 = h[:n] / eps
    x0 = torch.cat([phi0, ((h[n:] - h[:n]) / eps).clamp(min=0)[capped]])
    state = {"x": x0.cpu().numpy(), "evals": 0, "done": False}

    def fun(x):
        state["evals"] += 1
        value, grad, err = dual(prob, torch.as_tensor(x, dtype=prob.dtype, device=prob.device), eps)
        if err < tol and not state["done"]:
            state["x"], state["done"] = x.copy(), True
        if not state["done"] and state["evals"] >= max_iter:
            raise _BudgetSpent  # mid line search: keep the last accepted point
        return float(value), grad.cpu().numpy()

    def stop(intermediate_result):
        if not state["done"]:
            state["x"] = intermediate_result.x.copy()  # the last point L-BFGS accepted
        if state["done"] or state["evals"] >= max_iter:
            raise StopIteration

    try:
        scipy.optimize.minimize(
            fun,
            state["x"],
            jac=True,
            method="L-BFGS-B",
            bounds=[(None, None)] * n + [(0, None)] * int(capped.sum()),
            callback=stop,
            options={
                "maxiter": max_iter,
                "maxfun": max_iter,
                "maxcor": memory,
                "ftol": 0,
                "gtol": 0,
            },
        )
    except _BudgetSpent:
        pass
    x = torch.as_tensor(state["x"], dtype=prob.dtype, device=prob.device)
    nu = torch.zeros_like(x[:n])
    nu[capped] = x[n:]
    return torch.cat([x[:n], x[:n] + nu]) * eps, state["evals"], state["done"]


RUNNERS = {"jacobi": run_jacobi, "anderson": run_anderson, "lbfgs": run_lbfgs}


def oft_sinkhorn(
    inst: Instance,
    eps_schedule: tuple[float, ...],
    tol: float = 1e-4,
    max_iter: int = 5000,
    solver: str = "jacobi",
    damping: float = 0.5,
    memory: int = 10,
    kernel: str = "sparse",
    device: str = "cpu",
    dtype: torch.dtype = torch.float64,
    check_every: int = 10,
    budget: int | None = None,
) -> list[Stage]:
    """Capacity-constrained OFT-Sinkhorn with eps-scaling; eps values are absolute (cost units).

    Each stage runs `solver` from the previous stage's potentials until the error (balance
    residual + node-capacity excess, relative to ||s||_1) is under `tol` or `max_iter` is spent;
    the Stage records which (`converged`). With a total `budget` of iterations (tuning), the
    schedule ends early at the first stage that misses tol, without a warning.
    """
    validate(inst)
    if not eps_schedule or min(eps_schedule) <= 0:
        raise ValueError(f"eps_schedule must hold positive values, got {eps_schedule}")
    if not -1 < damping < 1:
        raise ValueError(f"damping must lie in (-1, 1) (negative: over-relaxation), got {damping}")
    if solver not in RUNNERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    start = time.perf_counter()
    prob = Problem(inst, kernel, device, dtype)
    h, stages, spent = prob.zeros(), [], 0
    for eps in eps_schedule:
        cap = max_iter if budget is None else max(0, min(max_iter, budget - spent))
        h, iterations, converged = RUNNERS[solver](
            prob, h, eps, tol, cap, damping=damping, memory=memory, check_every=check_every
        )
        spent += iterations
        _, log_p, log_out, log_in, _ = prob.evaluate(h, eps)
        flow = prob.gibbs.arc_values(log_p).exp().cpu().numpy()
        inflow = log_in.exp()
        residual = float((log_out.exp() - inflow - prob.supply).abs().sum()) / prob.scale
        excess = float((inflow - prob.log_node_cap.exp()).clamp(min=0).sum()) / prob.scale
        if not np.all(np.isfinite(flow)) or not math.isfinite(residual):
            raise FloatingPointError(f"OFT-Sinkhorn produced non-finite values at eps={eps:g}")
        if not converged and budget is None:
            warnings.warn(
                f"OFT-Sinkhorn ({solver}) spent max_iter={max_iter} at eps={eps:g} with error "
                f"{residual + excess:.1e} > tol={tol:g}; raise max_iter or use another solver",
                ConvergenceWarning,
                stacklevel=2,
            )
        seconds = time.perf_counter() - start
        cost = float(flow @ inst.cost)
        stages.append(
            Stage(eps, iterations, seconds, residual, excess, cost, flow, bool(converged))
        )
        if not converged and budget is not None:
            break
    return stages
