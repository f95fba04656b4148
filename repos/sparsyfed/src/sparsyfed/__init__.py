"""SparsyFed: re-implementation of "SparsyFed: Sparse Adaptive Federated Training" (ICLR 2025)."""

__version__ = "0.1.0"
