"""A small speech-style recogniser in the idioms of public CTC code (DeepSpeech-like PyTorch ports): padded
feature sequences of different lengths, a Conv1d front end, a bidirectional GRU over `pack_padded_sequence`
(enforce_sorted=False), log-probabilities (T, N, C) for `F.ctc_loss` with input and target lengths, Adam with
ReduceLROnPlateau, and greedy decoding with `unique_consecutive`; also a Transformer encoder over the same batch
with a key padding mask, and autocast. `WEIGHTS=path` shares the initial weights between the two runs
(tests/programs/_draws.py shares the draws)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

torch.manual_seed(0)
FEATURES, CLASSES, BLANK = 12, 6, 0
lengths = torch.tensor([30, 24, 30, 18, 30, 24])
targets = [torch.randint(1, CLASSES, (int(n) // 6,)) for n in lengths]
target_lengths = torch.tensor([len(t) for t in targets])
flat_targets = torch.cat(targets)
features = torch.zeros(len(lengths), int(lengths.max()), FEATURES)
for i, (n, t) in enumerate(zip(lengths.tolist(), targets)):
    spread = t.repeat_interleave(6)[:n]  # each label held for 6 frames
    noise = 0.3 * torch.randn(n, FEATURES)
    features[i, :n] = F.one_hot(spread, CLASSES).float() @ torch.randn(CLASSES, FEATURES) + noise


class Recogniser(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.front = nn.Conv1d(FEATURES, hidden, kernel_size=3, padding=1)
        self.rnn = nn.GRU(hidden, hidden, num_layers=2, bidirectional=True, batch_first=True, dropout=0.1)
        self.out = nn.Linear(2 * hidden, CLASSES)

    def forward(self, x, lengths):
        h = F.gelu(self.front(x.transpose(1, 2))).transpose(1, 2)
        packed = pack_padded_sequence(h, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return self.out(out).log_softmax(-1)


model = Recogniser()
encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(FEATURES, nhead=3, dim_feedforward=24, dropout=0.0,
                                                           batch_first=True), num_layers=2, enable_nested_tensor=False)
share_initial_weights({"model": model, "encoder": encoder})
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=2)
for step in range(30):
    log_probs = model(features, lengths)
    loss = F.ctc_loss(log_probs.transpose(0, 1), flat_targets, lengths, target_lengths, blank=BLANK,
                      zero_infinity=True)
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    optimizer.step()
    plateau.step(loss.item())
    if step % 5 == 0:
        print(f"step {step}: ctc {loss.item():.5f} lr {optimizer.param_groups[0]['lr']:.5f}")

model.eval()
with torch.no_grad():
    best = model(features, lengths).argmax(-1)
for i, n in enumerate(lengths.tolist()):
    decoded = torch.unique_consecutive(best[i, :n])
    decoded = decoded[decoded != BLANK]
    print("decoded", decoded.tolist(), "target", targets[i].tolist())

# the same batch through a Transformer encoder with a padding mask: under CPU autocast (bfloat16, while both libraries
# hold the same weights: after training they differ in float32's last bits, which bfloat16 rounding can magnify),
# then trained
padding = torch.arange(features.shape[1])[None, :] >= lengths[:, None]
with torch.autocast("cpu", dtype=torch.bfloat16):
    logits = encoder(features, src_key_padding_mask=padding) @ torch.randn(FEATURES, 3)
print("autocast before training", logits.dtype, f"{logits.float().abs().mean().item():.3f}")
opt = torch.optim.SGD(encoder.parameters(), lr=0.05, momentum=0.9)
for step in range(5):
    encoded = encoder(features, src_key_padding_mask=padding)
    pooled = encoded.masked_fill(padding[..., None], 0.0).sum(1) / lengths[:, None]
    loss = F.mse_loss(pooled, features.sum(1) / lengths[:, None])
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"encoder step {step}: {loss.item():.6f}")
