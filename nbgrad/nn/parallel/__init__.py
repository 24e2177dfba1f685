"""``nbgrad.nn.parallel``: PyTorch's ``torch.nn.parallel``; :class:`DataParallel` on one device
or none (See NOTE [DataParallel on one device])."""

from nbgrad.nn.parallel.data_parallel import DataParallel

__all__ = ["DataParallel"]
