"""Tests of ``nbgrad.nn``."""
