"""Time-directed constraint-based discovery (paper Alg. 1) and the SigKer-CI edge test.

An edge test answers "is i a parent of j, given candidate set S?" with a p-value. The algorithm
is PC-stable edge removal over growing conditioning sets drawn from j's remaining candidate
parents; orientation needs no extra step because the test compares the past of i with the
future of j. Surviving edges then pass a Benjamini-Hochberg step on their largest p-values
(multiple-testing control across the whole graph).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import networkx as nx
import numpy as np
from scipy.stats import false_discovery_control

from . import citest, sigkernel

EdgeTest = Callable[[int, int, tuple[int, ...]], float]


class PathData:
    """Observed paths (n, L, d) with times, names and the past/future split s, s + h."""

    def __init__(
        self,
        paths: np.ndarray,
        times: np.ndarray,
        s: float,
        h: float,
        names: Sequence[str] | None = None,
    ):
        self.paths = sigkernel.check_paths(paths)
        times = np.asarray(times, dtype=np.float64)
        if times.shape not in (self.paths.shape[1:2], self.paths.shape[:2]):
            raise ValueError(
                f"times must have shape {self.paths.shape[1:2]} or {self.paths.shape[:2]} "
                f"for paths of shape {self.paths.shape}, got {times.shape}"
            )
        self.times = np.broadcast_to(times, self.paths.shape[:2])
        if not (np.isfinite(self.times).all() and (np.diff(self.times, axis=1) > 0).all()):
            raise ValueError(
                "observation times must be finite and strictly increasing on every path"
            )
        t0, t1 = float(self.times[:, 0].max()), float(self.times[:, -1].min())
        if not t0 < s < t1 or h <= 0 or s + h > t1 + 1e-12:
            raise ValueError(f"need {t0} < s < s + h <= {t1} on the time grid, got s={s}, h={h}")
        self.s, self.h = s, h
        self.d = self.paths.shape[2]
        self.names = list(names) if names is not None else [f"X{k}" for k in range(self.d)]
        if len(self.names) != self.d:
            raise ValueError(f"{len(self.names)} names for {self.d} variables")

    def index(self, var: int | str) -> int:
        """Variable index from an index or a name; unknown variables raise a ValueError."""
        if isinstance(var, str):
            if var not in self.names:
                raise ValueError(f"unknown variable {var!r}; known variables are {self.names}")
            return self.names.index(var)
        if not 0 <= int(var) < self.d:
            raise ValueError(f"unknown variable index {var}; expected 0..{self.d - 1}")
        return int(var)

    def window(self, k: int, lo: float, hi: float) -> np.ndarray:
        """Time-augmented segment of variable k on [lo, hi]."""
        return citest.segment(self.paths[..., k : k + 1], self.times, lo, hi)


class SigKerTest:
    """SigKer-CI edge test `X^i_[0,s] _||_ X^j_[s,s+h] | X^j_[0,s], X^S_[0,s+h]`, Grams cached.

    `variant` names the negative controls of the benchmark: "no-cond" drops the conditioning
    set (the test's ingredient that makes it a CI test), "shuffled" permutes the paths of i's
    past across samples (no dependence left by construction).
    """

    VARIANTS = ("full", "no-cond", "shuffled")

    def __init__(
        self,
        data: PathData,
        refinement: int,
        n_perm: int,
        ridge: float,
        seed: int,
        variant: str = "full",
        statistic: str = "hsic",
    ):
        if variant not in self.VARIANTS:
            raise ValueError(f"variant must be one of {self.VARIANTS}, got {variant!r}")
        if statistic not in citest.STATISTICS:
            raise ValueError(f"statistic must be one of {citest.STATISTICS}, got {statistic!r}")
        self.statistic = statistic
        self.data, self.refinement, self.n_perm = data, refinement, n_perm
        self.ridge, self.seed, self.variant = ridge, seed, variant
        self._grams: dict[tuple[int, str], np.ndarray] = {}

    def at(
        self, ridge: float | None = None, variant: str | None = None, statistic: str | None = None
    ) -> SigKerTest:
        """The same test with another ridge, variant or statistic, sharing the cached Grams."""
        other = SigKerTest(
            self.data,
            self.refinement,
            self.n_perm,
            self.ridge if ridge is None else ridge,
            self.seed,
            self.variant if variant is None else variant,
            self.statistic if statistic is None else statistic,
        )
        other._grams = self._grams
        return other

    def gram(self, k: int, part: str) -> np.ndarray:
        """Normalised signature Gram of variable k on its past, future or past+future window."""
        if (k, part) not in self._grams:
            s, h = self.data.s, self.data.h
            lo, hi = {"past": (0.0, s), "future": (s, s + h), "upto": (0.0, s + h)}[part]
            self._grams[k, part] = citest.normalised_gram(
                self.data.window(k, lo, hi), self.refinement
            )
        return self._grams[k, part]

    def __call__(self, i: int | str, j: int | str, cond: Sequence[int | str] = ()) -> float:
        i, j = self.data.index(i), self.data.index(j)
        cond = tuple(self.data.index(k) for k in cond)
        if i == j or j in cond or i in cond:
            raise ValueError(f"i={i}, j={j} and the conditioning set {cond} must be disjoint")
        kz = self.gram(j, "past").copy()
        for k in cond:
            kz *= self.gram(k, "upto")
        kx = self.gram(i, "past")
        rng = np.random.default_rng([self.seed, i, j, *cond])
        if self.variant == "no-cond":
            kz = None
        elif self.variant == "shuffled":
            perm = np.random.default_rng([self.seed, i, j, *cond, 7]).permutation(len(kx))
            kx = kx[np.ix_(perm, perm)]
        ky = self.gram(j, "future")
        if self.statistic == "sdcit":
            return citest.sdcit_test(kx, ky, kz, self.n_perm, rng)[1]
        return citest.kernel_ci_test(kx, ky, kz, self.n_perm, rng, self.ridge)[1]


def discover(
    d: int, edge_test: EdgeTest, alpha: float, max_cond: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Alg. 1: remove i -> j once some S from j's other candidates gives p > alpha; then BH.

    Returns (graph (d, d) bool, p (d, d): the largest p-value each edge saw).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    adj = ~np.eye(d, dtype=bool)
    pmax = np.zeros((d, d))
    max_cond = d - 2 if max_cond is None else max_cond
    for size in range(max_cond + 1):
        frozen = adj.copy()  # PC-stable: candidate sets fixed within one size
        for j in range(d):
            for i in np.flatnonzero(frozen[:, j]):
                others = [k for k in np.flatnonzero(frozen[:, j]) if k != i]
                for cond in itertools.combinations(others, size):
                    p = edge_test(int(i), j, tuple(int(k) for k in cond))
                    pmax[i, j] = max(pmax[i, j], p)
                    if p > alpha:
                        adj[i, j] = False
                        break
    return bh_prune(adj, pmax, alpha), pmax


def bh_prune(adj: np.ndarray, p: np.ndarray, alpha: float) -> np.ndarray:
    """Keep the edges of `adj` whose p-values pass Benjamini-Hochberg at level alpha."""
    out = np.zeros_like(adj)
    if adj.any():
        out[adj] = false_discovery_control(p[adj], method="bh") <= alpha
    return out


def dsep_oracle(graph: np.ndarray, observed: Sequence[int] | None = None) -> EdgeTest:
    """CI oracle from d-separation on the time-unrolled graph (past and future slice per variable).

    Each variable has nodes (k, past) -> (k, future); an edge a -> b adds (a, past) -> (b, past),
    (a, past) -> (b, future) and (a, future) -> (b, future). Returns p = 1 for independence, 0 else.
    With `observed`, the oracle answers queries about the observed variables only, numbered
    0..len(observed) - 1 as in the observed data; the others stay latent (partial observation).
    """
    obs = list(range(len(graph))) if observed is None else [int(k) for k in observed]
    g = nx.DiGraph()
    d = len(graph)
    g.add_edges_from(((k, "p"), (k, "f")) for k in range(d))
    for a, b in zip(*np.nonzero(graph)):
        g.add_edges_from([((a, "p"), (b, "p")), ((a, "p"), (b, "f")), ((a, "f"), (b, "f"))])

    def test(i: int, j: int, cond: tuple[int, ...]) -> float:
        i, j, cond = obs[i], obs[j], [obs[k] for k in cond]
        z = {(j, "p")} | {(k, t) for k in cond for t in ("p", "f")}
        return float(nx.is_d_separator(g, {(i, "p")}, {(j, "f")}, z))

    return test


def induced_graph(graph: np.ndarray, observed: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The graph over the observed variables that time-directed CI tests can see: (directed, bidirected).

    Union of two standard constructions (the paper's "induced ancestral graph" setting):
    - latent projection: `i -> j` when a directed path leads from i to j with only latent inner
      nodes (or directly); `i <-> j` when a latent variable reaches both that way (hidden cause);
    - ancestral-graph adjacencies: i and j adjacent when no set of observed variables d-separates
      them in `graph` (an inducing path), oriented `i -> j` if i is an ancestor of j, `<->` if
      neither is an ancestor of the other.
    """
    obs = [int(k) for k in observed]
    latent = [k for k in range(len(graph)) if k not in obs]
    reach = graph.astype(bool).copy()  # reach[a, b]: path a -> ... -> b, inner nodes latent
    for k in latent:  # Warshall's closure restricted to latent intermediates
        reach |= np.outer(reach[:, k], reach[k, :])
    directed = reach[np.ix_(obs, obs)]
    bidirected = np.zeros_like(directed)
    for k in latent:
        bidirected |= np.outer(reach[k, obs], reach[k, obs])
    dag = nx.DiGraph(list(zip(*np.nonzero(graph))))
    dag.add_nodes_from(range(len(graph)))
    for a, b in itertools.combinations(range(len(obs)), 2):
        rest = [obs[k] for k in range(len(obs)) if k not in (a, b)]
        sets = (set(c) for r in range(len(rest) + 1) for c in itertools.combinations(rest, r))
        if any(nx.is_d_separator(dag, {obs[a]}, {obs[b]}, z) for z in sets):
            continue
        a_anc, b_anc = nx.has_path(dag, obs[a], obs[b]), nx.has_path(dag, obs[b], obs[a])
        if a_anc or b_anc:
            directed[a, b] |= a_anc
            directed[b, a] |= b_anc
        else:
            bidirected[a, b] = bidirected[b, a] = True
    off = ~np.eye(len(obs), dtype=bool)
    return directed & off, bidirected & off


def mixed_graph(est: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Read an estimated graph over observed variables as (directed, bidirected).

    The true graph is acyclic, so a pair found in both directions cannot be two direct edges:
    under a CI oracle it means a hidden common cause, marked `i <-> j`. The encoding "both
    directions = bidirected" is also what `shd` compares edge states with; it cannot show a
    direct edge and a hidden common cause of the same pair at once (that pair reads `<->`).
    """
    both = est & est.T
    return est & ~both, both


def shd(true: np.ndarray, est: np.ndarray) -> int:
    """Structural Hamming distance: unordered pairs whose edge state (none, ->, <-, both) differs."""
    a, b = np.triu_indices(len(true), 1)
    return int(((true[a, b] != est[a, b]) | (true[b, a] != est[b, a])).sum())


def f1(true: np.ndarray, est: np.ndarray) -> float:
    """F1 of directed edges (off-diagonal)."""
    off = ~np.eye(len(true), dtype=bool)
    tp = (true & est & off).sum()
    denom = (true & off).sum() + (est & off).sum()
    return float(2 * tp / denom) if denom else 1.0
