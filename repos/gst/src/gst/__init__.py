"""GST: re-implementation of "Where Am I and What Will I See: An Auto-Regressive Model for Spatial Localization and View Prediction" (ICLR 2025)."""

__version__ = "0.1.0"
