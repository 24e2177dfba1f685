"""``nbgrad.optim``: the ``Optimizer`` base class, its optimizers (``SGD``, ``Adam``,
``AdamW``, ``RMSprop``, ``Adagrad``, ``Adadelta``, ``Adamax``, ``NAdam``, ``RAdam``,
``ASGD``, ``Rprop``, ``LBFGS``) and ``lr_scheduler``.

Mirrors ``torch/optim/__init__.py``.
"""

from nbgrad.optim import lr_scheduler
from nbgrad.optim.adadelta import Adadelta
from nbgrad.optim.adafactor import Adafactor
from nbgrad.optim.adagrad import Adagrad
from nbgrad.optim.adam import Adam
from nbgrad.optim.adamax import Adamax
from nbgrad.optim.adamw import AdamW
from nbgrad.optim.asgd import ASGD
from nbgrad.optim.lbfgs import LBFGS
from nbgrad.optim.muon import Muon
from nbgrad.optim.nadam import NAdam
from nbgrad.optim.optimizer import Optimizer
from nbgrad.optim.radam import RAdam
from nbgrad.optim.rmsprop import RMSprop
from nbgrad.optim.rprop import Rprop
from nbgrad.optim.sgd import SGD

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adamax",
    "NAdam",
    "RAdam",
    "ASGD",
    "Rprop",
    "LBFGS",
    "Adafactor",
    "Muon",
    "lr_scheduler",
]
