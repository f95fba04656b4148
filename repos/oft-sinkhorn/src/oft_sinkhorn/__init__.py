"""OFT-Sinkhorn: re-implementation of "Optimal Flow Transport and its Entropic Regularization: a GPU-friendly Matrix Iterative Algorithm for Flow Balance Satisfaction" (ICLR 2025)."""

__version__ = "0.1.0"
