"""DeGEM: re-implementation of "Decoupled Graph Energy-based Model for Node Out-of-Distribution Detection on Heterophilic Graphs" (ICLR 2025)."""

__version__ = "0.1.0"
