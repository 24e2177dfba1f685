"""The autograd engine, ``Engine``, which runs a ``GraphTask`` (``graph_task.py``) through its
``ReadyQueue`` and the ``InputBuffer`` of each node (``input_buffer.py``).

Mirrors ``torch/csrc/autograd/engine.cpp`` and reads
top-down in the order things happen: ``Engine.execute`` builds a ``GraphTask``,
``compute_dependencies`` counts the incoming edges of every node reachable from the roots,
``init_to_execute`` marks which nodes ``grad(inputs=...)`` needs, and ``thread_main`` pops ready
nodes (highest ``sequence_nr`` first) and runs ``evaluate_function`` on each: hooks, the node,
validation, and routing of each output gradient to the ``InputBuffer`` of the next node, which
becomes ready when its dependency count reaches zero.

NOTE [Hook order]
When the gradients for a node N arrive (PyTorch's order, measured in
``shared/reference/pytorch-behaviour.md``):
  1. tensor hooks registered on the tensors N produced (``Tensor.register_hook``), in
     registration order, each seeing the previous one's result;
  2. ``retain_grad`` hooks (always after every tensor hook, even ones registered later);
  3. N's prehooks (``Node.register_prehook``);
  4. N itself (``Node.apply``);
  5. N's post hooks (``Node.register_hook``), called with ``(grad_inputs, grad_outputs)``.
For a leaf, N is its AccumulateGrad: tensor hooks, prehooks, accumulation into ``.grad``, then
post-accumulate-grad hooks (inside ``AccumulateGrad.apply``), then post hooks (``grad_inputs=()``).
With ``grad(inputs=...)``, a node that is not needed runs only its tensor hooks (1), and a
captured gradient is taken before them when the node is needed.

NOTE [Ready queues]
One ready queue per device. The CPU queue belongs to the graph task and is drained by the
thread that called backward; every other device has one queue and one long-lived worker
thread shared by all graph tasks (``Engine.device_queue``), started on first use. A node runs
on the queue of the device of its input gradients (``Engine._push_ready``). A worker that runs
the last outstanding node of a graph task wakes its caller; the first error in any thread fails
the task and is re-raised in the caller; warnings raised on a worker are replayed there.

NOTE [Quiet backward]
A backward formula meets IEEE special values where PyTorch's own formulas do (``pow`` at base 0
forms ``inf * -inf``; its second derivative ``0 * -inf``) and gives the same inf and nan.
PyTorch is silent there; NumPy warns. The engine runs each pass (and each device worker's
node) with NumPy's floating-point warnings off, once per pass rather than once per op, so the
formulas stay PyTorch's and the user sees no warning PyTorch would not give. A pass enters that
context as ``Engine._run_pass``'s decorator, made once: a ``with`` block would build NumPy's
context object anew for each pass, about twice the cost (``np.errstate``'s ``__init__`` and
``__enter__``), which is measurable on W6 (two passes of a few nodes; engine_ab.py).
"""

from __future__ import annotations

import atexit
import heapq
import threading
import warnings

from nbgrad._graph import anomaly_state as _anomaly
from nbgrad._graph.accumulate_grad import AccumulateGrad
from nbgrad._graph.grad_state import _state as _grad_state
from nbgrad._graph.hooks import _saved_hooks, hook_name
from nbgrad._graph.multithreading import is_multithreading_enabled
from nbgrad._graph.node import Edge, GraphRoot, Node
from nbgrad._graph.observer import backward_observer
from nbgrad._graph.observer import current as _current
from nbgrad._graph.table_node import RAW_GRADS, as_tensors
from nbgrad._tensor.math_methods import sum_to
from nbgrad.autograd.graph_task import (
    GraphTask,
    NodeTask,
    ReadyQueue,
    _ExecInfo,
    _tiebreak,
)
from nbgrad.autograd.input_buffer import InputBuffer, _accumulate
from nbgrad.backend import CPU, quiet_float_errors
from nbgrad.tensor import Tensor

__all__ = ["NodeTask", "ReadyQueue", "InputBuffer", "GraphTask", "Engine", "get_default_engine"]


_new_tuple = tuple.__new__
# the one _ExecInfo of every node that ``grad(inputs=)`` runs and that captures nothing (never
# changed: a node that captures, or the root, has one of its own)
_NEEDED = _ExecInfo()
_NEEDED.needed = True
_SKIP = _ExecInfo()  # (what a node that leads to no input of ``grad(inputs=)`` would have)
MAX_DEPTH = 60  # reentrant backward calls on one thread before moving to a helper thread


class _WorkerLocal(threading.local):
    capture = False
    task = None  # on a device worker: the graph task whose warnings to capture


_worker_local = _WorkerLocal()
_original_showwarning = warnings.showwarning


def _showwarning(message, category, filename, lineno, file=None, line=None):
    """Warnings raised on a device worker are kept and replayed in the caller."""
    task = _worker_local.task
    if task is not None:
        task.warnings.append(warnings.WarningMessage(message, category, filename, lineno))
        return
    _original_showwarning(message, category, filename, lineno, file, line)


warnings.showwarning = _showwarning
heappush = heapq.heappush


