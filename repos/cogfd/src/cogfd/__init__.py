"""CoGFD: re-implementation of "Erasing Concept Combination from Text-to-Image Diffusion Model" (ICLR 2025)."""

__version__ = "0.1.0"
