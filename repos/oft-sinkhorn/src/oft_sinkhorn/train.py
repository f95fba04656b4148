"""train_and_evaluate(cfg, workdir) -> metrics: solve one instance with OFT-Sinkhorn and the exact
solvers, and measure the gap, the balance residual and the capacity violation of every eps stage.

"Training" here is solving: OFT-Sinkhorn has no learned parameters, only potentials per instance.
What `train` saves is the solution, the flow on every arc of the last eps stage (flow.npy);
`evaluate` reloads it with the run's instance and measures it against the exact optimum again.
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from . import baselines, data, eoft, solvers
from .config import Config, validate
from .results import atomic_write_bytes, atomic_write_json, read_config
from .runtime import resolve_device

EXACT_NAMES = {"ortools": "OR-Tools", "networkx": "networkx", "highs": "HiGHS"}
# Fields eval takes from its own command line; the run's config.json decides every other one.
CALLER_FIELDS = ("device", "out", "results_dir", "quiet", "name", "partial_out", "merge")


def generate(family: str, n: int, seed: int, degree: int, node_share: float = 0.5) -> data.Instance:
    """One instance of a benchmark family (see config.GENERATORS)."""
    if family == "uniform":
        return data.uniform_mcf(n, seed, degree=degree)
    return data.netgen_mcf(
        n,
        seed,
        degree=degree,
        capacitated=family != "netgen",
        node_share=node_share if family == "netgen-node" else 0.0,
    )


def load_instance(cfg: Config) -> data.Instance:
    return (
        data.read_dimacs(cfg.instance)
        if cfg.instance
        else generate(cfg.generator, cfg.n, cfg.seed, cfg.degree, cfg.node_share)
    )


def pin_threads(threads: int) -> None:
    """Hold torch and the BLAS / OpenMP pools numpy and scipy load to `threads` threads.

    numpy is imported before any config is read, so OPENBLAS_NUM_THREADS set then would come too
    late; threadpoolctl limits the loaded pools instead. Measured on the shared 2-core machine
    with another job on the second core: one L-BFGS solve of a netgen N = 50 instance took 71 s
    with OpenBLAS's default pool and 13 s with one thread (scipy's L-BFGS-B calls small BLAS
    routines every iteration, and an oversubscribed pool spins on each call)."""
    torch.set_num_threads(threads)
    threadpool_limits(limits=threads)


def solve(inst: data.Instance, cfg: Config, budget: int | None = None) -> list[eoft.Stage]:
    """OFT-Sinkhorn on `inst` with the config's schedule (eps relative to the largest |cost|);
    `budget` caps the total iterations (see solvers.oft_sinkhorn)."""
    pin_threads(cfg.threads)
    scale = float(np.abs(inst.cost).max(initial=1.0))
    return solvers.oft_sinkhorn(
        inst,
        tuple(e * scale for e in cfg.eps),
        tol=cfg.tol,
        max_iter=cfg.max_iter,
        solver=cfg.solver,
        damping=cfg.damping,
        memory=cfg.memory,
        kernel=cfg.kernel,
        device=cfg.device,
        dtype=torch.float32 if cfg.float32 else torch.float64,
        budget=budget,
    )


def is_integral(inst: data.Instance) -> bool:
    finite_cap = inst.capacity[np.isfinite(inst.capacity)]
    return all(np.all(a == np.round(a)) for a in (inst.cost, inst.supply, finite_cap))


def exact_reference(inst: data.Instance) -> dict[str, float]:
    """The oracle (every applicable exact solver, which must agree), the cost-blind floor and how
    many node bounds the optimum uses to the full."""
    names = list(EXACT_NAMES) if is_integral(inst) else ["highs"]
    exact = {name: baselines.EXACT[name](inst) for name in names}
    optimum = exact["highs"].cost
    for name, sol in exact.items():
        if abs(sol.cost - optimum) > 1e-6 * max(1.0, abs(optimum)):
            raise RuntimeError(f"exact solvers disagree: {name} {sol.cost} vs HiGHS {optimum}")
    inflow = np.bincount(inst.head, weights=exact["highs"].flow, minlength=inst.n)
    capped = np.isfinite(inst.node_capacity)
    binding = inflow[capped] >= inst.node_capacity[capped] * (1 - 1e-9)
    floor = baselines.cost_blind_flow(inst).cost
    effect = {"node_bound_effect": 0.0}  # no node bound drawn (small N): they raise nothing
    if capped.any():  # how much the node bounds raise the optimum
        free = dataclasses.replace(inst, node_capacity=np.full(inst.n, np.inf))
        effect["node_bound_effect"] = (optimum - baselines.highs_lp(free).cost) / abs(optimum)
    return (
        {"optimum": optimum, "floor_gap": (floor - optimum) / abs(optimum)}
        | {"arcs": float(inst.n_arcs)}  # beside N: the instance's size for the exact solvers
        | {"binding_node_bounds": float(binding.sum())}
        | effect
        | {f"{name}_seconds": sol.seconds for name, sol in exact.items()}
    )


def stage_metrics(inst: data.Instance, stages: list[eoft.Stage], eps, optimum: float) -> dict:
    """Per stage: signed gap of the raw plan, gap of its feasibility-restored flow, errors,
    iterations, convergence; then the same at the last stage without the '@eps' suffix."""
    gap = lambda cost: (cost - optimum) / abs(optimum)
    metrics: dict[str, float] = {}
    for rel, stage in zip(eps, stages):
        restored = baselines.restore_feasibility(inst, stage.flow).cost
        metrics |= {
            f"gap@{rel:g}": gap(stage.cost),
            f"restored_gap@{rel:g}": gap(restored),
            f"residual@{rel:g}": stage.residual,
            f"node_excess@{rel:g}": stage.node_excess,
            f"iterations@{rel:g}": float(stage.iterations),
            f"converged@{rel:g}": float(stage.converged),
            f"seconds@{rel:g}": stage.seconds,
        }
    reached = [
        s.seconds
        for rel, s in zip(eps, stages)
        if s.converged and metrics[f"restored_gap@{rel:g}"] < 0.01
    ]
    if reached:
        metrics["seconds_to_1pct"] = reached[0]
    last = f"@{eps[len(stages) - 1]:g}"
    metrics |= {k.removesuffix(last): v for k, v in metrics.items() if k.endswith(last)}
    metrics |= {
        "capacity_violation": eoft.capacity_violation(inst, stages[-1].flow),
        "iterations": float(sum(s.iterations for s in stages)),
        "converged": float(all(s.converged for s in stages)),
        "seconds": stages[-1].seconds,
    }
    return metrics


def flow_metrics(inst: data.Instance, flow: np.ndarray, optimum: float) -> dict[str, float]:
    """A flow per arc against the optimum: signed gap, gap of its feasibility-restored flow,
    balance residual, node-capacity excess (both relative to ||s||_1) and capacity violation."""
    gap = lambda cost: (cost - optimum) / abs(optimum)
    inflow = np.bincount(inst.head, weights=flow, minlength=inst.n)
    excess = np.maximum(inflow - inst.node_capacity, 0.0)[np.isfinite(inst.node_capacity)]
    return {
        "gap": gap(float(flow @ inst.cost)),
        "restored_gap": gap(baselines.restore_feasibility(inst, flow).cost),
        "residual": eoft.balance_residual(inst, flow),
        "node_excess": float(excess.sum() / np.abs(inst.supply).sum()),
        "capacity_violation": eoft.capacity_violation(inst, flow),
    }


def evaluate_instance(inst: data.Instance, cfg: Config, reference: dict | None = None) -> dict:
    """Exact reference (computed unless given), then OFT-Sinkhorn's stages measured against it."""
    reference = exact_reference(inst) if reference is None else reference
    on_gpu = str(cfg.device).startswith("cuda")
    if on_gpu:  # the full preset's memory figure: peak allocation of the whole schedule
        torch.cuda.reset_peak_memory_stats(cfg.device)
    stages = solve(inst, cfg)
    metrics = reference | stage_metrics(inst, stages, cfg.eps, reference["optimum"])
    if on_gpu:
        metrics["peak_gpu_mib"] = torch.cuda.max_memory_allocated(cfg.device) / 2**20
    return metrics


