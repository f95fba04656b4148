"""Bifurcations and regimes read off the learned model (paper Sec. 4.2-4.3).

For each A, B is swept across a line. Hopf (the official `plot_hopf_manifold.py`): the Jacobian
of g_pi at the measured equilibrium (A, B/A) is diagonalised, and the line is where a complex
pair's growth rate under the trained Euler step crosses zero. Turing: `pattern_growth`, the
change of the predicted pattern amplitude (the measurement's pattern coefficients, decoded from
the reduced state) from a perturbed homogeneous state to the end of the predicted trajectory;
the onset is where it turns positive. (A real Jacobian eigenvalue crossing zero, the official
script's other reading, is reported for comparison.) Regimes are classified from predicted final
states with logistic regression (the official `fit_classifier.py`).
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score


def growth_indicators(
    eigs: np.ndarray, step: float = 0.0, tol: float = 1e-6
) -> tuple[np.ndarray, np.ndarray]:
    """Growth rates per row (-inf where the class is absent): the largest real eigenvalue, and
    the largest growth rate among complex pairs.

    The neural ODE is trained through forward Euler with `step` h, so what it models is the map
    S -> S + h g(S); a complex eigenvalue mu of dg/dS grows like |1 + h mu|^n, i.e. at the
    continuous rate log|1 + h mu| / h (Re mu only as h -> 0). With the quick preset's h = 1/40
    (1.25 PDE time units) an oscillation at the Brusselator's frequency A turns by about 2.5 rad
    per step, where Re mu and log|1 + h mu| / h disagree even in sign. A real eigenvalue changes
    sign exactly where its multiplier crosses +1, so it is read as it is.
    """
    is_real = np.abs(eigs.imag) <= tol
    real = np.where(is_real, eigs.real, -np.inf).max(-1)
    rate = np.log(np.abs(1.0 + step * eigs)) / step if step > 0 else eigs.real
    cplx = np.where(~is_real, rate, -np.inf).max(-1)
    return real, cplx


def first_crossing(b: np.ndarray, rate: np.ndarray) -> float:
    """Smallest b where `rate` turns positive, linearly interpolated; nan if it never does."""
    rate = np.where(np.isfinite(rate), rate, -1e6)
    up = np.nonzero(rate > 0)[0]
    if len(up) == 0:
        return float("nan")
    i = up[0]
    if i == 0:
        return float(b[0])
    r0, r1 = rate[i - 1], rate[i]
    r0 = max(r0, -abs(r1) * 1e3)  # a missing eigenvalue class counts as far below zero
    return float(b[i - 1] + (b[i] - b[i - 1]) * (-r0) / (r1 - r0))


def pattern_growth(amp_start: np.ndarray, amp_end: np.ndarray, repeats: int) -> np.ndarray:
    """Relative change of the pattern amplitude c = (end - start) / |start|, compressed as
    sign(c) log(1 + |c|) and averaged over the `repeats` perturbed initial states of each sweep
    point (consecutive rows): > 0 where the perturbation of the homogeneous state grew.

    A grown pattern is orders of magnitude above its seed; without the logarithm the linear
    interpolation of `first_crossing` would put the onset next to the last decaying B."""
    change = (amp_end - amp_start) / np.maximum(np.abs(amp_start), 1e-12)
    return (np.sign(change) * np.log1p(np.abs(change))).reshape(-1, repeats).mean(1)


def relative_error(pred: float, true: float) -> float:
    """|pred - true| / true; 1.0 (a 100% miss) when the sweep found no crossing."""
    return float(abs(pred - true) / true) if np.isfinite(pred) else 1.0


def classify_regimes(
    train_final: np.ndarray,
    train_labels: np.ndarray,
    test_final: np.ndarray,
    test_labels: np.ndarray,
) -> dict[str, float]:
    """Logistic regression on predicted final states: test accuracy, macro F1, and the accuracy
    of always guessing the training set's most common regime (what accuracy must beat)."""
    classes, counts = np.unique(train_labels, return_counts=True)
    majority = classes[counts.argmax()]
    if len(classes) == 1:  # nothing to separate (tiny runs): the classifier is the constant
        guess = np.full(len(test_labels), majority)
    else:
        mean, std = train_final.mean(0), train_final.std(0) + 1e-8
        clf = LogisticRegression(max_iter=2000).fit((train_final - mean) / std, train_labels)
        guess = clf.predict((test_final - mean) / std)
    return {
        "accuracy": float(accuracy_score(test_labels, guess)),
        "f1": float(f1_score(test_labels, guess, average="macro")),
        "majority_accuracy": float(np.mean(test_labels == majority)),
    }
