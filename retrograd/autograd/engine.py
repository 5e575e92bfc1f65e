"""The backward pass: one iterative walk over the graph, shared by backward() and autograd.grad().

1. Count, for every node reachable from the roots, how many edges point at it (its
   dependencies), with an explicit stack: no recursion, so a 1,000,000-node chain is fine.
2. When only some inputs are wanted (autograd.grad, backward(inputs=...)), count only the nodes
   that lead to one of them (`deps` holds no other); of those, the ones above a wanted node run, a
   wanted node with none below it only hands its gradient over (autograd.grad) unless backward
   must run it.
3. Start from the roots; a node runs once every consumer has sent its gradient (its count hits
   zero), leaf accumulators first, then the node made last (Note [execution order]). Pending
   gradients wait in a dict and are dropped as soon as they are used; a second one for the same
   input is added into the first when nothing else sees it (graph.sum_gradients).
4. After a node runs, what it saved is released unless retain_graph.
5. At the end, the callbacks queued during the pass run (Variable._execution_engine.queue_callback).
Rules run with grad mode on only when create_graph, so higher derivatives come for free.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable, Sequence
from heapq import heapify, heappop, heappush
from typing import Any

from . import grad_mode
from .forward_ad import transforms
from .graph import AccumulateGrad, Node, accumulate_into, anomaly, edge_of, running_node, sum_gradients

# Note [execution order]
# torch's engine takes, among the nodes whose gradients are complete, a leaf's AccumulateGrad
# first (so .grad and post-accumulate hooks see a gradient as early as possible), then the node
# made last, by its sequence number (Note [sequence numbers] in graph.py). Here too, so hooks run,
# and gradients meeting at a node are summed, in torch's order. Ready accumulators wait in a list
# (`leaves`); the other ready nodes in a heap keyed by their negated number and their id (which
# settles ties of numbers set by hand), except the newest, when it is newer than every node in the
# heap: it waits outside (`following`) and runs next. A chain, most of any graph, never touches
# the heap, and a node with two inputs made in order pushes only the older one.

# Note [gradients not asked for]
# autograd.grad(out, inputs) and backward(inputs=...) run only the nodes on a path to a wanted input
# (the keys of `deps`), and, as torch's exec_info does, a generated node computes only the formulas of its
# edges that lead there (the children counted in `deps`): an input that requires grad but was not
# asked for costs nothing and cannot raise (igamma's gradient for `a`, say). Its gradient is None,
# also for the node's post-hooks, as torch's is undefined.

# Note [reentrant backward]
# A custom Function's backward may itself call backward() (checkpointing does). Each call is a
# graph task of its own, run to completion on the calling thread while the outer one waits, as in
# torch. Python's stack is shallow, so, like torch's engine when the C++ stack gets deep, a call
# nested MAX_DEPTH tasks deep runs on a fresh thread (with the caller's grad mode), which starts
# with an empty stack; the caller waits for it.
MAX_DEPTH = 32


class GraphTask:
    """One backward call: the nodes it reaches, those it runs, and the callbacks queued for its end."""

    __slots__ = ("id", "deps", "captured", "callbacks", "checkpoint_valid")

    def __init__(self, deps: dict, captured: set, checkpoint_valid: bool) -> None:
        self.id = next(_task_ids)
        # False with explicit inputs, or nested in such a task: the reentrant checkpoint cannot compute
        # the gradients of just those inputs (torch's is_checkpoint_valid)
        self.checkpoint_valid = checkpoint_valid
        self.deps = deps  # node -> consumers not yet run; every node the task reaches is a key
        self.captured = captured  # the nodes whose gradients autograd.grad returns
        self.callbacks: list[Callable[[], Any]] = []


class _EngineState(threading.local):
    """Per thread: the graph tasks running (innermost last) and torch's multithreading flag."""

    def __init__(self) -> None:
        self.tasks: list[GraphTask] = []
        self.multithreading = True


_engine = _EngineState()
_task_ids = itertools.count()