def stage_table(stages: list[eoft.Stage]) -> list[dict]:
    return [
        {f.name: getattr(s, f.name) for f in dataclasses.fields(s) if f.name != "flow"}
        for s in stages
    ]


def train_and_evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Solve cfg's instance; writes workdir/config.json first, then metrics.json, stages.json
    (one row per eps stage) and flow.npy (the last stage's flow per arc)."""
    cfg = dataclasses.replace(validate(cfg), device=resolve_device(cfg.device))
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(workdir / "config.json", dataclasses.asdict(cfg))
    inst = load_instance(cfg)
    reference = exact_reference(inst)
    stages = solve(inst, cfg)
    metrics = reference | stage_metrics(inst, stages, cfg.eps, reference["optimum"])
    atomic_write_json(workdir / "stages.json", stage_table(stages))
    buf = io.BytesIO()
    np.save(buf, stages[-1].flow)
    atomic_write_bytes(workdir / "flow.npy", buf.getvalue())
    atomic_write_json(workdir / "metrics.json", metrics)
    return metrics


def evaluate(cfg: Config, workdir: str | Path) -> dict[str, float]:
    """Reload the flow a previous `train` saved in workdir, rebuild its instance from its
    config.json (generated instances are a function of the seed; a DIMACS file is read again) and
    measure the flow against the exact optimum: flow_metrics plus the exact reference."""
    workdir = Path(workdir)
    saved = read_config(workdir / "config.json", Config, validate)
    run_cfg = dataclasses.replace(saved, **{k: getattr(cfg, k) for k in CALLER_FIELDS})
    flow_path = workdir / "flow.npy"
    try:
        flow = np.load(flow_path, allow_pickle=False)
    except FileNotFoundError:
        raise ValueError(f"{flow_path}: no such flow file; run `train` again") from None
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{flow_path}: unreadable flow file ({exc}); run `train` again") from None
    inst = load_instance(run_cfg)
    if flow.shape != (inst.n_arcs,) or not np.all(np.isfinite(flow)):
        raise ValueError(
            f"{flow_path}: expected {inst.n_arcs} finite arc flows of the run's instance, "
            f"got shape {flow.shape}"
        )
    reference = exact_reference(inst)
    return reference | flow_metrics(inst, flow, reference["optimum"])
