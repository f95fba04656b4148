"""The benchmark's claims, computed from per-negative results over seeds.

Every comparison is paired (the same test negatives, the same seeds) with a bootstrap
interval that resamples negatives within each seed (metrics.paired_interval). Every claim is
also evaluated with the negative control in GenRe's place (GenRe's sampler on an untrained
pair model; for the speed claim: NNR, a table lookup, as the peer) and reports whether the
control passes; a claim whose control passes cannot tell GenRe's effect from the benchmark.
"""

from __future__ import annotations

import numpy as np

from .config import CONTROL, FLOOR, ORACLE
from .metrics import paired_interval
from .results import claim, part_from_paired
from .results import paired_interval as paired_interval_seeds

PAPER_GENRE = {  # the released notebook's GenRe rows
    "compas": {"cost": 0.51, "gold_validity": 0.99, "soft_validity": 0.75, "lof": 0.97},
    "adult": {"cost": 0.69, "gold_validity": 1.00, "soft_validity": 0.91, "lof": 0.98},
}
# Thresholds, each with the result that fails it.
MIN_VALIDITY, MIN_LOF = 0.95, 0.90  # fails: GenRe's gold validity < 0.95 or LOF rate < 0.9
SCORE_MARGIN_VS_ORACLE = 0.05  # fails: GenRe's Score is below exact-Q's by > 0.05 (95% bound)
COST_MARGIN_VS_ORACLE = 0.15  # fails: GenRe's cost exceeds exact-Q's by > 15% (95% bound)
# fails: GenRe's mean kNN plausibility <= 0.45, below the 0.5 a real positive scores by
# construction less a 0.05 margin (metrics.KnnPlausibility)
MIN_KNN = 0.45
WACHTER_LOF_GAP, WACHTER_SOFT_GAP = 0.10, 0.05  # fails: Wachter's LOF / soft validity not
# lower than GenRe's by these (or the interval of the difference reaches 0)
SEARCH = ("Wachter", "REVISE", "GrowingSpheres", "DiCE")
BASELINES = ("NNR", "Wachter", "GrowingSpheres", "REVISE", "DiCE")


def _diffs(runs: list[dict], a: str, b: str | None, key: str, table: str = "instances") -> list:
    """Per seed, a's minus b's per-negative values (truncated to the shorter, e.g. DiCE's);
    b = None: a's values themselves (a one-sample test against a threshold)."""
    out = []
    for run in runs:
        va = np.asarray(run[table][a][key], dtype=float)
        vb = np.zeros_like(va) if b is None else np.asarray(run[table][b][key], dtype=float)
        n = min(len(va), len(vb))
        out.append(va[:n] - vb[:n])
    return out


def seed_interval(diffs: list[np.ndarray], n_boot: int) -> dict:
    """Seeds are the unit: the mean over seeds of each seed's mean difference with a 95% t
    interval over the seeds (n = seeds), widened to cover the bootstrap interval that resamples
    the negatives within each seed (so seeds that agree exactly still get the sampling width
    of their negatives). With one seed only the bootstrap interval is left (n = 1 never holds)."""
    means = [float(d.mean()) for d in diffs]
    over_seeds = paired_interval_seeds(means, [0.0] * len(means))
    boot = paired_interval(diffs, n_boot)
    lo, hi = boot["lo"], boot["hi"]
    if over_seeds["lo"] is not None:
        lo, hi = min(lo, over_seeds["lo"]), max(hi, over_seeds["hi"])
    return {"mean": boot["mean"], "lo": lo, "hi": hi, "n": len(diffs), "per_seed": means}


METHOD = "t over seeds (per-seed mean), widened to a bootstrap over negatives within seeds"


def _part(what: str, ci: dict, threshold: float, direction: str, unit: str = "") -> dict:
    p = part_from_paired(what, ci, threshold, direction, unit)
    p["method"] = METHOD
    return p