def run_backward(outputs: Sequence, grad_outputs: Sequence, retain_graph: bool, create_graph: bool,
                 inputs: Sequence | None = None, capture: bool = False) -> list | None:
    """Backpropagate `grad_outputs` from `outputs` (tensors or GradientEdges).

    capture=False (backward): accumulate into `.grad` of every leaf, or only of `inputs`.
    capture=True (autograd.grad): return the gradient of each of `inputs`, touch no `.grad`.
    """
    tasks = _engine.tasks  # this thread's (Note [thread-local modes] in grad_mode.py: read once)
    if len(tasks) >= MAX_DEPTH:  # Note [reentrant backward]
        return _on_fresh_thread(run_backward, outputs, grad_outputs, retain_graph, create_graph, inputs, capture)
    roots = [_root_edge(i, out) for i, out in enumerate(outputs)]

    # Steps 1 and 2: dependency counts over everything reachable, or with explicit inputs over the
    # nodes that lead to one of them.
    targets: dict[tuple, list[int]] = {}
    target_nodes: set[Node] = set()  # autograd.grad's inputs' nodes: they hand their gradients over
    pruned = False  # some reachable node leads to no wanted input (Note [gradients not asked for])
    if inputs is None:
        deps = _dependencies(roots)
    else:
        for k, t in enumerate(inputs):
            node, nr = _input_edge(t, capture)
            if node is not None:
                targets.setdefault((node, nr), []).append(k)
                target_nodes.add(node)
        deps, pruned = _dependencies_towards(roots, target_nodes)
        if not capture:  # backward(inputs=...): the inputs' own nodes run as any other (a leaf's accumulates)
            targets, target_nodes = {}, set()

    # Step 3: run nodes as their counts reach zero.
    buffers: dict[Node, list] = {}
    for (node, nr), grad in zip(roots, grad_outputs):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * (len(node._out_meta) if node._out_meta else 1)
        buf[nr] = grad if buf[nr] is None else buf[nr] + grad
    ready = [(-node._seq, id(node), node) for node in buffers if deps.get(node) == 0]  # a heap (Note [execution order])
    heapify(ready)
    leaves: list[Node] = []  # ready accumulators, run before the other ready nodes (Note [execution order])
    captured: list = [None] * (len(inputs) if inputs is not None else 0)
    task = GraphTask(deps, target_nodes, inputs is None and (tasks[-1].checkpoint_valid if tasks else True))
    state = grad_mode._state
    tracer = state.tracer
    prev = (state.grad, state.inference)
    if prev[0] != create_graph:  # grad mode is create_graph while rules run (three thread-local writes)
        grad_mode._set_modes(create_graph, prev[1])
    saved_hooks = transforms.saved_hooks  # what a hook enters or exits during backward is undone after, as in torch
    selective = bool(target_nodes) or pruned
    tasks.append(task)
    try:
        following = None  # the newest ready node, when newer than all in the heap (Note [execution order])
        while True:
            if leaves:
                node = leaves.pop()
            elif following is not None:
                node = following
                following = None
            elif ready:
                node = heappop(ready)[2]
            else:
                break
            grads = buffers.pop(node)
            wanted = None
            if selective:  # explicit inputs
                if node in target_nodes:  # torch hands over what arrived, before any hook of the node
                    if not any(child in deps for child in node._next_nodes):  # no wanted input below: it does not run
                        _deliver(node, _call_tensor_hooks(node, grads), targets, captured)
                        continue
                    _deliver(node, grads, targets, captured)
                if pruned and node._takes_wanted:  # Note [gradients not asked for]
                    edges = node._next_nodes
                    wanted = tuple([child if child in deps else None for child in edges])
                    if wanted == edges:
                        wanted = None
            if node._hookset is None and grads[0] is not None and tracer is None and not anomaly.enabled:
                if type(node) is AccumulateGrad:  # a leaf's: no edges onwards
                    variable = node.variable
                    if variable._extra is None or "hooks" not in variable._extra:  # no tensor hooks: the addition
                        accumulate_into(variable, grads[0])
                    else:
                        _run_node(node, grads, retain_graph)
                    grads = None  # so that .grad may keep the gradient without copying (graph._stealable)
                    continue
                # the common node, inline
                outs = node.apply(grads) if wanted is None else node.apply(grads, wanted)
                if not retain_graph:
                    node.release()
                if node._hookset is not None:  # registered while it ran: they see no inputs, as in torch
                    outs = _call_post_hooks(node, outs, [None] * len(grads))
            else:
                if tracer is not None:
                    tracer.node_starting(node)
                outs = _run_node(node, grads, retain_graph, wanted)
                if tracer is not None:
                    tracer.node_ran(node, grads, None if type(node) is AccumulateGrad else outs)
            for child, nr, g in zip(node._next_nodes, node._next_nrs, outs):
                count = deps.get(child)
                if count is None:  # no node (an input that wants no gradient), or not on a path to a wanted input
                    continue
                buf = buffers.get(child)
                if buf is None:
                    meta = child._out_meta
                    if not meta:  # one output: its buffer is made full
                        buffers[child] = [g]
                    else:
                        buf = buffers[child] = [None] * len(meta)
                        buf[nr] = g
                elif g is not None:
                    buf[nr] = g if buf[nr] is None else sum_gradients(buf[nr], g)
                if count == 1:
                    if type(child) is AccumulateGrad:
                        leaves.append(child)
                    elif following is None:
                        if not ready or child._seq > -ready[0][0]:
                            following = child
                        else:
                            heappush(ready, (-child._seq, id(child), child))
                    elif child._seq > following._seq:
                        heappush(ready, (-following._seq, id(following), following))
                        following = child
                    else:
                        heappush(ready, (-child._seq, id(child), child))
                deps[child] = count - 1
            if tracer is not None:  # its gradients are in the next nodes' buffers (torch's evaluate_function ends)
                tracer.node_finished(node)
            outs = g = grads = buf = None  # drop references so AccumulateGrad may keep a gradient without copying
        callbacks = task.callbacks
        if callbacks:  # they run in the caller's modes (restored again below, for an exception)
            grad_mode._set_modes(*prev)
        while callbacks:  # a callback may queue another: it runs too
            callbacks.pop(0)()
    finally:
        if state.grad is not prev[0] or state.inference is not prev[1]:
            grad_mode._set_modes(*prev)
        tasks.pop()
        if transforms.saved_hooks is not saved_hooks:
            transforms.saved_hooks = saved_hooks
            transforms.update()
    return captured if capture else None


