"""Pruning a small LeNet, and finding a lottery ticket, in the idioms of PyTorch's official pruning tutorial
(`torch.nn.utils.prune`) and of the public Lottery-Ticket-Hypothesis code (rahulvigneswaran's
Lottery-Ticket-Hypothesis-in-Pytorch, OpenLTH-style rewinding through `prune.global_unstructured`), run unchanged
under torch and under `python -m retrograd.run`: 1x12x12 images of four stroke patterns with noise from NumPy's
seeded generator. The tutorial part: `named_parameters` / `named_buffers` before and after
`prune.random_unstructured`, `prune.l1_unstructured` on the bias by count, `prune.ln_structured(n=2, dim=0)` making a
`PruningContainer` whose history is listed, `list(module._forward_pre_hooks)` (the hook ids), the hooks' type names,
the mask dtype, the pruned module's repr, `state_dict().keys()` with `weight_orig` / `weight_mask`, `prune.remove`,
pruning every Conv2d and Linear of a fresh model by `named_modules()`, `prune.global_unstructured(pruning_method=
prune.L1Unstructured)` with the sparsities printed as `float(torch.sum(m.weight == 0)) / float(m.weight.nelement())`,
`prune.random_structured`, and a custom `BasePruningMethod` subclass (`PRUNING_TYPE`, `compute_mask`) applied by
`FooBarPruningMethod.apply`. What users run into: the gradient through the mask, the errors pruning raises (printed
by type and text), loading a pruned state_dict into an unpruned model and the `prune.identity` fix, `copy.deepcopy`
refused while the pruned weight is a non-leaf, `torch.save` / `torch.load` of the masks, `prune.custom_from_mask`
with a bool mask, `global_unstructured` with `prune.RandomUnstructured`. Then a float64 LeNet is trained (SGD with
momentum, a shuffling DataLoader) and pruned iteratively with fine-tuning between rounds, and made permanent with
`prune.remove` (`prune.is_pruned` before and after). The lottery ticket: an MLP with Adam, masks from
`np.percentile` of the surviving weights' magnitudes, gradients of pruned weights zeroed after `backward()` by
`p.grad.data = torch.from_numpy(np.where(...))`, the survivors rewound to their initial values from
`copy.deepcopy(model.state_dict())`, `print_nonzeros`; then the same search by `prune.global_unstructured`,
rewinding `weight_orig`, a tensor hook masking the gradient, and `p.grad.data.mul_(mask)`. Last, an LSTM reading the
rows, its `weight_hh_l0` pruned by magnitude and its `weight_ih_l0` by a `ThresholdPruning` method returning a bool
mask (also through `global_unstructured`), trained with Adam. Prints losses, accuracies and sparsities;
`WEIGHTS=path` shares the initial weights (tests/programs/_draws.py shares the random pruning and shuffling
draws)."""

import copy
import io

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune
from _weights import share_initial_weights
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
SIDE, CLASSES, BATCH = 12, 4, 32

rng = np.random.default_rng(0)


def make_images(count):
    """Noisy strokes: a horizontal bar, a vertical bar, a diagonal, a box, at random offsets."""
    labels = rng.integers(0, CLASSES, count)
    images = 0.3 * rng.normal(0.0, 1.0, (count, 1, SIDE, SIDE))
    for image, label in zip(images, labels):
        at = rng.integers(2, SIDE - 2)
        if label == 0:
            image[0, at, 1:-1] += 1.0
        elif label == 1:
            image[0, 1:-1, at] += 1.0
        elif label == 2:
            image[0, np.arange(SIDE), np.arange(SIDE)] += 1.0
        else:
            image[0, 3:9, 3] += 1.0
            image[0, 3:9, 8] += 1.0
            image[0, 3, 3:9] += 1.0
            image[0, 8, 3:9] += 1.0
    return torch.from_numpy(images.astype(np.float32)), torch.from_numpy(labels).long()


train_x, train_y = make_images(128)
test_x, test_y = make_images(64)


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        # 1 input image channel, 6 output channels, 3x3 square conv kernel
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 3 * 3, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.relu(self.conv2(x))
        x = x.view(-1, int(x.nelement() / x.shape[0]))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


class fc1(nn.Module):
    def __init__(self, num_classes=CLASSES):
        super().__init__()
        self.classifier = nn.Sequential(
            nn.Linear(SIDE * SIDE, 48),
            nn.ReLU(inplace=True),
            nn.Linear(48, 24),
            nn.ReLU(inplace=True),
            nn.Linear(24, num_classes),
        )

    def forward(self, x):
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


