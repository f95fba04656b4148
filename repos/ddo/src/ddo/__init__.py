"""DDO: re-implementation of "Direct Distributional Optimization for Provable Alignment of Diffusion Models" (ICLR 2025)."""

__version__ = "0.1.0"
