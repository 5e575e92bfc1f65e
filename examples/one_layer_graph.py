"""Seed 001's computation graph as a picture: `python examples/one_layer_graph.py [out.png]`.

Draws the backward graph of the one-layer net's loss with retrograd.viz (grey: backward nodes
named as grad_fn names; blue: the parameters w and b; green: the loss). Prints the DOT text when
the Graphviz program is not installed.
"""

import sys

import retrograd as torch
from retrograd import viz

torch.manual_seed(0)
x = torch.ones(5)  # input tensor
y = torch.zeros(3)  # expected output
w = torch.randn(5, 3, requires_grad=True)
b = torch.randn(3, requires_grad=True)
z = torch.matmul(x, w) + b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)

dot = viz.draw_graph(loss, params={"w": w, "b": b})
if viz.can_render():
    print(viz.render_graph(dot, sys.argv[1] if len(sys.argv) > 1 else "one_layer_graph.png"))
else:
    print(dot.source)
