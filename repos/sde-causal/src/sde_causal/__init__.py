"""SigKer-CI: re-implementation of "Signature Kernel Conditional Independence Tests in Causal Discovery for Stochastic Processes" (ICLR 2025)."""

__version__ = "0.1.0"
