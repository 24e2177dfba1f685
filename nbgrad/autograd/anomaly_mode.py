"""``nbgrad.autograd.anomaly_mode``: anomaly detection's public names (PyTorch's
``torch/autograd/anomaly_mode.py``); they live in :mod:`nbgrad._graph.anomaly_state`."""

from nbgrad._graph.anomaly_state import detect_anomaly, is_anomaly_enabled, set_detect_anomaly

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]
