"""__method__: re-implementation of "__title__" (ICLR 2025)."""

__version__ = "0.1.0"
