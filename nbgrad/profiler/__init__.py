"""``nbgrad.profiler``: PyTorch's ``torch.profiler`` front end over nbgrad's autograd profiler
(:mod:`nbgrad.autograd.profiler`, See NOTE [Profiler events]): ``profile`` with
``activities``, a ``schedule`` of steps and ``on_trace_ready``; ``record_function``;
``ProfilerActivity``. nbgrad records CPU events only.
"""

from __future__ import annotations

import enum
import os
import socket
import time
import warnings

from nbgrad.autograd.profiler import (
    ProfilerActivity,
    _node_times,
    _start,
    _stop,
    kineto_available,
    record_function,
)
from nbgrad.autograd.profiler_util import DeviceType

__all__ = [
    "DeviceType",
    "ProfilerAction",
    "ProfilerActivity",
    "kineto_available",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]


class ProfilerAction(enum.Enum):
    """What the profiler does at a step, as a ``schedule`` says."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def supported_activities():
    """The activities nbgrad can record: the CPU."""
    return {ProfilerActivity.CPU}


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """A step -> ``ProfilerAction`` function (``torch.profiler.schedule``): skip ``skip_first``
    steps, then cycles of ``wait`` idle, ``warmup`` and ``active`` recorded steps, ``repeat``
    times (0: forever); the last active step of a cycle is ``RECORD_AND_SAVE``."""

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        if mod_step < num_steps - 1:
            return ProfilerAction.RECORD
        return ProfilerAction.RECORD_AND_SAVE

    if not (wait >= 0 and warmup >= 0 and active > 0 and repeat >= 0 and skip_first >= 0):
        raise AssertionError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn(
            "Profiler won't be using warmup, this can skew profiler results", stacklevel=2
        )
    return schedule_fn


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An ``on_trace_ready`` that writes each trace into ``dir_name`` as
    ``<worker_name>.<time in ns>.pt.trace.json`` (gzipped with ``use_gzip``)."""

    def handler_fn(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker}.{time.time_ns()}.pt.trace.json"
        path = os.path.join(dir_name, file_name)
        prof.export_chrome_trace(path)
        if use_gzip:
            import gzip  # (only for this option)

            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                dst.write(src.read())
            os.remove(path)

    return handler_fn


def _always_record(_step):
    return ProfilerAction.RECORD


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class profile:
    """Profile the CPU time of forward ops and backward nodes (``torch.profiler.profile``):
    a context manager, or ``start()`` / ``stop()``; ``step()`` moves the ``schedule`` on,
    and each recorded cycle ends with ``on_trace_ready(self)``. Then ``events()``,
    ``key_averages()``, ``export_chrome_trace(path)``.
    """

    def __init__(
        self,
        *,
        activities=None,
        schedule=None,
        on_trace_ready=None,
        record_shapes=False,
        profile_memory=False,
        with_stack=False,
        with_flops=False,
        with_modules=False,
        experimental_config=None,
        execution_trace_observer=None,
        acc_events=False,
        use_cuda=None,
        custom_trace_id_callback=None,
        post_processing_timeout_s=None,
    ):
        self.activities = set(activities) if activities else supported_activities()
        self.schedule = schedule if schedule is not None else _always_record
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.function_events = None
        self._recorder = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.stop()

    def start(self):
        self._transit(None, self.current_action)

    def stop(self):
        if self._recorder is not None:
            self._save()

    def step(self):
        """The next step: record, or stop and hand the trace over, as the schedule says."""
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)

    def _transit(self, prev, action):
        if prev == ProfilerAction.RECORD_AND_SAVE and self._recorder is not None:
            self._save()
        recording = action in _RECORDING or action == ProfilerAction.WARMUP
        if recording and self._recorder is None and ProfilerActivity.CPU in self.activities:
            self._recorder = _start(self.record_shapes)
            self._warmup = action == ProfilerAction.WARMUP
        if action in _RECORDING and self._recorder is not None and self._warmup:
            self._recorder.events.clear()  # what ran in warm-up is not kept
            self._warmup = False

    def _save(self):
        recorder, self._recorder = self._recorder, None
        self.function_events = _stop(recorder)
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _check(self):
        if self.function_events is None:
            raise AssertionError("Profiler must be initialized before exporting")

    def events(self):
        """The recorded events (an ``EventList``) of the last finished cycle."""
        self._check()
        return self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, **kwargs):
        """One averaged row per event name (and input shapes, with ``group_by_input_shape``)."""
        self._check()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace JSON file."""
        self._check()
        return self.function_events.export_chrome_trace(path)

    def node_times(self):
        """``{node: microseconds}`` for each backward node (See NOTE [Profiler events])."""
        self._check()
        return _node_times(self.function_events)