def _root_edge(i: int, output: Any) -> tuple:
    """The edge a root gradient enters by: a GradientEdge itself, or the edge of a tensor that requires grad."""
    if isinstance(output, tuple):  # a GradientEdge
        return (output[0], output[1])
    if not output._requires_grad:
        raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    return edge_of(output)


def _input_edge(t: Any, capture: bool) -> tuple:
    """The edge whose gradient an input receives. backward(inputs=[non-leaf]) keeps the gradient in
    `.grad` by retain_grad(), as torch does (the tensor retains gradients from then on)."""
    if isinstance(t, tuple):  # a GradientEdge
        return (t[0], t[1])
    if not capture and t.grad_fn is not None:
        t.retain_grad()
    return edge_of(t)


def _dependencies(roots: list) -> dict:
    """For every node reachable from the roots, how many edges point at it (explicit stack, no recursion)."""
    deps: dict[Node, int] = {}
    stack = []
    for node, _ in roots:
        if node not in deps:
            deps[node] = 0
            stack.append(node)
    while stack:  # depth first: the stack stays short on a long chain
        for child in stack.pop()._next_nodes:
            if child is not None:
                count = deps.get(child)
                if count is None:
                    deps[child] = 1
                    stack.append(child)
                else:
                    deps[child] = count + 1
    return deps


def _dependencies_towards(roots: list, wanted: set) -> tuple[dict, bool]:
    """Dependency counts among the nodes that lead to a wanted node (a node that leads there runs,
    unless it is a wanted node with none below it). Every consumer of such a node leads there too, so
    its count is its full count of consumers: one walk down records each node's consumers, one walk
    back up from the wanted nodes counts them. When every node with no edge onwards is a wanted one,
    every node leads to one (follow any edge down) and the walk back is skipped. Also: whether some
    reachable node leads to no wanted one (then the nodes that run skip the formulas of edges towards it)."""
    consumers: dict[Node, list] = {node: [] for node, _ in roots}
    stack = list(consumers)
    stray = False  # a node with no edge onwards that is not wanted: some nodes may lead nowhere wanted
    for node in stack:  # the list grows as nodes are found: each is visited once
        end = True
        for child in node._next_nodes:
            if child is not None:
                end = False
                seen = consumers.get(child)
                if seen is None:
                    consumers[child] = [node]
                    stack.append(child)
                else:
                    seen.append(node)
        if end and node not in wanted:
            stray = True
    if not stray:
        return {node: len(above) for node, above in consumers.items()}, False
    deps: dict[Node, int] = {}
    stack = [node for node in wanted if node in consumers]
    for node in stack:
        if node not in deps:
            above = consumers[node]
            deps[node] = len(above)
            stack.extend(above)
    return deps, len(deps) < len(consumers)


def _deliver(node: Node, grads: list, targets: dict, captured: list) -> None:
    """Hand the gradients arriving for wanted inputs to autograd.grad's result."""
    for nr, g in enumerate(grads):
        for k in targets.get((node, nr), ()):
            captured[k] = g


