"""A graph neural network in the idioms of public message-passing code written without a graph library: an edge
list as a (2, E) LongTensor with self-loops added by `torch.cat`, degrees by `bincount`, symmetric normalisation,
messages gathered by `index_select` and summed into nodes by `index_add_` (GCN) or `scatter_reduce` with "amax"
(a max-aggregating layer), a graph-level readout by `index_add_` over a batch vector, and node-classification
masks; Adam with a StepLR schedule. `WEIGHTS=path` shares the initial weights between the two runs
(tests/programs/_draws.py shares the draws)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights

torch.manual_seed(0)
N, FEATS, CLASSES = 60, 8, 3
labels = torch.randint(0, CLASSES, (N,))
features = F.one_hot(labels, CLASSES).float() @ torch.randn(CLASSES, FEATS) + 0.8 * torch.randn(N, FEATS)
same = labels[:, None] == labels[None, :]
chance = torch.where(same, torch.full((N, N), 0.15), torch.full((N, N), 0.02))
adjacency = torch.triu(torch.rand(N, N) < chance, diagonal=1)
edges = adjacency.nonzero().t()
edges = torch.cat([edges, edges.flip(0)], dim=1)  # undirected
loops = torch.arange(N).repeat(2, 1)
edges = torch.cat([edges, loops], dim=1)
src, dst = edges
degree = torch.bincount(dst, minlength=N).float()
norm = degree[src].rsqrt() * degree[dst].rsqrt()
train_mask = torch.rand(N) < 0.5


class GCNLayer(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.linear = nn.Linear(cin, cout)

    def forward(self, x):
        h = self.linear(x)
        messages = h.index_select(0, src) * norm[:, None]
        return torch.zeros_like(h).index_add_(0, dst, messages)


class MaxLayer(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.linear = nn.Linear(2 * cin, cout)

    def forward(self, x):
        pooled = torch.full_like(x, -1e9).scatter_reduce(0, dst[:, None].expand(-1, x.shape[1]), x[src], reduce="amax",
                                                        include_self=True)
        return self.linear(torch.cat([x, pooled], dim=1))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.gcn1, self.gcn2 = GCNLayer(FEATS, 16), GCNLayer(16, 16)
        self.maxl = MaxLayer(16, CLASSES)

    def forward(self, x):
        h = F.relu(self.gcn1(x))
        h = F.dropout(h, 0.2, self.training)
        h = F.relu(self.gcn2(h))
        return self.maxl(h)


model = Net()
share_initial_weights({"model": model})
optimizer = torch.optim.Adam(model.parameters(), lr=0.02, weight_decay=5e-4)
schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.5)
for epoch in range(60):
    model.train()
    logits = model(features)
    loss = F.cross_entropy(logits[train_mask], labels[train_mask])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    schedule.step()
    if epoch % 10 == 0:
        model.eval()
        with torch.no_grad():
            predicted = model(features).argmax(1)
        accuracy = (predicted[~train_mask] == labels[~train_mask]).float().mean().item()
        print(f"epoch {epoch}: loss {loss.item():.5f} test accuracy {accuracy:.4f} lr {schedule.get_last_lr()[0]:.4f}")

graph_of = (torch.arange(N) * 4) // N  # four graphs of 15 nodes: a batch vector
readout = torch.zeros(4, CLASSES).index_add_(0, graph_of, model(features))
print("readout", [[round(v, 6) for v in row] for row in (readout / torch.bincount(graph_of)[:, None]).tolist()])
