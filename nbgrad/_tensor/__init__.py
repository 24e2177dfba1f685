"""The Tensor layer's parts, split by job; :mod:`nbgrad.tensor` assembles the class."""