def _call_tensor_hooks(node: Node, grads: list) -> list:
    """Hooks registered on the tensors this node produced (a leaf's own, for its accumulator), each
    given the gradient and able to replace it, then retain_grad, which sees the result."""
    hs = node._hookset
    if type(node) is AccumulateGrad:
        fns = node.variable._backward_hooks
        if fns:
            _call_hooks_of_output(fns, grads, 0)
    elif hs is not None:
        for nr, dicts in hs.tensor.items():
            for fns in dicts:
                _call_hooks_of_output(fns, grads, nr)
    if hs is not None:
        for nr, ref in hs.retained.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                t._grad = grads[nr].detach().clone() if t._grad is None else t._grad + grads[nr].detach()
    return grads


def _call_hooks_of_output(fns: dict, grads: list, nr: int) -> None:
    """The hooks of one output, called as torch does even when no gradient arrived for it (None: an
    output of a multi-output node that backward did not reach)."""
    for fn in list(fns.values()):
        new = fn(grads[nr])
        if new is not None:
            grads[nr] = checked_hook_result(new)


def checked_hook_result(value: Any) -> Any:
    """What a tensor hook returned, refused with torch's TypeError unless it is a tensor."""
    from .._tensor import Tensor

    if not isinstance(value, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(value).__name__}'")
    return value


def _run_node(node: Node, grads: list, retain_graph: bool, wanted: tuple | None = None) -> list:
    """Apply one node as torch's call_function does: tensor hooks, pre-hooks, its VJPs (an
    accumulator adds into .grad), post-hooks and anomaly checks; free it unless retained."""
    grads = _call_tensor_hooks(node, grads)
    if node._hookset is not None and node._hookset.pre:
        grads = _call_pre_hooks(node, grads)
    had_post_hooks = node._hookset is not None and bool(node._hookset.post)
    if all(g is None for g in grads):
        outs = [None] * len(node._next_nodes)
    else:
        token = running_node.set(node) if anomaly.enabled else None
        try:
            outs = node.apply(grads) if wanted is None else node.apply(grads, wanted)
        except Exception:
            if anomaly.enabled:  # torch shows where the failing node was created
                from .anomaly_mode import report

                report(node)
            raise
        finally:
            if token is not None:
                running_node.reset(token)
    if not retain_graph:
        node.release()
    if node._hookset is not None:  # post-hooks registered while the node ran see no inputs, as in torch
        outs = _call_post_hooks(node, outs, grads if had_post_hooks else [None] * len(grads))
    if anomaly.enabled:
        from .anomaly_mode import check_node_outputs

        check_node_outputs(node, outs)
    return outs


def _call_pre_hooks(node: Node, grads: list) -> list:
    """The node's pre-hooks, each given its grad_outputs; one may return new ones. (A function of its
    own, so nothing but the returned list refers to the gradients afterwards: AccumulateGrad may keep one.)"""
    for fn in list(node._hookset.pre.values()):
        new = fn(tuple(grads))
        if new is not None:
            grads = _hook_result(fn, new, len(grads))
    return grads


def _call_post_hooks(node: Node, outs: list, grads: list) -> list:
    """The node's post-hooks, each given (grad_inputs, grad_outputs); one may return new grad_inputs."""
    if node._hookset.post:
        for fn in list(node._hookset.post.values()):
            new = fn(tuple(outs), tuple(grads))
            if new is not None:
                outs = _hook_result(fn, new, len(outs))
    return outs


def _hook_result(fn: object, new: object, expected: int) -> list:
    """What a node hook returned, with torch's error when it has the wrong number of gradients."""
    new = list(new)
    if len(new) != expected:
        raise RuntimeError(f"hook '{getattr(fn, '__name__', fn)}' has returned an incorrect number of values (got "
                           f"{len(new)}, but expected {expected})")
    return new


def _on_fresh_thread(fn: Callable, *args: Any) -> Any:
    """fn(*args) on a new thread with this thread's grad mode; its result or its exception comes back."""
    modes = dict(vars(grad_mode._state))
    outcome: list = [None, None]

    def target() -> None:
        vars(grad_mode._state).update(modes)
        try:
            outcome[0] = fn(*args)
        except BaseException as error:  # noqa: BLE001 - handed back to the waiting caller
            outcome[1] = error

    worker = threading.Thread(target=target, name="retrograd-reentrant-backward")
    worker.start()
    worker.join()
    if outcome[1] is not None:
        raise outcome[1]
    return outcome[0]


# --------------------------------------------------------------------------------------------
# What the running backward pass exposes (torch's Variable._execution_engine and torch._C helpers)
# --------------------------------------------------------------------------------------------


