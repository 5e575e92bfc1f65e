"""Seed 001's one-layer net, trained: its loss falls as w and b follow their gradients."""

import retrograd as torch

torch.manual_seed(0)
x = torch.ones(5)  # input tensor
y = torch.zeros(3)  # expected output
w = torch.randn(5, 3, requires_grad=True)
b = torch.randn(3, requires_grad=True)

for step in range(20):
    z = torch.matmul(x, w) + b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    loss.backward()
    with torch.no_grad():
        w -= 0.5 * w.grad
        b -= 0.5 * b.grad
    w.grad.zero_()
    b.grad.zero_()
    if step % 4 == 0 or step == 19:
        print(f"step {step:2d}  loss {loss.item():.4f}  grad_fn={loss.grad_fn.name()}")
