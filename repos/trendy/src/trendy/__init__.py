"""TRENDy: re-implementation of "TRENDy: Temporal Regression of Effective Nonlinear Dynamics" (ICLR 2025)."""

__version__ = "0.1.0"
