"""The backward pass: one iterative walk over the graph, shared by backward() and autograd.grad().

1. Count, for every node reachable from the roots, how many edges point at it (its
   dependencies), with an explicit stack: no recursion, so a 1,000,000-node chain is fine.
2. When only some inputs are wanted (autograd.grad, backward(inputs=...)), count only the nodes
   that lead to one of them.
3. Start from the roots; a node runs once every consumer has sent its gradient (its count hits
   zero). Pending gradients wait in a dict and are dropped as soon as they are used.
4. After a node runs, what it saved is released unless retain_graph.
Rules run with grad mode on only when create_graph, so higher derivatives come for free.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence

from . import grad_mode
from .forward_ad import transforms
from .graph import AccumulateGrad, HookSet, Node, accumulate_into, anomaly, edge_of


class _RunningTask(threading.local):
    """The backward pass (graph task) this thread is running; a backward started inside a node or
    hook (reentrant backward) is a new task, nested in the running one."""

    id = -1                   # -1: not inside a backward pass
    checkpoint_valid = True   # False inside a pass with explicit inputs, or nested in one


_running = _RunningTask()
_task_ids = itertools.count()


def current_graph_task_id() -> int:
    """The id of the backward pass running in this thread, -1 outside backward (checkpoint keys
    its recomputations by it)."""
    return _running.id


def is_checkpoint_valid() -> bool:
    """False inside a backward pass given explicit inputs (autograd.grad, backward(inputs=...)), or
    nested in one: the reentrant checkpoint cannot compute the gradients of just those inputs."""
    return _running.checkpoint_valid


def run_backward(outputs: Sequence, grad_outputs: Sequence, retain_graph: bool, create_graph: bool,
                 inputs: Sequence | None = None, capture: bool = False) -> list | None:
    """Backpropagate `grad_outputs` from `outputs`.

    capture=False (backward): accumulate into `.grad` of every leaf, or only of `inputs`.
    capture=True (autograd.grad): return the gradient of each of `inputs`, touch no `.grad`.
    """
    roots = []
    for i, out in enumerate(outputs):
        if not out._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append(edge_of(out))

    # Steps 1 and 2: dependency counts over everything reachable, or with explicit inputs over the
    # nodes that lead to one of them.
    targets: dict[tuple, list[int]] = {}
    if inputs is None:
        deps = _dependencies(roots)
    else:
        for k, t in enumerate(inputs):
            node, nr = edge_of(t)
            targets.setdefault((node, nr), []).append(k)
        deps = _dependencies_towards(roots, {node for node, _ in targets})
    target_nodes = {node for node, _ in targets}

    # Step 3: run nodes as their counts reach zero.
    buffers: dict[Node, list] = {}
    for (node, nr), grad in zip(roots, grad_outputs):
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * (len(node._out_meta) if node._out_meta else 1)
        buf[nr] = grad if buf[nr] is None else buf[nr] + grad
    ready = [node for node in buffers if deps.get(node) == 0]
    captured: list = [None] * (len(inputs) if inputs is not None else 0)
    state = grad_mode._state
    tracer = state.tracer
    prev = (state.grad, state.inference)
    grad_mode._set_modes(create_graph, state.inference)
    saved_hooks = transforms.saved_hooks  # what a hook enters or exits during backward is undone after, as in torch
    outer_task = (_running.id, _running.checkpoint_valid)
    _running.id, _running.checkpoint_valid = next(_task_ids), outer_task[1] and inputs is None
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node)
            hooks = node._hookset
            if type(node) is AccumulateGrad:
                if hooks is None and node.has_leaf_hooks():
                    hooks = node.hooks()
                if hooks is not None:
                    grads = _call_pre_hooks(hooks, grads)
                if target_nodes and node in target_nodes:
                    _deliver(node, grads, targets, inputs, captured, capture)
                if not capture:
                    accumulate_into(node.variable, grads[0])
                    if tracer is not None:
                        tracer.node_ran(node, grads, None)
                grads = None  # only the engine's references are left: accumulate_into may have kept the gradient
                continue
            if hooks is not None:
                grads = _call_pre_hooks(hooks, grads)
            if target_nodes and node in target_nodes:
                _deliver(node, grads, targets, inputs, captured, capture)
            if hooks is None and grads[0] is not None and not anomaly.enabled:  # the common node, inline
                outs = node.apply(grads)
                if not retain_graph:
                    node.release()
                if node._hookset is not None:  # registered while it ran
                    outs = _call_post_hooks(node, outs, grads)
            else:
                outs = _run_node(node, grads, retain_graph)
            if tracer is not None:
                tracer.node_ran(node, grads, outs)
            for child, nr, g in zip(node._next_nodes, node._next_nrs, outs):
                if child is None:
                    continue
                count = deps.get(child)
                if count is None:  # not on a path to a wanted input
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
                    buf[nr] = g if buf[nr] is None else buf[nr] + g
                if count == 1:
                    ready.append(child)
                deps[child] = count - 1
            outs = g = grads = buf = None  # drop references so AccumulateGrad may keep a gradient without copying
    finally:
        grad_mode._set_modes(*prev)
        _running.id, _running.checkpoint_valid = outer_task
        if transforms.saved_hooks is not saved_hooks:
            transforms.saved_hooks = saved_hooks
            transforms.update()
    return captured if capture else None


def _dependencies(roots: list) -> dict:
    """For every node reachable from the roots, how many edges point at it (explicit stack, no recursion)."""
    deps: dict[Node, int] = {}
    stack = []
    for node, _ in roots:
        if node not in deps:
            deps[node] = 0
            stack.append(node)
    while stack:
        for child in stack.pop()._next_nodes:
            if child is not None:
                count = deps.get(child)
                if count is None:
                    deps[child] = 1
                    stack.append(child)
                else:
                    deps[child] = count + 1
    return deps


def _dependencies_towards(roots: list, wanted: set) -> dict:
    """Dependency counts among the nodes that lead to a wanted node. Every consumer of such a node
    leads there too, so its count is its full count of consumers: one walk down records each node's
    consumers, one walk back up from the wanted nodes marks the ones needed."""
    consumers: dict[Node, list] = {node: [] for node, _ in roots}
    stack = list(consumers)
    while stack:
        node = stack.pop()
        for child in node._next_nodes:
            if child is not None:
                seen = consumers.get(child)
                if seen is None:
                    consumers[child] = [node]
                    stack.append(child)
                else:
                    seen.append(node)
    deps: dict[Node, int] = {}
    stack = [node for node in wanted if node in consumers]
    while stack:
        node = stack.pop()
        if node not in deps:
            above = consumers[node]
            deps[node] = len(above)
            stack.extend(above)
    return deps


def _deliver(node: Node, grads: list, targets: dict, inputs: Sequence, captured: list, capture: bool) -> None:
    """Hand the gradient arriving for a wanted input to the caller (autograd.grad) or to its .grad
    (backward(inputs=[non_leaf]); a leaf's AccumulateGrad does that itself)."""
    for nr, g in enumerate(grads):
        for k in targets.get((node, nr), ()):
            if capture:
                captured[k] = g
            elif type(node) is not AccumulateGrad:
                accumulate_into(inputs[k], g)


def _call_pre_hooks(hs: HookSet, grads: list) -> list:
    """Hooks registered on the tensors this node produced, then retain_grad, then node pre-hooks."""
    for nr, fns in hs.tensor.items():
        for fn in list(fns.values()):  # an undefined gradient reaches them as None, as in torch
            new = fn(grads[nr])
            if new is not None:
                grads[nr] = new
    for nr, ref in hs.retained.items():
        t = ref()
        if t is not None and grads[nr] is not None:
            t._grad = grads[nr].detach().clone() if t._grad is None else t._grad + grads[nr].detach()
    if hs.pre:
        for fn in list(hs.pre.values()):
            new = fn(tuple(grads))
            if new is not None:
                grads = _hook_result(fn, new, len(grads))
    return grads


def _run_node(node: Node, grads: list, retain_graph: bool) -> list:
    """Apply one node: its VJPs, then post-hooks and anomaly checks; free it unless retained."""
    for g in grads:
        if g is not None:
            try:
                outs = node.apply(grads)
            except Exception:
                if anomaly.enabled:  # torch shows where the failing node was created
                    from .anomaly_mode import report

                    report(node)
                raise
            break
    else:
        outs = [None] * len(node._next_nodes)
    if not retain_graph:
        node.release()
    if node._hookset is not None:
        outs = _call_post_hooks(node, outs, grads)
    if anomaly.enabled:
        from .anomaly_mode import check_node_outputs

        check_node_outputs(node, outs)
    return outs


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