class RowLSTM(nn.Module):
    """Reads an image row by row."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(SIDE, 16, batch_first=True)
        self.head = nn.Linear(16, CLASSES)

    def forward(self, x):
        out, (h, c) = self.lstm(x.squeeze(1))
        return self.head(h[-1])


def sparsity(tensor):
    return 100.0 * float(torch.sum(tensor == 0)) / float(tensor.nelement())


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        correct = (model(x).argmax(dim=1) == y).sum().item()
    model.train()
    return 100.0 * correct / len(y)


# ---- the tutorial: inspecting what pruning does to a module ----
# every model is made here, so that WEIGHTS can share all their initial weights
model, new_model, global_model, trained, ticket, ticket_by_prune = LeNet(), LeNet(), LeNet(), LeNet(), fc1(), fc1()
reader = RowLSTM()
share_initial_weights({"tutorial": model, "fresh": new_model, "global": global_model, "trained": trained,
                       "ticket": ticket, "ticket_by_prune": ticket_by_prune, "reader": reader})
module = model.conv1
print([name for name, _ in module.named_parameters()])
print([name for name, _ in module.named_buffers()])

prune.random_unstructured(module, name="weight", amount=0.3)
print([name for name, _ in module.named_parameters()])
print([name for name, _ in module.named_buffers()])
print(module.weight)
print(list(module._forward_pre_hooks))
print([type(hook).__name__ for hook in module._forward_pre_hooks.values()])
print("mask dtype:", module.weight_mask.dtype, "weight is a Parameter:", isinstance(module.weight, nn.Parameter))

prune.l1_unstructured(module, name="bias", amount=3)
print(list(module.named_parameters()))
print(list(module.named_buffers()))
print(module.bias)
print(module.bias_mask)
print(list(module._forward_pre_hooks))

prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
print(module.weight[:, 0, 0])
for hook in module._forward_pre_hooks.values():
    if hook._tensor_name == "weight":  # select out the correct hook
        break
print(type(hook).__name__, [type(method).__name__ for method in hook], len(hook))
print([vars(method) for method in hook])
print(list(module._forward_pre_hooks))
print(module)
print(model.state_dict().keys())
print(f"conv1.weight sparsity: {sparsity(module.weight):.2f}%")

prune.remove(module, "weight")
print([name for name, _ in module.named_parameters()])
print([name for name, _ in module.named_buffers()])
print(list(module._forward_pre_hooks), prune.is_pruned(model))

for name, module in new_model.named_modules():
    # prune 20% of connections in all 2D-conv layers
    if isinstance(module, torch.nn.Conv2d):
        prune.l1_unstructured(module, name="weight", amount=0.2)
    # prune 40% of connections in all linear layers
    elif isinstance(module, torch.nn.Linear):
        prune.l1_unstructured(module, name="weight", amount=0.4)
print(dict(new_model.named_buffers()).keys())

# what users run into: a backward through the mask, errors, saving and loading a pruned model
out = new_model(train_x[:8])
loss = F.cross_entropy(out, train_y[:8])
loss.backward()
weight = new_model.fc3.weight
print(weight.is_leaf, weight.requires_grad, type(weight.grad_fn).__name__, new_model.fc3.weight_orig.grad_fn)
print(new_model.fc3.weight_orig.grad)
print("pruned grads all zero:", bool((new_model.fc3.weight_orig.grad[new_model.fc3.weight_mask == 0] == 0).all()))
state = new_model.state_dict()
plain = LeNet()
try:
    plain.load_state_dict(state)
except RuntimeError as e:
    print(type(e).__name__, str(e).splitlines()[0])
    print(str(e).splitlines()[1][:120])
for name, module in plain.named_modules():
    if isinstance(module, (nn.Conv2d, nn.Linear)):
        prune.identity(module, "weight")
print(plain.load_state_dict(state), prune.is_pruned(plain))
print(bool(torch.equal(plain(test_x[:4]), new_model(test_x[:4]))), plain.fc1.weight_mask.sum().item())
try:  # the pruned weight the last forward computed is not a leaf
    twin = copy.deepcopy(new_model)
except RuntimeError as e:
    print(type(e).__name__, str(e).split(".")[0])
with torch.no_grad():
    new_model(test_x[:1])
twin = copy.deepcopy(new_model)
print(prune.is_pruned(twin), list(twin.fc1._forward_pre_hooks) == list(new_model.fc1._forward_pre_hooks),
      twin.fc1.weight_orig is new_model.fc1.weight_orig, bool(torch.equal(twin(test_x[:4]), new_model(test_x[:4]))))
buffer = io.BytesIO()
torch.save(new_model.state_dict(), buffer)
buffer.seek(0)
loaded = torch.load(buffer, weights_only=True)
print(list(loaded)[:4], loaded["conv1.weight_mask"].dtype, loaded["conv1.weight_mask"].requires_grad)
print(torch.count_nonzero(new_model.fc2.weight), torch.count_nonzero(new_model.fc2.weight_mask).item(),
      (new_model.conv2.weight != 0).sum())
for attempt in (lambda: prune.remove(new_model.conv2, "bias"),
                lambda: prune.l1_unstructured(new_model.conv2, "bias", amount=100),
                lambda: prune.l1_unstructured(new_model.conv2, "bias", amount=1.5),
                lambda: prune.ln_structured(new_model.fc3, "bias", amount=1, n=2, dim=0),
                lambda: prune.random_structured(new_model.fc3, "weight", amount=0.5, dim=4),
                lambda: prune.l1_unstructured(new_model.fc3, "weight", amount="half")):
    try:
        attempt()
    except Exception as e:
        print(type(e).__name__, e)
# a failed prune of a pruned tensor has already taken its hook off (the container was never registered)
print(list(new_model.fc3._forward_pre_hooks), prune.is_pruned(new_model.fc3))
keep = (torch.arange(new_model.fc3.bias.numel()) % 3 != 0)
prune.custom_from_mask(new_model.fc3, name="bias", mask=keep)
print(new_model.fc3.bias_mask, new_model.fc3.bias_mask.dtype, new_model.fc3.bias)
prune.global_unstructured([(new_model.fc1, "weight"), (new_model.fc2, "weight")],
                          pruning_method=prune.RandomUnstructured, amount=0.25)
print(f"fc1 {sparsity(new_model.fc1.weight):.2f}% fc2 {sparsity(new_model.fc2.weight):.2f}%",
      [type(m).__name__ for m in new_model.fc2._forward_pre_hooks[list(new_model.fc2._forward_pre_hooks)[-1]]])

model = global_model
parameters_to_prune = (
    (model.conv1, "weight"),
    (model.conv2, "weight"),
    (model.fc1, "weight"),
    (model.fc2, "weight"),
    (model.fc3, "weight"),
)
prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)
for name in ("conv1", "conv2", "fc1", "fc2", "fc3"):
    print(f"Sparsity in {name}.weight: {sparsity(getattr(model, name).weight):.2f}%")
total_zeros = sum(float(torch.sum(m.weight == 0)) for m, _ in parameters_to_prune)
total = sum(float(m.weight.nelement()) for m, _ in parameters_to_prune)
print(f"Global sparsity: {100.0 * total_zeros / total:.2f}%")

prune.random_structured(model.fc2, name="weight", amount=4, dim=0)
print([type(hook).__name__ for hook in model.fc2._forward_pre_hooks.values()],
      f"fc2 rows pruned: {int((model.fc2.weight.abs().sum(dim=1) == 0).sum())}")


class FooBarPruningMethod(prune.BasePruningMethod):
    """Prune every other entry in a tensor"""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        mask = default_mask.clone()
        mask.view(-1)[::2] = 0
        return mask


def foobar_unstructured(module, name):
    FooBarPruningMethod.apply(module, name)
    return module


foobar_unstructured(model.fc3, name="bias")
print(model.fc3.bias_mask, type(model.fc3._forward_pre_hooks[list(model.fc3._forward_pre_hooks)[-1]]).__name__)
print(model.fc3.bias)

# ---- training, then iterative pruning with fine-tuning between rounds ----
# float64: momentum SGD at this rate, pruned three times, would amplify float32 rounding
model = trained.double()
loader = DataLoader(TensorDataset(train_x, train_y), batch_size=BATCH, shuffle=True)
loader64 = DataLoader(TensorDataset(train_x.double(), train_y), batch_size=BATCH, shuffle=True)
test_x64 = test_x.double()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
criterion = nn.CrossEntropyLoss()


def train_epochs(model, optimizer, epochs):
    for _ in range(epochs):
        for imgs, targets in loader64:
            optimizer.zero_grad()
            loss = criterion(model(imgs), targets)
            loss.backward()
            optimizer.step()
    return loss.item()


for epoch in range(3):
    loss = train_epochs(model, optimizer, 4)
    print(f"epoch {epoch}: loss {loss:.4f} test accuracy {accuracy(model, test_x64, test_y):.2f}%")

layers = [(m, "weight") for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
for round_ in range(3):
    prune.global_unstructured(layers, pruning_method=prune.L1Unstructured, amount=0.3)
    # the optimizer holds weight_orig now that the weights are pruned (the same Parameter objects)
    before = accuracy(model, test_x64, test_y)
    loss = train_epochs(model, optimizer, 2)
    zeros = sum(float(torch.sum(m.weight == 0)) for m, _ in layers)
    print(f"round {round_}: pruned accuracy {before:.2f}% -> fine-tuned {accuracy(model, test_x64, test_y):.2f}% "
          f"loss {loss:.6f} global sparsity {100.0 * zeros / sum(m.weight.nelement() for m, _ in layers):.2f}%")
print([len(hook) for m, _ in layers for hook in m._forward_pre_hooks.values()])
print("is pruned:", prune.is_pruned(model))
for m, name in layers:
    prune.remove(m, name)
print("is pruned:", prune.is_pruned(model), [name for name, _ in model.named_parameters()][:4])
print(f"after remove: accuracy {accuracy(model, test_x64, test_y):.2f}% "
      f"conv2 sparsity {sparsity(model.conv2.weight):.2f}%")

# ---- the lottery ticket: iterative magnitude pruning with rewinding to the initial weights ----

def make_mask(model):
    global step, mask
    step = 0
    for name, param in model.named_parameters():
        if "weight" in name:
            step = step + 1
    mask = [None] * step
    step = 0
    for name, param in model.named_parameters():
        if "weight" in name:
            tensor = param.data.cpu().numpy()
            mask[step] = np.ones_like(tensor)
            step = step + 1
    step = 0


def prune_by_percentile(percent):
    global step, mask, model
    step = 0
    for name, param in model.named_parameters():
        # We do not prune bias term
        if "weight" in name:
            tensor = param.data.cpu().numpy()
            alive = tensor[np.nonzero(tensor)]  # flattened array of nonzero values
            percentile_value = np.percentile(abs(alive), percent)
            weight_dev = param.device
            new_mask = np.where(abs(tensor) < percentile_value, 0, mask[step])
            # Apply new weight and mask
            param.data = torch.from_numpy(tensor * new_mask).to(weight_dev)
            mask[step] = new_mask
            step += 1
    step = 0


def original_initialization(mask_temp, initial_state_dict):
    global model
    step = 0
    for name, param in model.named_parameters():
        if "weight" in name:
            weight_dev = param.device
            param.data = torch.from_numpy(mask_temp[step] * initial_state_dict[name].cpu().numpy()).to(weight_dev)
            step = step + 1
        if "bias" in name:
            param.data = initial_state_dict[name]
    step = 0


def train(model, train_loader, optimizer, criterion):
    EPS = 1e-6
    model.train()
    for batch_idx, (imgs, targets) in enumerate(train_loader):
        optimizer.zero_grad()
        output = model(imgs)
        train_loss = criterion(output, targets)
        train_loss.backward()
        # Freezing Pruned weights by making their gradients Zero
        for name, p in model.named_parameters():
            if "weight" in name:
                tensor = p.data.cpu().numpy()
                grad_tensor = p.grad.data.cpu().numpy()
                grad_tensor = np.where(abs(tensor) < EPS, 0, grad_tensor)
                p.grad.data = torch.from_numpy(grad_tensor).to(p.device)
        optimizer.step()
    return train_loss.item()


def print_nonzeros(model):
    nonzero = total = 0
    for name, p in model.named_parameters():
        tensor = p.data.cpu().numpy()
        nz_count = np.count_nonzero(tensor)
        total_params = np.prod(tensor.shape)
        nonzero += nz_count
        total += total_params
        print(f"{name:20} | nonzeros = {nz_count:7} / {total_params:7} ({100 * nz_count / total_params:6.2f}%) | "
              f"total_pruned = {total_params - nz_count :7} | shape = {tensor.shape}")
    print(f"alive: {nonzero}, pruned : {total - nonzero}, total: {total}, Compression rate : {total/nonzero:10.2f}x  "
          f"({100 * (total-nonzero) / total:6.2f}% pruned)")
    return round((nonzero / total) * 100, 1)


model = ticket
initial_state_dict = copy.deepcopy(model.state_dict())
make_mask(model)
optimizer = torch.optim.Adam(model.parameters(), lr=1.2e-3, weight_decay=1e-4)
criterion = nn.CrossEntropyLoss()
for _ite in range(3):
    if _ite != 0:
        prune_by_percentile(30)
        original_initialization(mask, initial_state_dict)
        optimizer = torch.optim.Adam(model.parameters(), lr=1.2e-3, weight_decay=1e-4)
    print(f"\n--- Pruning Level [{_ite}/3]: ---")
    comp1 = print_nonzeros(model)
    for iter_ in range(4):
        loss = train(model, loader, optimizer, criterion)
    print(f"Train Epoch: {iter_}/4 Loss: {loss:.6f} Accuracy: {accuracy(model, test_x, test_y):.2f}% alive {comp1}")
print([m.dtype for m in mask], [float(m.mean()) for m in mask])

# the same search with torch.nn.utils.prune: masks in buffers, rewinding weight_orig
model = ticket_by_prune
initial_state_dict = copy.deepcopy(model.state_dict())
linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
for _ite in range(3):
    if _ite != 0:
        prune.global_unstructured([(m, "weight") for m in linears], pruning_method=prune.L1Unstructured, amount=0.3)
        with torch.no_grad():  # rewind the survivors to their initial values
            for i, m in enumerate(model.classifier):
                if isinstance(m, nn.Linear):
                    m.weight_orig.copy_(initial_state_dict[f"classifier.{i}.weight"])
                    m.bias.copy_(initial_state_dict[f"classifier.{i}.bias"])
    params = [p for name, p in model.named_parameters()]
    optimizer = torch.optim.Adam(params, lr=1.2e-3)
    handles = []
    if _ite == 2:  # mask the gradient with a hook on the tensor itself
        for m in linears:
            handles.append(m.weight_orig.register_hook(lambda grad, mask=m.weight_mask: grad * mask))
    for _ in range(3):
        for imgs, targets in loader:
            optimizer.zero_grad()
            loss = criterion(model(imgs), targets)
            loss.backward()
            if _ite == 1:
                for m in linears:
                    m.weight_orig.grad.data.mul_(m.weight_mask)
            optimizer.step()
    for handle in handles:
        handle.remove()
    remaining = sum(int(m.weight_mask.sum()) for m in linears) if _ite else sum(m.weight.numel() for m in linears)
    print(f"level {_ite}: loss {loss.item():.4f} accuracy {accuracy(model, test_x, test_y):.2f}% "
          f"remaining weights {remaining} orig grads at pruned entries zero: "
          f"{all(bool((m.weight_orig.grad[m.weight_mask == 0] == 0).all()) for m in linears) if _ite else None}")
print(sorted(k for k in model.state_dict().keys() if k.startswith("classifier.0")))
print(model.classifier[0])


# ---- pruning a recurrent model: the LSTM's weights by magnitude and by a threshold method of one's own ----


class ThresholdPruning(prune.BasePruningMethod):
    PRUNING_TYPE = "unstructured"

    def __init__(self, threshold):
        self.threshold = threshold

    def compute_mask(self, tensor, default_mask):
        return torch.abs(tensor) > self.threshold


prune.l1_unstructured(reader.lstm, "weight_hh_l0", amount=0.5)
ThresholdPruning.apply(reader.lstm, "weight_ih_l0", threshold=0.1)
prune.global_unstructured([(reader.head, "weight"), (reader.head, "bias")], pruning_method=ThresholdPruning,
                          threshold=0.15)
print([name for name, _ in reader.named_parameters()], reader.lstm.weight_ih_l0_mask.dtype,
      reader.head.weight_mask.dtype)
print(reader.lstm)
optimizer = torch.optim.Adam(reader.parameters(), lr=0.02)
for epoch in range(3):
    for imgs, targets in loader:
        optimizer.zero_grad()
        loss = criterion(reader(imgs), targets)
        loss.backward()
        optimizer.step()
    print(f"lstm epoch {epoch}: loss {loss.item():.4f} accuracy {accuracy(reader, test_x, test_y):.2f}% "
          f"weight_hh sparsity {sparsity(reader.lstm.weight_hh_l0):.2f}% "
          f"weight_ih sparsity {sparsity(reader.lstm.weight_ih_l0):.2f}%")
print(float(reader.lstm.weight_hh_l0_orig.grad.abs().sum()), reader.head.bias)
