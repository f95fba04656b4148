"""Entropic Optimal Flow Transport (EOFT) and the OFT-Sinkhorn iteration, in the log domain.

OFT (paper Eq. 1): min_{P >= 0} <D, P>  s.t.  P1 - P^T 1 = s,  supp P on the graph's arcs.
EOFT adds eps * sum P (log P - 1). With the virtual self-flow and the unknown throughput q the
constraints become marginal-like (row sums q + s + d, column sums q + d), and stationarity in q
forces u * v = 1 (Prop. 2): one node potential h, with x_i = u_i = exp(h_i / eps) and

    P_ij = exp((h_i - h_j - D_ij) / eps) = x_i K_ij / x_j.                     (Gibbs form, Prop. 2)

Node i's balance then reads a_i x_i - b_i / x_i = s_i with a_i = sum_j K_ij / x_j and
b_i = sum_j K_ji x_j, whose positive root is x_i = (s_i + sqrt(s_i^2 + 4 a_i b_i)) / (2 a_i).
OFT-Sinkhorn moves every node to its root at once (damped, `jacobi_step`), anneals eps (warm
starts), and stops a stage when the relative balance residual ||P1 - P^T 1 - s||_1 / ||s||_1 (plus
any node-capacity excess) falls under a tolerance. The same fixed point is reached faster by
Anderson acceleration of that map or by L-BFGS on the EOFT dual (`solvers.py`).

Capacities (capacity-constrained EOFT):
- arcs (Prop. 3): K_ij <- min(K_ij, c_ij / (u_i v_j)), i.e. log P_ij <- min(log P_ij, log c_ij);
- nodes: the throughput q_i (inflow) is truncated at its bound Q_i. The node then keeps two
  potentials: h_in for its incoming arcs, h_out for its outgoing ones (h_in >= h_out, the gap
  being the multiplier of the bound), so that inflow = Q_i and outflow = Q_i + s_i.
Both truncations are recomputed at every iteration; a fixed point is the KKT point of the
capacitated EOFT problem, and what the iteration reaches is measured, not assumed.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from .data import Instance

LOG2 = math.log(2.0)


class SparseKernel:
    """The Gibbs kernel on an arc list: O(|E|) memory, node sums by scatter log-sum-exp."""

    def __init__(self, inst: Instance, device: str, dtype: torch.dtype):
        as_t = lambda a, dt=dtype: torch.as_tensor(a, dtype=dt, device=device)
        self.n, self.tail, self.head = (
            inst.n,
            as_t(inst.tail, torch.long),
            as_t(inst.head, torch.long),
        )
        self.cost, self.log_cap = as_t(inst.cost), torch.log(as_t(inst.capacity))

    def exponent(self, phi_out: torch.Tensor, phi_in: torch.Tensor, eps: float) -> torch.Tensor:
        """z_e = phi_out[tail] - phi_in[head] - D_e / eps, the untruncated log P_e."""
        return phi_out[self.tail] - phi_in[self.head] - self.cost / eps

    def log_outflow(self, log_p: torch.Tensor) -> torch.Tensor:
        return segment_logsumexp(log_p, self.tail, self.n)

    def log_inflow(self, log_p: torch.Tensor) -> torch.Tensor:
        return segment_logsumexp(log_p, self.head, self.n)

    def arc_values(self, log_p: torch.Tensor) -> torch.Tensor:
        return log_p


class DenseKernel:
    """The Gibbs kernel as an N x N matrix (-inf off the graph): O(N^2) memory, GPU-friendly
    matrix reductions. Needs at most one arc per ordered node pair."""

    def __init__(self, inst: Instance, device: str, dtype: torch.dtype):
        if np.unique(inst.tail * inst.n + inst.head).size != inst.n_arcs:
            raise ValueError(
                "the dense kernel needs at most one arc per node pair; use kernel='sparse'"
            )
        self.tail = torch.as_tensor(inst.tail, device=device)
        self.head = torch.as_tensor(inst.head, device=device)
        self.cost = torch.full((inst.n, inst.n), math.inf, dtype=dtype, device=device)
        self.cost[self.tail, self.head] = torch.as_tensor(inst.cost, dtype=dtype, device=device)
        self.log_cap = torch.full_like(self.cost, math.inf)
        self.log_cap[self.tail, self.head] = torch.log(
            torch.as_tensor(inst.capacity, dtype=dtype, device=device)
        )

    def exponent(self, phi_out: torch.Tensor, phi_in: torch.Tensor, eps: float) -> torch.Tensor:
        return phi_out[:, None] - phi_in[None, :] - self.cost / eps

    def log_outflow(self, log_p: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(log_p, dim=1)

    def log_inflow(self, log_p: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(log_p, dim=0)

    def arc_values(self, log_p: torch.Tensor) -> torch.Tensor:
        return log_p[self.tail, self.head]


KERNELS = {"sparse": SparseKernel, "dense": DenseKernel}


def segment_logsumexp(values: torch.Tensor, index: torch.Tensor, n: int) -> torch.Tensor:
    """out[i] = log sum_{e: index[e] = i} exp(values[e]); -inf for an empty segment.

    Unlike torch_geometric.utils.segment_logsumexp (tested against it) the index need not be
    sorted, so one arc list serves both the outflow (by tail) and the inflow (by head) sums."""
    peak = torch.full((n,), -math.inf, dtype=values.dtype, device=values.device)
    peak = peak.scatter_reduce(0, index, values, reduce="amax")
    peak = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
    total = torch.zeros_like(peak).index_add_(0, index, torch.exp(values - peak[index]))
    return torch.log(total) + peak


def balance_root(log_a: torch.Tensor, log_b: torch.Tensor, supply: torch.Tensor) -> torch.Tensor:
    """log x solving a x - b / x = s (the per-node balance), in log-sum-exp form.

    x = (s + sqrt(s^2 + 4ab)) / (2a) for s >= 0 and the rationalised 2b / (-s + sqrt(s^2 + 4ab))
    for s < 0, so that neither form subtracts nearly equal numbers; sqrt(b / a) for s = 0, which is
    +inf (-inf) for a node with arcs only in (out) and NaN for a node without arcs.
    """
    log_s = torch.log(supply.abs())
    log_4ab = 2 * LOG2 + log_a + log_b
    half_log_root = 0.5 * torch.logaddexp(2 * log_s, log_4ab)  # log sqrt(s^2 + 4ab)
    plus = torch.logaddexp(log_s, half_log_root)  # log(|s| + sqrt(s^2 + 4ab))
    root = torch.where(supply > 0, plus - LOG2 - log_a, LOG2 + log_b - plus)
    return torch.where(supply == 0, 0.5 * (log_b - log_a), root)


class Problem:
    """An instance on a device: the kernel, supplies, node bounds and the error measure.

    The iterate is one tensor h = [h_out, h_in] of 2N potentials (cost units); h_in differs from
    h_out only at nodes whose throughput bound is active."""

    def __init__(self, inst: Instance, kernel: str, device: str, dtype: torch.dtype):
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {sorted(KERNELS)}, got {kernel!r}")
        self.n, self.dtype, self.device = inst.n, dtype, device
        self.gibbs = KERNELS[kernel](inst, device, dtype)
        self.supply = torch.as_tensor(inst.supply, dtype=dtype, device=device)
        self.log_node_cap = torch.log(
            torch.as_tensor(inst.node_capacity, dtype=dtype, device=device)
        )
        self.capped = torch.isfinite(self.log_node_cap)
        self.scale = float(np.abs(inst.supply).sum())
        # Potentials of a feasible problem differ by at most a path length, and are fixed up to a
        # constant that we pin by keeping the median at 0. Nodes that no flow can use (dead ends)
        # drift to +-bound instead of infinity, where their flow is below exp(-n max|D| / eps).
        self.bound = 2 * (inst.n + 1) * max(1.0, float(np.abs(inst.cost).max(initial=0.0)))

    def zeros(self) -> torch.Tensor:
        return torch.zeros(2 * self.n, dtype=self.dtype, device=self.device)

    def split(self, h: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
        """(phi_out, phi_in) = h / eps."""
        return h[: self.n] / eps, h[self.n :] / eps

    def evaluate(self, h: torch.Tensor, eps: float, with_error: bool = True):
        """The truncated Gibbs plan at h: (z, log P, log outflow, log inflow, error or None)."""
        phi_out, phi_in = self.split(h, eps)
        z = self.gibbs.exponent(phi_out, phi_in, eps)
        log_p = torch.minimum(z, self.gibbs.log_cap)  # Prop. 3's truncation
        log_out, log_in = self.gibbs.log_outflow(log_p), self.gibbs.log_inflow(log_p)
        return z, log_p, log_out, log_in, self.error(log_out, log_in) if with_error else None

    def error(self, log_out: torch.Tensor, log_in: torch.Tensor) -> float:
        """(||P1 - P^T 1 - s||_1 + sum_i (inflow_i - Q_i)_+) / ||s||_1: the stopping criterion."""
        out, inflow = log_out.exp(), log_in.exp()
        excess = (inflow - self.log_node_cap.exp()).clamp(min=0)
        return float((out - inflow - self.supply).abs().sum() + excess.sum()) / self.scale

    def jacobi_step(self, h: torch.Tensor, eps: float, damping: float, log_out, log_in):
        """One OFT-Sinkhorn update from the node sums at h: every node to its balance root."""
        phi_out, phi_in = self.split(h, eps)
        log_a, log_b = log_out - phi_out, log_in + phi_in  # a_i, b_i of the balance equation
        root = balance_root(log_a, log_b, self.supply)
        root = torch.where(torch.isnan(root), phi_out, root)  # no arcs: the self-flow holds it
        over = log_b - root > self.log_node_cap  # throughput (inflow b / x) above the bound
        new_in = torch.where(over, log_b - self.log_node_cap, root)
        new_out = torch.where(over, torch.log(self.supply + self.log_node_cap.exp()) - log_a, root)
        target = (eps * torch.cat([new_out, new_in])).clamp(-self.bound, self.bound)
        new = damping * h + (1 - damping) * target
        return new - new[: self.n].median()


@dataclasses.dataclass
class Stage:
    """The state of the iteration at the end of one eps of the annealing schedule."""

    eps: float
    iterations: int
    """Iterations this stage took (map or gradient evaluations' worth, see solvers.py)."""
    seconds: float
    """Wall time since the solver started (cumulative over stages)."""
    residual: float
    """||P1 - P^T 1 - s||_1 / ||s||_1 of the plan below."""
    node_excess: float
    """sum_i (inflow_i - Q_i)_+ / ||s||_1 of the plan below (0 without node capacities)."""
    cost: float
    flow: np.ndarray
    """Flow on each arc, in the instance's arc order."""
    converged: bool
    """Whether residual + node_excess fell under the tolerance within the iteration budget."""


def capacity_violation(inst: Instance, flow: np.ndarray) -> float:
    """max over arcs and nodes of (flow - capacity)_+ / capacity (0 when all bounds hold)."""
    arcs = np.isfinite(inst.capacity)
    inflow = np.bincount(inst.head, weights=flow, minlength=inst.n)
    nodes = np.isfinite(inst.node_capacity)
    ratios = np.concatenate(
        [
            np.maximum(flow[arcs] - inst.capacity[arcs], 0)
            / np.maximum(inst.capacity[arcs], 1e-300),
            np.maximum(inflow[nodes] - inst.node_capacity[nodes], 0)
            / np.maximum(inst.node_capacity[nodes], 1e-300),
        ]
    )
    return float(ratios.max(initial=0.0))


def balance_residual(inst: Instance, flow: np.ndarray) -> float:
    """||P1 - P^T 1 - s||_1 / ||s||_1 for a flow given per arc."""
    net = np.bincount(inst.tail, weights=flow, minlength=inst.n) - np.bincount(
        inst.head, weights=flow, minlength=inst.n
    )
    return float(np.abs(net - inst.supply).sum() / np.abs(inst.supply).sum())
