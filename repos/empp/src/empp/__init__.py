"""EMPP: re-implementation of "Equivariant Masked Position Prediction for Efficient Molecular Representation" (ICLR 2025)."""

__version__ = "0.1.0"
