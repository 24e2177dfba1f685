"""``nbgrad.optim``: ``SGD``, ``Adam``, ``AdamW``, the ``Optimizer`` base class and
``lr_scheduler``.

Mirrors ``torch/optim/__init__.py``.
"""

from nbgrad.optim import lr_scheduler
from nbgrad.optim.adagrad import Adagrad
from nbgrad.optim.adam import Adam
from nbgrad.optim.adamw import AdamW
from nbgrad.optim.optimizer import Optimizer
from nbgrad.optim.rmsprop import RMSprop
from nbgrad.optim.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
