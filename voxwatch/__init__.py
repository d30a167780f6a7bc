"""voxwatch: continuous, trustworthy latency and accuracy monitoring of voice AI providers."""

__version__ = "0.1.0"
