"""BNN-Renorm: re-implementation of "Bayesian Treatment of the Spectrum of the Empirical Kernel in (Sub)Linear-Width Neural Networks" (ICLR 2025)."""

__version__ = "0.1.0"
