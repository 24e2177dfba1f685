"""Tests of ``nbgrad.optim``."""
