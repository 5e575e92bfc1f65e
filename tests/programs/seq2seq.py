"""A sequence-to-sequence GRU with Bahdanau attention in the idioms of PyTorch's tutorial "NLP From Scratch:
Translation with a Sequence to Sequence Network and Attention", run unchanged under torch and under
`python -m retrograd.run`: an `EncoderRNN` (Embedding, dropout, `nn.GRU(batch_first=True)`), an additive attention
(`self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))`, `scores.squeeze(2).unsqueeze(1)`, `F.softmax`,
`torch.bmm(weights, keys)`), an `AttnDecoderRNN` that steps one token at a time with teacher forcing
(`target_tensor[:, i].unsqueeze(-1)`) or feeds back its own guess (`topv, topi = decoder_output.topk(1)`,
`topi.squeeze(-1).detach()`), `torch.cat(decoder_outputs, dim=1)` with `F.log_softmax`, `nn.NLLLoss` over
`.view(-1, size(-1))`, a `TensorDataset` behind a `RandomSampler`, two Adam optimisers, and greedy decoding under
`torch.no_grad()`. The task: write a sequence of digits backwards. `WEIGHTS=path` shares the initial weights."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from _weights import share_initial_weights
from torch import optim
from torch.utils.data import DataLoader, RandomSampler, TensorDataset

torch.manual_seed(0)
device = torch.device("cpu")
SOS_token, EOS_token, MAX_LENGTH, VOCAB = 0, 1, 6, 12  # words 2..11 are the digits 0..9


def make_pairs(n, seed):
    """Digit sequences of 2-5 words and their reversals, EOS-terminated and padded with EOS (NumPy's generator)."""
    rng = np.random.default_rng(seed)
    inputs = np.full((n, MAX_LENGTH), EOS_token, dtype=np.int64)
    targets = np.full((n, MAX_LENGTH), EOS_token, dtype=np.int64)
    for row, length in enumerate(rng.integers(2, MAX_LENGTH, n)):
        words = rng.integers(2, VOCAB, length)
        inputs[row, :length], targets[row, :length] = words, words[::-1]
    return torch.from_numpy(inputs), torch.from_numpy(targets)


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size, dropout_p=0.1):
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)
        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long, device=device).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        attentions = []

        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs)
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)

            if target_tensor is not None:
                decoder_input = target_tensor[:, i].unsqueeze(1)  # Teacher forcing: feed the target as the next input
            else:
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()  # detach from history as input

        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        attentions = torch.cat(attentions, dim=1)
        return decoder_outputs, decoder_hidden, attentions

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input))
        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)
        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)
        return output, hidden, attn_weights


def train_epoch(dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion):
    total_loss = 0
    for input_tensor, target_tensor in dataloader:
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()

        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)

        loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
        loss.backward()

        encoder_optimizer.step()
        decoder_optimizer.step()
        total_loss += loss.item()
    return total_loss / len(dataloader)


def evaluate(encoder, decoder, input_tensor):
    with torch.no_grad():
        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, decoder_hidden, decoder_attn = decoder(encoder_outputs, encoder_hidden)
        _, topi = decoder_outputs.topk(1)
        decoded_ids = topi.squeeze()
    return decoded_ids, decoder_attn


hidden_size, batch_size = 32, 16
train_inputs, train_targets = make_pairs(128, 0)
train_dataloader = DataLoader(TensorDataset(train_inputs, train_targets), sampler=RandomSampler(train_inputs),
                              batch_size=batch_size)
encoder = EncoderRNN(VOCAB, hidden_size).to(device)
decoder = AttnDecoderRNN(hidden_size, VOCAB).to(device)
share_initial_weights({"encoder": encoder, "decoder": decoder})

encoder_optimizer = optim.Adam(encoder.parameters(), lr=0.01)
decoder_optimizer = optim.Adam(decoder.parameters(), lr=0.01)
criterion = nn.NLLLoss()
for epoch in range(1, 5):
    loss = train_epoch(train_dataloader, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion)
    print(f"epoch {epoch} loss {loss:.6f}")

encoder.eval()
decoder.eval()
test_inputs, test_targets = make_pairs(32, 1)
decoded, attention = evaluate(encoder, decoder, test_inputs)
print("decoded", tuple(decoded.shape), "attention", tuple(attention.shape))
print(f"word accuracy {(decoded == test_targets).float().mean().item():.6f}")
print(f"attention on the first input word {attention[:, 0, 0].mean().item():.6f}")