class Engine:
    """Runs backward passes (``torch::autograd::Engine``).

    Tools watch a pass through a ``GraphObserver`` (``nbgrad._graph.observer.observe``), called
    on the path that runs unobserved: see NOTE [One engine path].
    """

    def __init__(self):
        self._device_queues = {}
        self._workers = []
        self._workers_lock = threading.Lock()

    # -- public entry points ------------------------------------------------------------------
    def execute(self, roots, grads, keep_graph, create_graph, outputs=None, accumulate_grad=True):
        """Run backward from ``roots`` (Edges) seeded with ``grads``; return captured gradients
        for ``outputs`` (Edges), as ``Engine::execute``.

        A backward started inside a backward node (reentrant) runs on the same thread, up to
        ``MAX_DEPTH`` nested calls; deeper, it moves to a helper thread (``add_thread_pool_task``).
        """
        if _current.depth >= MAX_DEPTH:
            return self._execute_on_helper_thread(
                roots, grads, keep_graph, create_graph, outputs, accumulate_grad
            )
        roots = [r if isinstance(r, Edge) else Edge(*r) for r in roots]
        parent = _current.graph_task
        depth = parent.reentrant_depth + 1 if parent is not None else 0
        observer = backward_observer()
        # an observer that needs only the pass's start and end leaves it unwatched
        nodes_watched = observer is not None and observer.node_events()
        graph_task = GraphTask(keep_graph, create_graph, depth, observer if nodes_watched else None)
        if len(roots) == 1:
            root = roots[0].function
            buffer = InputBuffer.of_size(max(len(root._input_metadata_), roots[0].input_nr + 1))
            buffer.add(roots[0].input_nr, grads[0])
        else:
            root = GraphRoot(roots, grads)
            buffer = InputBuffer()
        graph_task.graph_root = root
        self.compute_dependencies(root, graph_task)
        if outputs is not None:
            self.init_to_execute(root, graph_task, outputs, accumulate_grad)
        if observer is not None:
            observer.task_start(graph_task, root, dict(graph_task.dependencies))
        prev = _current.graph_task
        prev_grad = _grad_state.enabled
        prev_saved_hooks = _saved_hooks.stack  # see NOTE [Saved-tensor hooks entered in backward]
        prev_running = _anomaly._running.node
        prev_checkpoint_valid = _current.checkpoint_valid  # as PyTorch's CheckpointValidGuard
        _current.checkpoint_valid = prev_checkpoint_valid and outputs is None
        _current.graph_task = graph_task
        _current.depth += 1
        try:
            self._run_pass(graph_task, root, buffer, grads[0] if len(roots) == 1 else None)
        except BaseException as e:  # e.g. a KeyboardInterrupt outside any node: the workers
            self._fail(graph_task, e, None)  # must skip the rest of this pass too
            raise
        finally:
            _current.graph_task = prev
            _current.checkpoint_valid = prev_checkpoint_valid
            _anomaly._running.node = prev_running
            _current.depth -= 1
            _grad_state.enabled = prev_grad
            _saved_hooks.stack = prev_saved_hooks
            graph_task.completed = True
            for w in graph_task.warnings:  # replay warnings raised on worker threads
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            if observer is not None:
                observer.task_end(graph_task, graph_task.exception)
        return graph_task.captured_vars

    @quiet_float_errors()  # see NOTE [Quiet backward]
    def _run_pass(self, graph_task, root, buffer, grad):
        """Queue the root, run the pass and its callbacks (``execute``'s core)."""
        self._push_ready(graph_task, root, buffer, grad)
        self.thread_main(graph_task)
        self.exec_post_processing(graph_task)

    # NOTE [Saved-tensor hooks entered in backward]
    # PyTorch runs each node under the thread-local state its GraphTask captured (the
    # saved-tensor hooks stack among it) and restores the previous state after the node, so a
    # ``saved_tensors_hooks`` entered or exited inside a hook or unpack_hook and never left
    # neither leaks (the stack would hold its hooks, and what they close over, forever) nor
    # pops an outer block's hooks. nbgrad restores the stack once, when the backward call
    # returns or raises: the same for everything after the call, at no cost per node.

    def _execute_on_helper_thread(self, *args):
        result, error = [], []

        def run():
            try:
                result.append(self.execute(*args))
            except BaseException as e:  # noqa: BLE001 - re-raised in the calling thread
                error.append(e)

        thread = threading.Thread(target=run, name="nbgrad-reentrant", daemon=True)
        thread.start()
        thread.join()
        if error:
            raise error[0]
        return result[0]

    def queue_callback(self, callback):
        """Run ``callback()`` once the current backward pass has finished."""
        graph_task = _current.graph_task
        if graph_task is None:
            raise RuntimeError("Final callbacks can only be installed during backward pass.")
        with graph_task._lock:
            graph_task.final_callbacks.append(callback)

    # -- building the task --------------------------------------------------------------------
    @staticmethod
    def compute_dependencies(root, graph_task):
        """Count incoming edges of every node reachable from ``root`` (iterative, no recursion)."""
        deps = graph_task.dependencies
        get = deps.get
        stack = [root]
        pop, push = stack.pop, stack.append  # (bound once: a graph of 0-d tensors has 10**5 nodes)
        while stack:
            for nxt in pop()._next_fns:
                if nxt is not None:
                    count = get(nxt)
                    if count is None:  # first visit (the root has no incoming edge)
                        deps[nxt] = 1
                        push(nxt)
                    else:
                        deps[nxt] = count + 1

    # NOTE [Needed nodes in reverse topological order]
    # A node runs in ``grad(inputs=)`` when it captures an input's gradient or one of its next
    # nodes runs (PyTorch's ``init_to_execute``, a depth-first search). nbgrad visits the nodes
    # in a topological order instead (Kahn's: a node comes once every edge into it has been
    # followed, counted on a copy of the dependency counts just made), then walks that order
    # backwards, so every node is decided after all its next nodes: the same marks, in two flat
    # loops without a stack of iterators (a quarter less time on a graph of 800 nodes).
    @staticmethod
    def init_to_execute(root, graph_task, outputs, accumulate_grad):
        """Mark the nodes on a path to ``outputs``; others are skipped (``init_to_execute``).

        See NOTE [Needed nodes in reverse topological order].
        """
        exec_info = {}
        graph_task.captured_vars = [None] * len(outputs)
        for idx, edge in enumerate(outputs):
            info = exec_info.setdefault(edge.function, _ExecInfo())
            if accumulate_grad:
                info.needed = True
            else:
                if info.captures is None:
                    info.captures = []
                info.captures.append((edge.input_nr, idx))
        # the root too runs only when a path leads from it to an output, as PyTorch's
        # compute_is_needed: a custom Function at the root that cannot reach the requested
        # inputs is never called
        exec_info.setdefault(root, _ExecInfo())
        remaining = graph_task.dependencies.copy()
        order = [root]
        push = order.append
        for fn in order:  # (the list grows as nodes become free)
            for child in fn._next_fns:
                if child is not None:
                    count = remaining[child] - 1
                    remaining[child] = count
                    if not count:
                        push(child)
        get = exec_info.get
        for fn in reversed(order):
            for child in fn._next_fns:
                info = get(child)
                if info is not None and (info.needed or info.captures is not None):
                    info = get(fn)
                    if info is None:
                        exec_info[fn] = _NEEDED
                    elif info is not _NEEDED:  # (the root, or a node that captures)
                        info.needed = True
                    break
        graph_task.exec_info = exec_info

    # -- running ------------------------------------------------------------------------------
    def thread_main(self, graph_task):
        """Run ``graph_task``'s CPU nodes on this thread until it completes (``thread_main``).

        Nodes of other devices run on their workers; this thread waits for them, and wakes when
        a worker hands back a CPU node or finishes the last outstanding one. On a device worker
        (a reentrant backward), it also serves its own device queue while it waits.
        """
        heap = graph_task.cpu_ready_queue._heap
        heappop = heapq.heappop
        general = self.evaluate_function
        plain = self._evaluate_plain  # NOTE [A plain pass]
        carries = graph_task.carries_arrays
        own_queue = _current.device_queue
        _grad_state.enabled = graph_task.create_graph
        # NOTE [Chains skip the queue]
        # Evaluating a node hands back the next node to run, with its inputs, when that node
        # became ready there and no queued node comes before it (a higher ``sequence_nr``;
        # equal ones run in the order they became ready): it runs at once, without a push and
        # a pop of the ready queue, in the order the queue would give. Along a chain, every
        # node is handed on this way.
        while True:
            if heap:
                _, _, node, inputs = heappop(heap)  # NOTE [CPU queue entries]
                if graph_task.exception is not None:
                    continue
                try:
                    evaluate = general if graph_task.threaded or not carries else plain
                    following = evaluate(graph_task, node, inputs)
                    while following is not None:  # see NOTE [Chains skip the queue]
                        node = following[0]
                        evaluate = general if graph_task.threaded or not carries else plain
                        following = evaluate(graph_task, node, following[1])
                except BaseException as e:  # noqa: BLE001 - re-raised below with its own type
                    self._fail(graph_task, e, node)
                continue
            # a failed pass (an error, or the stop button's KeyboardInterrupt) ends now, as in
            # PyTorch: the caller does not wait for a node a worker is still running; the
            # workers skip the rest of the pass
            if not graph_task.outstanding_tasks or graph_task.exception is not None:
                break
            if own_queue is not None:
                task = own_queue.pop(timeout=0)
                if task is not None:
                    self._run_device_task(task)
                    _grad_state.enabled = graph_task.create_graph
                    continue
            try:
                with graph_task.cond:
                    if not heap and graph_task.outstanding_tasks:
                        graph_task.cond.wait(0.005 if own_queue is not None else 0.1)
            except KeyboardInterrupt as e:  # the notebook's stop button: end the task now
                self._fail(graph_task, e, None)
                raise
        if graph_task.exception is not None:
            raise graph_task.exception

    def _fail(self, graph_task, error, node):
        """Record the first error of a graph task; the remaining nodes are skipped."""
        with graph_task._lock:
            if graph_task.exception is None:
                graph_task.exception = error
                if node is not None:
                    _anomaly.report_failure(error, node)

    # -- device queues and workers (NOTE [Ready queues]) ---------------------------------------
    def device_queue(self, device):
        """The ready queue of ``device``, starting its worker thread on first use."""
        queue = self._device_queues.get(device)
        if queue is None:
            with self._workers_lock:
                queue = self._device_queues.get(device)
                if queue is None:
                    queue = ReadyQueue(device)
                    thread = threading.Thread(
                        target=self._worker_main,
                        args=(queue,),
                        daemon=True,
                        name=f"nbgrad-worker-{device}",
                    )
                    self._workers.append((queue, thread))
                    self._device_queues[device] = queue
                    thread.start()
        return queue

    def _worker_main(self, queue):
        """A device's worker: run its ready nodes, for whichever graph task, forever."""
        _current.device_queue = queue
        _worker_local.capture = True
        while True:
            task = queue.pop()
            if task is None:  # shutdown
                return
            self._run_device_task(task)
            # drop it before waiting for the next one: the task holds its graph task, and with
            # it every node of the finished pass and their gradients
            del task

    def _run_device_task(self, task):
        graph_task = task.graph_task
        prev = _current.graph_task
        prev_grad = _grad_state.enabled
        prev_capture = _worker_local.task
        _current.graph_task = graph_task
        _worker_local.task = graph_task
        _grad_state.enabled = graph_task.create_graph
        try:
            node = task.node
            if graph_task.exception is None:
                with quiet_float_errors():  # see NOTE [Quiet backward]
                    following = self.evaluate_function(graph_task, node, task.inputs)
                    while following is not None:
                        node = following[0]
                        following = self.evaluate_function(graph_task, node, following[1])
        except BaseException as e:  # noqa: BLE001 - handed to the graph task's owner
            self._fail(graph_task, e, node)
        finally:
            _current.graph_task = prev
            _anomaly._running.node = None  # (a worker keeps no node alive)
            _worker_local.task = prev_capture
            _grad_state.enabled = prev_grad
            with graph_task.cond:
                graph_task.outstanding_tasks -= 1
                if not graph_task.outstanding_tasks:  # the caller may be waiting to finish
                    graph_task.cond.notify_all()

    def _push_ready(self, graph_task, node, buffer, grad):
        """Put a ready node on the queue of the device of its input gradients."""
        if grad is None:
            grad = next((g for g in buffer if g is not None), None)
        if grad is None:
            device = node._input_metadata_[0].device if node._input_metadata_ else CPU
        else:
            device = CPU if type(grad) in RAW_GRADS else grad._device
        # NOTE [CPU queue entries]; see NOTE [Multithreading switch]
        if device is CPU or device.type == "cpu" or not is_multithreading_enabled():
            heappush(
                graph_task.cpu_ready_queue._heap,
                (-node._sequence_nr_, next(_tiebreak), node, buffer),
            )
            if graph_task.threaded:
                with graph_task.cond:
                    graph_task.cond.notify_all()
        else:
            task = _new_tuple(NodeTask, (graph_task, node, buffer, graph_task.reentrant_depth))
            queue = self.device_queue(device)
            if not graph_task.threaded:
                # NOTE [Lazy graph task condition]
                # only a task that uses a worker waits or
                # notifies (thread_main waits only while a worker holds a node); the first node
                # sent to a worker is sent by the task's own thread, before any other can look.
                graph_task.cond = threading.Condition(graph_task._lock)
            with graph_task.cond:
                graph_task.threaded = True
                graph_task.outstanding_tasks += 1
            queue.push(task)
        if graph_task.observer is not None:
            graph_task.observer.node_ready(graph_task, node, device)

    def shutdown(self, timeout=1.0):
        """Stop the device workers (at interpreter exit)."""
        for queue, _ in self._workers:
            queue.push_shutdown()
        for _, thread in self._workers:
            thread.join(timeout)
        self._workers.clear()
        self._device_queues.clear()

    # NOTE [A plain pass]
    # Most passes are plain: those that carry gradients as arrays (one thread, nothing watching, no
    # create_graph: NOTE [Gradients carried as arrays]). There a node of a row without hooks (and,
    # in ``grad(inputs=)``, one that leads to an input and captures nothing) runs by its arrays
    # path alone (which also releases its saved values, before the validation rather than after:
    # a row's gradient never needs them to be validated); ``_evaluate_plain`` checks that a node
    # qualifies, and any other node, or a pass that turns to a device worker (which it stays),
    # takes ``evaluate_function``. ``_evaluate_plain`` also runs the nodes handed on (NOTE [Chains
    # skip the queue]) while they qualify, in a loop: along a chain the engine makes one call, not
    # one per node, which is most of the engine's cost per node in a graph of small tensors. Both
    # give the same results (tests/autograd/test_carried_arrays.py runs graphs both ways).
    # NOTE [Single-edge fast path]
    # Most nodes of a chain have one edge with a function (``x * 2.0`` has a second, empty edge
    # for the number), whose next node has one input and waits for nothing else, and a gradient
    # of the expected shape, dtype and device: that node is ready at once and, unless a queued
    # node comes first, runs next (NOTE [Chains skip the queue]). In a plain pass, the condition
    # at the top of the loop is the check and the routing below for that one case, without their
    # loops: the routing loop costs about 0.7 us more per node there (W1's backward, 1.38x in CPU
    # time without it: tests/benchmarks/engine_ab.py). ``evaluate_function`` has the routing's
    # part of it, before its call to ``_route`` (W6's create_graph pass: most of its nodes).
    def _evaluate_plain(self, graph_task, node, inputs):
        """``evaluate_function`` in a plain pass (NOTE [A plain pass]), for ``node`` and the
        nodes handed on after it (NOTE [Chains skip the queue]) while they qualify."""
        deps = graph_task.dependencies
        not_ready = graph_task.not_ready
        heap = graph_task.cpu_ready_queue._heap
        exec_info = graph_task.exec_info
        release = not graph_task.keep_graph
        try:
            while True:
                apply_arrays = node._apply_arrays
                if (
                    apply_arrays is None
                    or node._tensor_pre_hooks
                    or node._retains_grad_hooks
                    or node._pre_hooks
                    or node._post_hooks
                    or exec_info is not None  # (``grad(inputs=)``: a node that captures,
                    and (info := exec_info.get(node)) is not _NEEDED  # or does not run)
                    and (info is None or not info.needed or info.captures is not None)
                ):
                    return self.evaluate_function(graph_task, node, inputs)
                # (a generated apply: one output per edge; it releases the saved values)
                outputs = apply_arrays(inputs, release)
                fns, nrs = node._next_fns, node._next_nrs
                if (  # NOTE [Single-edge fast path]
                    (len(fns) == 1 or len(fns) == 2 and fns[1] is None)
                    and (fn := fns[0]) is not None
                    and type(grad := outputs[0]) in RAW_GRADS
                    and deps[fn] == 1
                    and len(fn._input_metadata_) <= 1
                    and (not not_ready or fn not in not_ready)
                    and grad.shape == (meta := fn._input_metadata_[nrs[0]]).shape
                    and grad.dtype is meta.dtype.np
                    and meta.device is CPU
                    and not graph_task.threaded
                ):
                    deps[fn] = 0
                    if heap and heap[0][0] <= -fn._sequence_nr_:  # a queued node first
                        heappush(heap, (-fn._sequence_nr_, next(_tiebreak), fn, [grad]))
                        return None
                    node, inputs = fn, [grad]
                    outputs = grad = None  # (see NOTE [Stealing the gradient], as below)
                    continue
                for fn, input_nr, grad in zip(fns, nrs, outputs):  # see NOTE [Routing inlined]
                    if grad is not None and fn is not None:
                        meta = fn._input_metadata_[input_nr]
                        data = grad if type(grad) in RAW_GRADS else grad._data
                        if (
                            data.shape != meta.shape
                            or data.dtype is not meta.dtype.np
                            or (CPU if data is grad else grad._device) is not meta.device
                        ):
                            self._validate(node, fns, nrs, as_tensors(outputs))
                            break
                following = None
                for fn, input_nr, grad in zip(fns, nrs, outputs):  # see NOTE [Routing inlined]
                    if fn is None:
                        continue
                    count = deps[fn] - 1
                    deps[fn] = count
                    if exec_info is not None and not exec_info.get(fn, _SKIP).should_execute():
                        continue  # (``grad(inputs=)``: only nodes that lead to an input run)
                    buf = not_ready.get(fn) if not_ready else None
                    if buf is None:
                        n_inputs = len(fn._input_metadata_)
                        if not count and n_inputs <= 1:
                            buf = [grad]
                        else:
                            buf = [None] * (n_inputs or 1)
                            buf[input_nr] = grad
                            if count:
                                not_ready[fn] = buf
                                continue
                    else:
                        if grad is not None:  # InputBuffer.add, inlined
                            buf[input_nr] = (
                                grad if buf[input_nr] is None else _accumulate(buf, input_nr, grad)
                            )
                        if count:
                            continue
                        del not_ready[fn]
                    if grad is None or type(grad) not in RAW_GRADS and grad._device is not CPU:
                        self._push_ready(graph_task, fn, buf, grad)
                        continue
                    if following is None:
                        following, following_buf = fn, buf
                        continue
                    seq, held = fn._sequence_nr_, following._sequence_nr_
                    if seq > held:  # fn is held back instead
                        heappush(heap, (-held, next(_tiebreak), following, following_buf))
                        following, following_buf = fn, buf
                        continue
                    if seq == held:  # both queued, in the order they became ready
                        heappush(heap, (-held, next(_tiebreak), following, following_buf))
                        following = None
                    heappush(heap, (-seq, next(_tiebreak), fn, buf))
                if following is None:
                    return None
                if heap and heap[0][0] <= -following._sequence_nr_:  # a queued node first
                    heappush(
                        heap, (-following._sequence_nr_, next(_tiebreak), following, following_buf)
                    )
                    return None
                if graph_task.threaded:  # (a node went to a device worker)
                    return following, following_buf
                node, inputs = following, following_buf
                # a gradient this frame still named would count as held elsewhere, and be
                # neither summed into in place nor stolen by AccumulateGrad (NOTE [Accumulate
                # in place], NOTE [Stealing the gradient])
                outputs = grad = data = following = following_buf = buf = None
        except BaseException as e:  # noqa: BLE001 - the node that raised is named, then raised
            self._fail(graph_task, e, node)
            raise

    # NOTE [Routing inlined]
    # A node's outputs are checked against the inputs of the next nodes, then sent to them. A
    # gradient usually has its input's shape, dtype and device already: the check is all it
    # costs, and ``_validate`` reduces or casts it (or raises) on the first mismatch. Then each
    # gradient goes to its next node's input buffer (a list with one slot per input; with
    # ``grad(inputs=)``, a node that leads to none of them is skipped); a node whose dependencies
    # reach 0 is ready. In a pass on one thread, a ready node goes on the queue (NOTE [CPU queue
    # entries]), except the one the queue would hand back next, which is handed back to run
    # directly (NOTE [Chains skip the queue]): of the nodes made ready here, the one with the
    # highest ``sequence_nr`` is held back, and run when it is higher than every queued node's.
    # Nodes of equal ``sequence_nr`` (accumulators) all go on the queue, in the order they became
    # ready, as the queue would order them. In a pass that uses device workers, the buffers are
    # filled under the graph task's lock and the ready nodes are queued after it
    # (``_dispatch_ready``). The loops are written inline, with no call per edge: this is the
    # engine's innermost loop. They are written twice: in ``evaluate_function`` and ``_route`` for
    # any pass (Tensors, device workers, an observer, post-hooks), and in ``_evaluate_plain`` for
    # a plain pass (NOTE [A plain pass]) without what it cannot meet: a call per node from the
    # plain loop to a shared function is measurable on W9 (a graph of 0-d tensors where nearly
    # every node has two edges; ``tests/benchmarks/engine_ab.py`` prints it). In any other pass,
    # ``evaluate_function`` calls ``_before_apply`` (captures, tensor hooks, prehooks) only for a
    # node that has hooks or, in ``grad(inputs=)``, is not simply on a path to an input, and
    # ``_route`` only for a node that the single-edge fast path does not cover. A change to one
    # copy of the loops is a change to both (each has its own mutants in tests/mutation.py).
    def evaluate_function(self, graph_task, node, inputs):
        """Hooks, the node, validation and routing for one ready node (PyTorch's
        ``evaluate_function`` and ``call_function``: NOTE [Hook order], NOTE [Routing inlined]);
        returns the next node to run and its inputs when the caller may run it directly (NOTE
        [Chains skip the queue]), else None."""
        observer = graph_task.observer
        exec_info = graph_task.exec_info
        if (
            node._tensor_pre_hooks
            or node._retains_grad_hooks
            or node._pre_hooks
            or exec_info is not None  # (``grad(inputs=)``: a node that captures, or does not
            and (info := exec_info.get(node)) is not _NEEDED  # run; the root needs nothing)
            and (info is None or not info.needed or info.captures is not None)
        ):
            inputs = self._before_apply(graph_task, node, inputs)
            if inputs is None:
                return None
        if graph_task.anomaly:  # nodes made while this one runs name it as their parent
            _anomaly._running.node = node
        if observer is not None:
            observer.node_start(graph_task, node, list(inputs))
        if graph_task.carries_arrays:  # NOTE [Gradients carried as arrays]
            if node._apply_arrays is None or graph_task.threaded or node._post_hooks:
                outputs = node.apply(as_tensors(inputs))
            else:
                outputs = node._apply_arrays(inputs)
        else:  # (gradients are Tensors in any other pass)
            outputs = node.apply(inputs)
        fns, nrs = node._next_fns, node._next_nrs
        n_edges = len(fns)
        if len(outputs) != n_edges:
            raise RuntimeError(
                f"Function {node.name()} returned an invalid number of gradients - expected "
                f"{n_edges}, but got {len(outputs)}"
            )
        for fn, input_nr, grad in zip(fns, nrs, outputs):
            if grad is not None and fn is not None:
                meta = fn._input_metadata_[input_nr]
                data = grad if type(grad) in RAW_GRADS else grad._data
                if (
                    data.shape != meta.shape
                    or data.dtype is not meta.dtype.np
                    or (CPU if data is grad else grad._device) is not meta.device
                ):
                    self._validate(node, fns, nrs, as_tensors(outputs))
                    break
        if graph_task.check_nan:
            _anomaly.check_nan(node, outputs)
        if node._post_hooks:
            outputs = self.call_post_hooks(graph_task, node, outputs, inputs)
        if observer is not None:
            observer.node_end(graph_task, node, list(outputs))
        if not graph_task.keep_graph:
            node.release_variables()
        deps = graph_task.dependencies
        if (  # NOTE [Single-edge fast path], in a pass on one thread
            (n_edges == 1 or n_edges == 2 and fns[1] is None)
            and (fn := fns[0]) is not None
            and deps[fn] == 1
            and (grad := outputs[0]) is not None
            and (type(grad) in RAW_GRADS or grad._device is CPU)
            and len(fn._input_metadata_) <= 1
            and (not (not_ready := graph_task.not_ready) or fn not in not_ready)
            and not graph_task.threaded
        ):  # (``grad(inputs=)`` too: a node that runs leads to one, so its one edge does)
            deps[fn] = 0
            if observer is not None:
                observer.node_ready(graph_task, fn, CPU)
            heap = graph_task.cpu_ready_queue._heap
            if heap and heap[0][0] <= -fn._sequence_nr_:  # a queued node first
                heappush(heap, (-fn._sequence_nr_, next(_tiebreak), fn, [grad]))
                return None
            return fn, [grad]
        return self._route(graph_task, fns, nrs, outputs)

    def _route(self, graph_task, fns, nrs, outputs):
        """Send a node's validated ``outputs`` to its next nodes (NOTE [Routing inlined]); return
        the next node to run and its inputs when the caller may run it directly, else None."""
        observer = graph_task.observer
        exec_info = graph_task.exec_info
        deps = graph_task.dependencies
        not_ready = graph_task.not_ready
        heap = graph_task.cpu_ready_queue._heap
        threaded = graph_task.threaded
        ready = [] if threaded else None
        following = None
        if threaded:
            graph_task._lock.acquire()
        try:
            for fn, input_nr, grad in zip(fns, nrs, outputs):
                if fn is None:
                    continue
                count = deps[fn] - 1
                deps[fn] = count
                if exec_info is not None and not exec_info.get(fn, _SKIP).should_execute():
                    continue  # (``grad(inputs=)``: only nodes that lead to an input run)
                buf = not_ready.get(fn) if not_ready else None
                if buf is None:
                    n_inputs = len(fn._input_metadata_)
                    if not count and n_inputs <= 1:
                        buf = [grad]
                    else:
                        buf = [None] * (n_inputs or 1)
                        buf[input_nr] = grad
                        if count:
                            not_ready[fn] = buf
                            continue
                else:
                    if grad is not None:  # InputBuffer.add, inlined
                        buf[input_nr] = (
                            grad if buf[input_nr] is None else _accumulate(buf, input_nr, grad)
                        )
                    if count:
                        continue
                    del not_ready[fn]
                if threaded:  # (queued once the lock is let go)
                    ready.append((fn, buf, grad))
                    continue
                if grad is None or type(grad) not in RAW_GRADS and grad._device is not CPU:
                    self._push_ready(graph_task, fn, buf, grad)
                    continue
                if observer is not None:
                    observer.node_ready(graph_task, fn, CPU)
                if following is None:
                    following, following_buf = fn, buf
                    continue
                seq, held = fn._sequence_nr_, following._sequence_nr_
                if seq > held:  # fn is held back instead
                    heappush(heap, (-held, next(_tiebreak), following, following_buf))
                    following, following_buf = fn, buf
                    continue
                if seq == held:  # both queued, in the order they became ready
                    heappush(heap, (-held, next(_tiebreak), following, following_buf))
                    following = None
                heappush(heap, (-seq, next(_tiebreak), fn, buf))
        finally:
            if threaded:
                graph_task._lock.release()
        if threaded:
            return self._dispatch_ready(graph_task, ready)
        if following is None:
            return None
        if heap and heap[0][0] <= -following._sequence_nr_:  # a queued node first
            heappush(heap, (-following._sequence_nr_, next(_tiebreak), following, following_buf))
            return None
        return following, following_buf

    def _before_apply(self, graph_task, node, inputs):
        """What ``evaluate_function`` does before a node with hooks, or in ``grad(inputs=)`` one
        other than those on a path to an input that capture nothing, runs: captures, tensor
        hooks and prehooks (NOTE [Hook order]); returns the inputs to run it with, or None when
        it does not run."""
        exec_info = graph_task.exec_info
        if exec_info is not None:
            info = exec_info.get(node)
            if info is None:
                return None
            if graph_task.carries_arrays and (not info.needed or info.captures is not None):
                as_tensors(inputs)  # (what hooks see, and what ``grad()`` gives back)
            if not info.needed:
                inputs = self.call_tensor_pre_hooks(graph_task, node, inputs)
            if info.captures is not None:
                for input_idx, output_idx in info.captures:
                    graph_task.captured_vars[output_idx] = inputs[input_idx]
            if not info.needed:
                return None
        if node._tensor_pre_hooks or node._retains_grad_hooks or node._pre_hooks:
            if graph_task.carries_arrays:
                as_tensors(inputs)
            if node._tensor_pre_hooks or node._retains_grad_hooks:
                inputs = self.call_tensor_pre_hooks(graph_task, node, inputs)
            if node._pre_hooks:
                inputs = self.call_pre_hooks(graph_task, node, inputs)
        return inputs

    def _dispatch_ready(self, graph_task, ready):
        """Queue the nodes ``_route`` found ready in a pass that uses device workers, or hand the
        only one back to run next on this worker (NOTE [Routing inlined])."""
        observer = graph_task.observer
        own = _current.device_queue
        if own is not None and len(ready) == 1 and not own._heap:
            fn, buf, grad = ready[0]
            if grad is not None and grad._device == own.device:
                if observer is not None:
                    observer.node_ready(graph_task, fn, grad._device)
                return fn, buf  # NOTE [Chains skip the queue], on a device worker
        for fn, buf, grad in ready:
            self._push_ready(graph_task, fn, buf, grad)
        return None

    @staticmethod
    def validate_outputs(node, edges, grads):
        """Reduce each gradient to its input's shape and dtype, or raise (PyTorch's
        ``validate_outputs``); ``edges``: the node's next edges, ``(function, input_nr)``."""
        Engine._validate(node, [fn for fn, _ in edges], [nr for _, nr in edges], grads)

    @staticmethod
    def _validate(node, fns, nrs, grads):
        """``validate_outputs`` on the two tuples a node keeps its edges in (NOTE [Edges stored
        as two tuples])."""
        for i, grad in enumerate(grads):
            if grad is None:
                continue
            fn = fns[i]
            if fn is None:
                continue
            meta = fn._input_metadata_[nrs[i]]
            shape = grad._data.shape
            if shape != meta.shape:
                if not _expandable(meta.shape, shape):
                    raise RuntimeError(
                        f"Function {node.name()} returned an invalid gradient at index {i} - got "
                        f"{list(shape)} but expected shape compatible with {list(meta.shape)}"
                    )

                grad = sum_to(grad, meta.shape)
                grads[i] = grad
            if grad._data.dtype is not meta.dtype.np and grad._data.dtype != meta.dtype.np:
                if (
                    type(fn) is not AccumulateGrad
                    or getattr(fn.variable, "_grad_dtype", 0) is not None
                ):
                    grads[i] = grad = grad.to(meta.dtype)  # (NOTE [grad_dtype]: None, any)
            if grad._device is not meta.device and grad._device != meta.device:
                if grad._data.ndim:  # as PyTorch: only a 0-d gradient is moved
                    raise RuntimeError(
                        f"Function {node.name()} returned an invalid gradient at index {i} - "
                        f"expected device {meta.device} but got {grad._device}"
                    )
                grads[i] = grad.to(meta.device)

    # -- hooks ------------------------------------------------------------------------------
    def call_tensor_pre_hooks(self, graph_task, node, inputs):
        """Tensor hooks, then retain_grad hooks (see NOTE [Hook order])."""
        hooks = node._tensor_pre_hooks
        if hooks:
            inputs = list(inputs)
            for h in tuple(hooks):
                if not h.enabled:
                    continue
                k = h.output_nr
                grad = inputs[k]  # None for an output that got no gradient: PyTorch calls the
                new = h.fn(grad)  # hook all the same, with None
                if graph_task.observer is not None:
                    graph_task.observer.hook(graph_task, "tensor", node, h, grad, new)
                if new is not None:
                    if grad is not None:
                        _check_hook_value(h.fn, grad, new, node)
                    inputs[k] = new
        retains = node._retains_grad_hooks
        if retains:
            for k, ref in retains.items():
                t = ref()
                grad = inputs[k] if k < len(inputs) else None
                if t is None or grad is None:
                    continue
                if t._grad is None:
                    t._grad = grad._detached_copy() if not graph_task.create_graph else grad.clone()
                else:
                    t._grad = t._grad + grad
        return inputs

    def call_pre_hooks(self, graph_task, node, inputs):
        for h in tuple(node._pre_hooks):
            if not h.enabled:
                continue
            before = tuple(inputs)
            new = h.fn(before)
            if graph_task.observer is not None:
                graph_task.observer.hook(graph_task, "prehook", node, h, before, new)
            if new is not None:
                inputs = _check_hook_values(h.fn, before, new, node)
        return inputs

    def call_post_hooks(self, graph_task, node, outputs, inputs):
        for h in tuple(node._post_hooks):
            if not h.enabled:
                continue
            before = tuple(outputs)
            new = h.fn(before, tuple(inputs))
            if graph_task.observer is not None:
                graph_task.observer.hook(graph_task, "posthook", node, h, before, new)
            if new is not None:
                outputs = _check_hook_values(h.fn, before, new, node)
        return outputs

    # -- callbacks and events -----------------------------------------------------------------
    def exec_post_processing(self, graph_task):
        """Run the callbacks queued with ``queue_callback`` (they may queue more)."""
        if not graph_task.final_callbacks:  # (mostly none; no node runs now to queue one)
            return
        i = 0
        while True:
            with graph_task._lock:
                if i >= len(graph_task.final_callbacks):
                    break
                cb = graph_task.final_callbacks[i]
            cb()
            i += 1


