"""MCL-NF: re-implementation of "Meta-Continual Learning of Neural Fields" (ICLR 2025)."""

__version__ = "0.1.0"