def _ci(runs, a, b, key, n_boot, table="instances") -> dict:
    return seed_interval(_diffs(runs, a, b, key, table), n_boot)


def _mean(runs: list[dict], method: str, key: str) -> float:
    return float(np.mean([np.mean(run["instances"][method][key]) for run in runs]))


def _fmt(ci: dict) -> str:
    return f"{ci['mean']:+.3f} [{ci['lo']:+.3f}, {ci['hi']:+.3f}]"


def _paper(dataset: str) -> str:
    p = PAPER_GENRE.get(dataset)
    if p is None:
        return "no table for this dataset; COMPAS: cost 0.51, gold validity 0.99, LOF 0.97"
    return ", ".join(f"{k} {v:.2f}" for k, v in p.items())


def _valid_plausible(runs, method: str, n_boot: int) -> tuple[list, str]:
    val = _ci(runs, method, None, "gold_validity", n_boot)
    lof = _ci(runs, method, None, "lof", n_boot)
    parts = [
        _part(f"{method} gold validity", val, MIN_VALIDITY, ">", "rate"),
        _part(f"{method} LOF inlier rate", lof, MIN_LOF, ">", "rate"),
    ]
    return parts, f"gold validity {_fmt(val)}, LOF {_fmt(lof)}"


def _knn_plausible(runs, method: str, n_boot: int) -> tuple[list, str]:
    ci = _ci(runs, method, None, "knn_plausibility", n_boot)
    floor = _mean(runs, FLOOR, "knn_plausibility") if FLOOR in runs[0]["instances"] else None
    parts = [_part(f"{method} kNN plausibility", ci, MIN_KNN, ">", "share")]
    text = f"kNN plausibility {_fmt(ci)}"
    if floor is not None:
        text += f" (a uniform admissible positive, {FLOOR}: {floor:.3f})"
    return parts, text


def _cost_excess(runs, method: str, n_boot: int) -> dict:
    """Per negative: method's cost minus (1 + margin) x the exact target's cost."""
    diffs = []
    for run in runs:
        va = np.asarray(run["instances"][method]["cost"], dtype=float)
        vq = np.asarray(run["instances"][ORACLE]["cost"], dtype=float)
        n = min(len(va), len(vq))
        diffs.append(va[:n] - (1 + COST_MARGIN_VS_ORACLE) * vq[:n])
    return seed_interval(diffs, n_boot)


def _matches_oracle(runs, method: str, n_boot: int) -> tuple[list, str]:
    score = _ci(runs, method, ORACLE, "score", n_boot)
    cost = _cost_excess(runs, method, n_boot)
    parts = [
        _part(f"{method} - {ORACLE} Score", score, -SCORE_MARGIN_VS_ORACLE, ">", "score"),
        _part(
            f"{method} cost - {1 + COST_MARGIN_VS_ORACLE:g} x {ORACLE} cost", cost, 0.0, "<", "L1"
        ),
    ]
    text = (
        f"Score {_mean(runs, method, 'score'):.3f} vs exact Q {_mean(runs, ORACLE, 'score'):.3f}, "
        f"difference {_fmt(score)}; cost {_mean(runs, method, 'cost'):.3f} vs "
        f"{_mean(runs, ORACLE, 'cost'):.3f}, cost - {1 + COST_MARGIN_VS_ORACLE:g} x Q's {_fmt(cost)}"
    )
    return parts, text


def _best_score(runs, method: str, peers: list[str], n_boot: int) -> tuple[list, str]:
    cis = {b: _ci(runs, method, b, "score", n_boot) for b in peers}
    text = f"Score {_mean(runs, method, 'score'):.3f}; minus " + "; ".join(
        f"{b} ({_mean(runs, b, 'score'):.3f}) {_fmt(ci)}" for b, ci in cis.items()
    )
    parts = [_part(f"{method} - {b} Score", ci, 0.0, ">", "score") for b, ci in cis.items()]
    return parts, text


