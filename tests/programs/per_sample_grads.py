"""Per-sample gradients, model ensembling and neural tangent kernels, in the idioms of PyTorch's torch.func
tutorials, run unchanged under torch and under `python -m retrograd.run`: a small CNN (conv2d, relu, max_pool2d,
linear, log_softmax, nll_loss) whose per-sample gradients are computed by a Python loop of `autograd.grad` and by
`vmap(grad(compute_loss), in_dims=(None, None, 0, 0))` over `functional_call`; an ensemble of such models through
`stack_module_state` and `vmap(fmodel, in_dims=(0, 0, None))` (the tutorial's `copy.deepcopy(...).to('meta')` base
model is a plain deepcopy here: retrograd has no meta device); and the empirical NTK of a CNN, by Jacobian
contraction (`vmap(jacrev(fnet_single), (None, 0))`) and by NTK-vector products (`vjp`, `jvp` and nested `vmap`).
Every vmap'd op has a batching rule in both libraries: run with `-W error::UserWarning`, no performance warning.
`WEIGHTS=path` shares the initial weights between the two runs."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights
from torch.func import functional_call, grad, jacrev, jvp, stack_module_state, vjp, vmap

torch.manual_seed(0)
device = "cpu"


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.fc1 = nn.Linear(8 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, (3, 3))
        self.conv2 = nn.Conv2d(4, 4, (3, 3))
        self.conv3 = nn.Conv2d(4, 4, (3, 3))
        self.fc = nn.Linear(4 * 2 * 2, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = x.relu()
        x = self.conv2(x)
        x = x.relu()
        x = self.conv3(x)
        x = x.flatten(1)
        x = self.fc(x)
        return x


def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


batch_size = 8
data = torch.randn(batch_size, 1, 12, 12, device=device)
targets = torch.randint(10, (batch_size,), device=device)
model = SimpleCNN().to(device=device)
num_models = 3
models = [SimpleCNN().to(device) for _ in range(num_models)]
net = CNN().to(device)
x_train = torch.randn(6, 3, 8, 8, device=device)
x_test = torch.randn(3, 3, 8, 8, device=device)

share_initial_weights({"model": model, "net": net, **{f"models{i}": m for i, m in enumerate(models)}})


# ---- per-sample gradients ----------------------------------------------------------------------

def compute_grad(sample, target):
    sample = sample.unsqueeze(0)  # prepend batch dimension for processing
    target = target.unsqueeze(0)
    prediction = model(sample)
    loss = loss_fn(prediction, target)
    return torch.autograd.grad(loss, list(model.parameters()))


def compute_sample_grads(data, targets):
    """manually process each sample with per sample gradient"""
    sample_grads = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
    sample_grads = zip(*sample_grads)
    sample_grads = [torch.stack(shards) for shards in sample_grads]
    return sample_grads


per_sample_grads = compute_sample_grads(data, targets)
print(per_sample_grads[0].shape)

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}


def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    targets = target.unsqueeze(0)
    predictions = functional_call(model, (params, buffers), (batch,))
    loss = loss_fn(predictions, targets)
    return loss


ft_compute_grad = grad(compute_loss)
ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)
for name, per_sample_grad, ft_per_sample_grad in zip(params, per_sample_grads, ft_per_sample_grads.values()):
    assert torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)
    print(f"{name:12s} {tuple(ft_per_sample_grad.shape)} |g| {ft_per_sample_grad.abs().sum().item():.6f}"
          f" |g[0]|^2 {ft_per_sample_grad[0].pow(2).sum().item():.6f}")

# ---- model ensembling -------------------------------------------------------------------------

minibatches = data.view(2, 4, 1, 12, 12).repeat(2, 1, 1, 1, 1)[:num_models]
predictions_diff_minibatch_loop = [model(minibatch) for model, minibatch in zip(models, minibatches)]
minibatch = data
predictions2 = [model(minibatch) for model in models]

params, buffers = stack_module_state(models)
base_model = copy.deepcopy(models[0])


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)
assert torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop), atol=1e-3, rtol=1e-5)
predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
assert torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5)
print("different minibatches", tuple(predictions1_vmap.shape), f"{predictions1_vmap.sum().item():.5f}")
print("same minibatch", tuple(predictions2_vmap.shape), f"{predictions2_vmap.sum().item():.5f}",
      "argmax", predictions2_vmap.argmax(-1)[:, :4].tolist())

# ---- neural tangent kernels -------------------------------------------------------------------

params = {k: v.detach() for k, v in net.named_parameters()}


def fnet_single(params, x):
    return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)


def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2):
    # Compute J(x1)
    jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
    jac1 = jac1.values()
    jac1 = [j.flatten(2) for j in jac1]

    # Compute J(x2)
    jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
    jac2 = jac2.values()
    jac2 = [j.flatten(2) for j in jac2]

    # Compute J(x1) @ J(x2).T
    result = torch.stack([torch.einsum('Naf,Mbf->NMab', j1, j2) for j1, j2 in zip(jac1, jac2)])
    result = result.sum(0)
    return result


result = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test)
print("ntk", tuple(result.shape), f"{result.sum().item():.4f}", f"{result[0, 0].trace().item():.4f}")


def empirical_ntk_ntk_vps(func, params, x1, x2, compute='full'):
    def get_ntk(x1, x2):
        def func_x1(params):
            return func(params, x1)

        def func_x2(params):
            return func(params, x2)

        output, vjp_fn = vjp(func_x1, params)

        def get_ntk_slice(vec):
            # This computes ``vec @ J(x2).T``
            # `vec` is some unit vector (a single slice of the Identity matrix)
            vjps = vjp_fn(vec)
            # This computes ``J(X1) @ vjps``
            _, jvps = jvp(func_x2, (params,), vjps)
            return jvps

        # Here's our identity matrix
        basis = torch.eye(output.numel(), dtype=output.dtype, device=output.device).view(output.numel(), -1)
        return vmap(get_ntk_slice)(basis)

    # ``get_ntk(x1, x2)`` computes the NTK for a single data point x1, x2
    # Since the x1, x2 inputs to ``empirical_ntk_ntk_vps`` are batched,
    # we actually wish to compute the NTK between every pair of data points
    # between {x1} and {x2}. That's what the ``vmaps`` here do.
    result = vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)

    if compute == 'full':
        return result
    if compute == 'trace':
        return torch.einsum('NMKK->NM', result)
    if compute == 'diagonal':
        return torch.einsum('NMKK->NMK', result)


result_from_ntk_vps = empirical_ntk_ntk_vps(fnet_single, params, x_train, x_test)
result_from_jacobian_contraction = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test)
assert torch.allclose(result_from_jacobian_contraction, result_from_ntk_vps, atol=1e-5)
trace = empirical_ntk_ntk_vps(fnet_single, params, x_train, x_test, 'trace')
print("ntk-vector products", tuple(result_from_ntk_vps.shape), f"{result_from_ntk_vps.sum().item():.4f}",
      "trace", tuple(trace.shape), f"{trace.sum().item():.4f}")