def _expandable(target, shape):
    """Whether ``shape`` can be summed down to ``target`` (``target`` broadcasts to it)."""
    if len(target) > len(shape):
        return False
    for t, s in zip(reversed(target), reversed(shape)):
        if t != s and t != 1:
            return False
    return True


def _check_hook_value(fn, old, new, node):
    """A hook's replacement gradient must keep the shape, dtype and device (names the hook and
    the node it ran on)."""
    name = hook_name(fn)
    where = f" (a hook on {node.name()})"
    if not isinstance(new, Tensor):
        raise TypeError(
            f"hook '{name}' returned a {type(new).__name__}{where}; a tensor hook must return a "
            "Tensor or None"
        )
    if new.shape != old.shape:
        raise RuntimeError(
            f"hook '{name}' has changed the size of value{where}: expected {list(old.shape)} but "
            f"got {list(new.shape)}. Return a gradient of the same shape, or None."
        )
    if new.dtype is not old.dtype:
        raise RuntimeError(
            f"hook '{name}' has changed the type of value (was {old.dtype._legacy[:-6]} got "
            f"{new.dtype._legacy[:-6]}){where}. Cast the result back, e.g. .to(grad.dtype)."
        )
    if new.device != old.device:
        raise RuntimeError(
            f"hook '{name}' has changed the device of value (was {old.device} got "
            f"{new.device}){where}"
        )


def _check_hook_values(fn, old, new, node):
    if not isinstance(new, (tuple, list)):
        raise TypeError(
            f"hook '{hook_name(fn)}' returned a {type(new).__name__} (a hook on {node.name()}); "
            "expected a tuple of Tensors or None"
        )
    if len(new) != len(old):
        raise RuntimeError(
            f"hook '{hook_name(fn)}' has returned an incorrect number of values (got {len(new)}, "
            f"but expected {len(old)}) (a hook on {node.name()})"
        )
    for o, n in zip(old, new):
        if o is not None and n is not None:
            _check_hook_value(fn, o, n, node)
    return list(new)


_default_engine = Engine()
atexit.register(_default_engine.shutdown)


def get_default_engine() -> Engine:
    """The engine ``backward`` and ``grad`` use (``Variable._execution_engine``)."""
    return _default_engine


__all__ += ["AccumulateGrad", "Node"]