def _wachter(runs, method: str, n_boot: int) -> tuple[list, str]:
    cis = {k: _ci(runs, "Wachter", method, k, n_boot) for k in ("cost", "lof", "soft_validity")}
    parts = [
        _part(f"Wachter - {method} cost", cis["cost"], 0.0, "<", "L1"),
        _part(f"Wachter - {method} LOF rate", cis["lof"], -WACHTER_LOF_GAP, "<", "rate"),
        _part(
            f"Wachter - {method} soft validity",
            cis["soft_validity"],
            -WACHTER_SOFT_GAP,
            "<",
            "probability",
        ),
    ]
    text = f"Wachter minus {method}: " + ", ".join(f"{k} {_fmt(ci)}" for k, ci in cis.items())
    return parts, text


def _log_time_ratio(runs, a: str, b: str, n_boot: int) -> dict:
    diffs = []
    for run in runs:
        ta, tb = np.asarray(run["timing"][a]), np.asarray(run["timing"][b])
        n = min(len(ta), len(tb))
        diffs.append(np.log(ta[:n]) - np.log(tb[:n]))
    return seed_interval(diffs, n_boot)


def _faster(runs, method: str, peers: list[str], n_boot: int) -> tuple[list, str]:
    cis = {b: _log_time_ratio(runs, method, b, n_boot) for b in peers}
    text = "; ".join(
        f"{method} / {b} per-instance time x{np.exp(ci['mean']):.3g} "
        f"[{np.exp(ci['lo']):.3g}, {np.exp(ci['hi']):.3g}]"
        for b, ci in cis.items()
    )
    parts = [
        _part(f"log({method} / {b} seconds)", ci, 0.0, "<", "log ratio") for b, ci in cis.items()
    ]
    return parts, text


def _with_control(entry: dict, control: str, parts: list, ours: str) -> dict:
    """The same test with the control in GenRe's place; it must not hold."""
    c = claim("control", "", "", ours, test=parts)
    entry["negative_control"] = {
        "method": control,
        "must_not_hold": True,
        "verdict": c["verdict"],
        "holds": c["holds"],
        "ours": ours,
        "test": parts,
    }
    return entry


