"""The backward pass: one iterative walk over the graph, shared by backward() and autograd.grad().

1. Find the nodes that lead to a target (every leaf for backward(), the given inputs otherwise)
   with an explicit stack, no recursion, so a 1,000,000-node chain is fine.
2. Count, for each such node, how many of its consumers will send it a gradient.
3. Start from the roots; a node runs once every consumer has sent its gradient (its count hits
   zero). Pending gradients wait in a dict and are dropped as soon as they are used.
4. After a node runs, what it saved is released unless retain_graph.
Rules run with grad mode on only when create_graph, so higher derivatives come for free.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import grad_mode
from .graph import AccumulateGrad, Node, accumulate_into, anomaly, edge_of


def run_backward(outputs: Sequence, grad_outputs: Sequence, retain_graph: bool, create_graph: bool,
                 inputs: Sequence | None = None, capture: bool = False) -> list | None:
    """Backpropagate `grad_outputs` from `outputs`.

    capture=False (backward): accumulate into `.grad` of every leaf, or only of `inputs`.
    capture=True (autograd.grad): return the gradient of each of `inputs`, touch no `.grad`.
    """
    roots = []
    for i, (out, grad) in enumerate(zip(outputs, grad_outputs)):
        if not out._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append((edge_of(out), grad))

    # targets: edge -> slot in the result list (capture) or the tensor whose .grad receives it
    targets: dict[tuple, list] = {}
    if inputs is not None:
        for k, t in enumerate(inputs):
            edge = edge_of(t)
            targets.setdefault((id(edge[0]), edge[1]), []).append(k)
    target_nodes = {key[0] for key in targets}

    # Steps 1-2: reachable nodes in post-order, which ones lead to a target, dependency counts.
    root_nodes = list({id(e[0]): e[0] for e, _ in roots}.values())
    order: list[Node] = []
    seen: set[int] = set()
    stack = [(n, False) for n in root_nodes]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for child, _ in node.next_functions:
            if child is not None and id(child) not in seen:
                stack.append((child, False))
    needed: set[int] = set()
    for node in order:  # children come before parents in post-order
        if inputs is None:
            if type(node) is AccumulateGrad or any(c is not None and id(c) in needed for c, _ in node.next_functions):
                needed.add(id(node))
        elif id(node) in target_nodes or any(c is not None and id(c) in needed for c, _ in node.next_functions):
            needed.add(id(node))
    deps: dict[int, int] = {}
    for node in order:
        if id(node) in needed:
            for child, _ in node.next_functions:
                if child is not None and id(child) in needed:
                    deps[id(child)] = deps.get(id(child), 0) + 1

    # Step 3: run nodes as their counts reach zero.
    buffers: dict[int, list] = {}
    for (node, nr), grad in roots:
        buf = buffers.setdefault(id(node), [None] * _n_outputs(node))
        buf[nr] = grad if buf[nr] is None else buf[nr] + grad
    ready = [n for n in root_nodes if deps.get(id(n), 0) == 0 and id(n) in needed]
    captured: list = [None] * (len(inputs) if inputs is not None else 0)
    state = grad_mode._state
    prev = state.enabled
    state.enabled = create_graph
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(id(node))
            grads = _call_tensor_hooks(node, grads)
            if id(node) in target_nodes:
                for nr, g in enumerate(grads):
                    for k in targets.get((id(node), nr), ()):
                        if capture:
                            captured[k] = g
                        elif type(node) is not AccumulateGrad:
                            accumulate_into(inputs[k], g)  # backward(inputs=[non_leaf]) fills its .grad
            if type(node) is AccumulateGrad:
                if not capture:
                    node.apply(grads)
                continue
            if inputs is not None and not any(c is not None and id(c) in needed for c, _ in node.next_functions):
                continue
            outs = _run_node(node, grads, retain_graph)
            for (child, nr), g in zip(node.next_functions, outs):
                if child is None or id(child) not in needed:
                    continue
                if g is not None:
                    buf = buffers.get(id(child))
                    if buf is None:
                        buf = buffers[id(child)] = [None] * _n_outputs(child)
                    buf[nr] = g if buf[nr] is None else buf[nr] + g
                elif id(child) not in buffers:
                    buffers[id(child)] = [None] * _n_outputs(child)
                deps[id(child)] -= 1
                if deps[id(child)] == 0:
                    ready.append(child)
            outs = g = grads = None  # drop references so AccumulateGrad may keep a gradient without copying
    finally:
        state.enabled = prev
    return captured if capture else None


def _n_outputs(node: Node) -> int:
    meta = getattr(node, "_out_meta", None)
    return len(meta) if meta else getattr(node, "_n_outputs", 1)


def _call_tensor_hooks(node: Node, grads: list) -> list:
    """Hooks registered on the tensors this node produced, then retain_grad, then node pre-hooks."""
    hooks = node._tensor_hooks
    if hooks:
        for nr, fns in hooks.items():
            for fn in list(fns.values()):
                if grads[nr] is not None:
                    new = fn(grads[nr])
                    if new is not None:
                        grads[nr] = new
    if node._retained:
        for nr, ref in node._retained.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                t._grad = grads[nr].detach().clone() if t._grad is None else t._grad + grads[nr].detach()
    if node._pre_hooks:
        for fn in list(node._pre_hooks.values()):
            new = fn(tuple(grads))
            if new is not None:
                grads = list(new)
    return grads


def _run_node(node: Node, grads: list, retain_graph: bool) -> list:
    """Apply one node: its VJPs, then post-hooks and anomaly checks; free it unless retained."""
    if all(g is None for g in grads):
        outs = [None] * len(node.next_functions)
    else:
        outs = node.apply(grads)
    if not retain_graph:
        node.release()
    if node._hooks:
        for fn in list(node._hooks.values()):
            new = fn(tuple(outs), tuple(grads))
            if new is not None:
                outs = list(new)
    if anomaly.enabled:
        from .anomaly_mode import check_node_outputs

        check_node_outputs(node, outs)
    return outs
