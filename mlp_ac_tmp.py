import torch, retrograd, numpy as np
def step(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.ReLU(), lib.nn.Linear(16, 4))
    x = lib.randn(5, 8)
    with lib.autocast("cpu"):
        logits = model(x)
        loss = lib.nn.functional.cross_entropy(logits, lib.tensor([0, 1, 2, 3, 0]))
        b = lib.bmm(lib.randn(2, 3, 4), lib.randn(2, 4, 5).bfloat16())
        c = lib.nn.functional.conv1d(lib.randn(1, 2, 5), lib.randn(3, 2, 2))
        d = lib.randn(3, 3).double() @ lib.randn(3, 3).double()
    loss.backward()
    return [str(t.dtype) for t in (logits, loss, b, c, d, model[0].weight.grad)], loss.item(), model[0].weight.grad
(a, la, ga), (b_, lb, gb) = step(retrograd), step(torch)
print(a); print(b_); print(la, lb); print(np.abs(ga.numpy() - gb.numpy()).max(), np.abs(gb.numpy()).max())
