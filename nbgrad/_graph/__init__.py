"""The autograd graph layer: what the engine runs, knowing no Tensor class.

Mirrors ``torch/csrc/autograd`` (``function.h``, ``edge.h``, ``saved_variable.h``,
``grad_mode.h``, ``anomaly_mode.h``). Everything above it (the Tensor, the op table, the engine,
the public ``nbgrad.autograd`` API) imports from here; this package imports only
``nbgrad.backend`` and ``nbgrad.dtypes``. The public modules ``nbgrad.autograd.graph``,
``nbgrad.autograd.grad_mode`` and ``nbgrad.autograd.anomaly_mode`` re-export its public names.
"""
