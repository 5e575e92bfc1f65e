import retrograd as torch
from retrograd.utils.checkpoint import checkpoint
def foo(x, y, z):
    x = torch.mm(x, y); y = torch.mm(x, z); z = torch.mm(z, z)
    print("in foo", z.dtype)
    return z
x, y, z = (torch.randn(3, 3, requires_grad=True) for _ in range(3))
with torch.autocast(enabled=True, device_type="cpu", dtype=torch.bfloat16):
    loss = checkpoint(foo, x, y, z, use_reentrant=False).sum()
loss.backward()
print(x.grad)