def compute_claims(runs: list[dict], dataset: str, methods: tuple, n_boot: int) -> list[dict]:
    """The claims of one dataset; `runs` are run_protocol outputs, one per seed."""
    out = []
    parts, text = _valid_plausible(runs, "GenRe", n_boot)
    c_parts, c_text = _valid_plausible(runs, CONTROL, n_boot)
    entry = claim(
        f"genre-valid-plausible-{dataset}",
        f"GenRe's gold validity > {MIN_VALIDITY} and LOF inlier rate > {MIN_LOF}, each 95% "
        f"interval over seeds above its threshold (LOF fitted as the official notebook) ({dataset})",
        _paper(dataset),
        text,
        test=parts,
    )
    out.append(_with_control(entry, CONTROL, c_parts, c_text))

    if "knn_plausibility" in runs[0]["instances"]["GenRe"]:
        parts, text = _knn_plausible(runs, "GenRe", n_boot)
        c_parts, c_text = _knn_plausible(runs, CONTROL, n_boot)
        entry = claim(
            f"genre-knn-plausible-{dataset}",
            "GenRe's recourses lie as deep in the positive data as real positives do: mean kNN "
            f"plausibility (share of real positives whose 5th-neighbour distance to held-out "
            f"positives is at least the recourse's; 0.5 for a real positive) > {MIN_KNN}, 95% "
            f"interval over seeds; beside LOF, which saturates ({dataset})",
            "paper: GenRe's recourses are plausible (LOF inlier rate 0.97-1.00)",
            text,
            test=parts,
        )
        out.append(_with_control(entry, CONTROL, c_parts, c_text))

    parts, text = _matches_oracle(runs, "GenRe", n_boot)
    c_parts, c_text = _matches_oracle(runs, CONTROL, n_boot)
    entry = claim(
        f"genre-matches-exact-q-{dataset}",
        f"GenRe reaches its training target: its Score is at most {SCORE_MARGIN_VS_ORACLE} "
        f"below, and its cost at most {COST_MARGIN_VS_ORACLE:.0%} above, sampling the exact "
        f"target Q (lambda = GenRe's, best-of-k by h) - both as 95% bounds ({dataset})",
        "consistency: maximum likelihood on pairs from Q estimates Q (the paper's theorem)",
        text,
        test=parts,
    )
    out.append(_with_control(entry, CONTROL, c_parts, c_text))

    peers = [b for b in BASELINES if b in methods]
    if peers:
        parts, text = _best_score(runs, "GenRe", peers, n_boot)
        c_parts, c_text = _best_score(runs, CONTROL, peers, n_boot)
        entry = claim(
            f"genre-best-score-{dataset}",
            "GenRe's combined Score (gold validity + LOF - cost / d) exceeds every baseline's "
            f"({', '.join(peers)}), 95% interval of each paired difference above 0 ({dataset})",
            "paper Table 2: GenRe has the best Score on COMPAS, HELOC and Adult",
            text,
            test=parts,
        )
        out.append(_with_control(entry, CONTROL, c_parts, c_text))
    if "Wachter" in methods:
        parts, text = _wachter(runs, "GenRe", n_boot)
        c_parts, c_text = _wachter(runs, CONTROL, n_boot)
        entry = claim(
            f"wachter-cheaper-implausible-{dataset}",
            f"Wachter costs less than GenRe, but its LOF rate is lower by more than "
            f"{WACHTER_LOF_GAP} and its soft validity by more than {WACHTER_SOFT_GAP} "
            f"(each 95% interval past its threshold) ({dataset})",
            "paper Table 2: gradient search gives low cost but low plausibility and validity",
            text,
            test=parts,
        )
        out.append(_with_control(entry, CONTROL, c_parts, c_text))
    search = [b for b in SEARCH if b in methods]
    if search:
        parts, text = _faster(runs, "GenRe", search, n_boot)
        c_parts, c_text = _faster(runs, "GenRe", ["NNR"], n_boot)
        entry = claim(
            f"genre-faster-than-search-{dataset}",
            "Per instance (batch of 1, as the paper times search), GenRe needs less time than "
            f"{', '.join(search)}: 95% interval of each log time ratio below 0 ({dataset})",
            "paper: a forward sampling pass replaces per-instance search",
            text,
            test=parts,
        )
        out.append(_with_control(entry, "NNR (as the peer)", c_parts, c_text))
    return out


def diagnostics(runs: list[dict], n_boot: int, lam: float) -> dict[str, dict]:
    """Reported, not claimed: cost of GenRe and of its exact target against NNR's (the
    issue's point that Q itself is dearer than NNR), and the fidelity of the trained model to
    Q: GenRe sampled without sharpening (tau = 1, its own R_theta) against exact Q at the same
    lambda, from the sweep means (mean and std over seeds) where both were swept."""
    out = {}
    for a in ("GenRe", ORACLE):
        ci = _ci(runs, a, "NNR", "cost", n_boot)
        out[f"{a}_minus_NNR_cost"] = ci
        out[f"{a}_over_NNR_cost_ratio"] = {
            "mean": _mean(runs, a, "cost") / max(_mean(runs, "NNR", "cost"), 1e-12)
        }
    model, target = "GenRe@tau=1", f"{ORACLE}@lam={lam:g}"
    if all(model in run["sweeps"] and target in run["sweeps"] for run in runs):
        for key in ("cost", "gold_validity", "lof", "score"):
            diffs = [run["sweeps"][model][key] - run["sweeps"][target][key] for run in runs]
            out[f"tau1_minus_exact_q_{key}"] = {
                "mean": float(np.mean(diffs)),
                "std_over_seeds": float(np.std(diffs)),
            }
    return out
