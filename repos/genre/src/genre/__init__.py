"""GenRe: re-implementation of "From Search to Sampling: Generative Models for Robust Algorithmic Recourse" (ICLR 2025)."""

__version__ = "0.1.0"