def queue_callback(callback: Callable[[], Any]) -> None:
    """Run `callback` when the backward pass running in this thread ends (after every node)."""
    if not _engine.tasks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _engine.tasks[-1].callbacks.append(callback)


def current_graph_task_id() -> int:
    """An id of the backward pass running in this thread, -1 outside backward (checkpoint keys its
    recomputations by it)."""
    return _engine.tasks[-1].id if _engine.tasks else -1


def is_checkpoint_valid() -> bool:
    """Whether the running backward pass (if any) may use the reentrant checkpoint (see GraphTask)."""
    return _engine.tasks[-1].checkpoint_valid if _engine.tasks else True


def will_engine_execute_node(node: Node) -> bool:
    """Whether the running backward pass will reach `node` (run it, or hand over its gradient)."""
    if isinstance(node, tuple):  # a GradientEdge
        node = node[0]
    if not isinstance(node, Node):
        raise RuntimeError(f"_will_engine_execute_node expects an grad_fn, but got {type(node).__name__}")
    if not _engine.tasks:
        raise RuntimeError("_will_engine_execute_node should only be called during the backward pass")
    task = _engine.tasks[-1]
    if node in task.captured and all(child is None for child in node._next_nodes):
        raise RuntimeError("A leaf node was passed to _will_engine_execute_node but we are currently running "
                           "autograd.grad(). This is currently not supported.")
    return node in task.deps


# Note [the running pass, read from its frame]
# torch._C._current_autograd_node() and _current_graph_task_execution_order() look into the backward pass that
# is running in this thread. The loop of run_backward keeps everything they need in its locals (`node`, the one
# running; `deps`, `ready`, `following`, `leaves`, the schedule), so they read that frame, the innermost
# run_backward on this thread's stack (a reentrant pass's own), rather than have the loop publish its state on
# every node: the loop stays as it is, and only these rarely called functions pay.


def _running_frame() -> Any:
    """The locals of the innermost run_backward running on this thread, or None outside backward."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is run_backward.__code__:
            return frame.f_locals
        frame = frame.f_back
    return None


def current_autograd_node() -> Node | None:
    """The node the running backward pass is running (whose hooks or formulas call this), None outside backward."""
    running = _running_frame()
    return None if running is None else running.get("node")


def current_execution_order() -> list[Node]:
    """The nodes the running pass will run, the running one first, in the order it will run them (its schedule
    played forward without running anything: Note [execution order])."""
    running = _running_frame()
    if running is None:
        raise RuntimeError("_current_graph_task_execution_order should only be called during the backward pass")
    if _engine.multithreading:
        raise RuntimeError("get_current_graph_task_execution_order expects the current backward to be executed "
                           "with multithreading disabled, e.g. by running:\n\n>>> with "
                           "torch.autograd.set_multithreading_enabled(False):\n...     torch.autograd.grad(...)\n")
    deps, target_nodes = dict(running["deps"]), running["target_nodes"]
    ready, leaves, following = list(running["ready"]), list(running["leaves"]), running["following"]
    if following is not None:
        heappush(ready, (-following._seq, id(following), following))
    order: list[Node] = []
    node = running["node"]
    while node is not None:
        order.append(node)
        if not (node in target_nodes and not any(child in deps for child in node._next_nodes)):
            for child in node._next_nodes:
                count = deps.get(child)
                if count is not None:
                    if count == 1:
                        if type(child) is AccumulateGrad:
                            leaves.append(child)
                        else:
                            heappush(ready, (-child._seq, id(child), child))
                    deps[child] = count - 1
        node = leaves.pop() if leaves else heappop(ready)[2] if ready else None
    return order


class ImperativeEngine:
    """torch.autograd.Variable._execution_engine: the engine's entry points for Python code."""

    queue_callback = staticmethod(queue_callback)

    is_checkpoint_valid = staticmethod(is_checkpoint_valid)


def is_multithreading_enabled() -> bool:
    """torch's flag for running backward on per-device threads (this thread's setting)."""
    return _engine.multithreading


class set_multithreading_enabled:  # noqa: N801 - torch's name
    """Set torch's multithreaded-backward flag for this thread, now or for a with block. The engine
    runs every backward on the calling thread (there is one device), so only the flag changes."""

    def __init__(self, mode: bool) -> None:
        self.prev = _engine.multithreading
        self.mode = mode
        _engine.multithreading = bool(mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _engine.multithreading = self.prev

    def clone(self) -> set_multithreading_enabled:
        return type(self)(self.mode)
