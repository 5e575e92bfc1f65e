"""News-topic text classification three ways, in the idioms of PyTorch's text-classification tutorial (AG_NEWS
with `nn.EmbeddingBag`), its language-translation / `nn.Transformer` tutorial and common sentiment-classifier repos,
run unchanged under torch and under `python -m retrograd.run`: a tiny synthetic vocabulary of topic and filler
words, labelled sentences of variable length from NumPy's seeded generator (the label is the topic whose words occur
most), a `Counter`-built vocab with `<pad>`/`<unk>` specials and `text_pipeline`/`label_pipeline` lambdas,
`random_split` with a seeded `torch.Generator()`, DataLoaders with `shuffle=True` and two `collate_fn`s: the
tutorial's 1-D concatenated `text` plus `offsets` from `torch.tensor(lengths[:-1]).cumsum(dim=0)`, and
`pad_sequence(batch_first=True, padding_value=PAD)`. Model 1: `nn.EmbeddingBag(vocab, dim, mode="mean")` + `nn.Linear`,
`init_weights` by `uniform_(-0.5, 0.5)` and `bias.data.zero_()`, `CrossEntropyLoss`, `SGD(lr=5)`,
`StepLR(step_size=1, gamma=0.1)` stepped when validation accuracy stalls, `clip_grad_norm_(model.parameters(), 0.1)`,
accuracy `(predicted_label.argmax(1) == label).sum().item()`, and the tutorial's `predict` on a new sentence.
Model 2: `nn.EmbeddingBag(mode="sum", padding_idx=PAD)` on the padded 2-D batch with idf `per_sample_weights`.
Model 3: `nn.Embedding(padding_idx=PAD)` scaled by sqrt(d_model), a sinusoidal `PositionalEncoding` registered as a
buffer, `nn.TransformerEncoder(nn.TransformerEncoderLayer(..., dropout=0.1, batch_first=True), num_layers=2)` with
`src_key_padding_mask = (x == PAD)`, masked mean pooling, `AdamW` with weight decay under a
`get_linear_schedule_with_warmup`-style `LambdaLR`; evaluation under `model.eval()` and `torch.inference_mode()`, and
the encoder's outputs at padded positions in training mode and in eval mode under `torch.no_grad()` (torch's
nested-tensor fast path returns zeros there), an empty sentence among them (an all-padding row: an empty bag for
the EmbeddingBag, zeros from the nested path and the classifier's bias after pooling). The `enable_nested_tensor`
warning of a `batch_first=False` encoder (the translation tutorial's layout) is caught and printed. `WEIGHTS=path`
shares the initial weights between the two runs (tests/programs/_draws.py shares the shuffles and the split; the
dropout masks are torch's stream in both)."""

import math
import warnings
from collections import Counter

import numpy as np
import torch
from _weights import share_initial_weights
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, random_split

torch.manual_seed(0)
TOPICS = {
    1: "election minister treaty embassy summit",  # World
    2: "goal match coach league striker",  # Sports
    3: "stocks profit merger market shares",  # Business
    4: "software chip robot quantum laptop",  # Sci/Tech
}
FILLER = "the a of in on said today new after report big week".split()
BATCH_SIZE, EMSIZE, EPOCHS = 16, 16, 3


def make_corpus(n, seed):
    """(label, sentence) pairs: 1-3 words of the label's topic, maybe fewer of one other topic, and filler."""
    rng = np.random.default_rng(seed)
    corpus = []
    for _ in range(n):
        label = int(rng.integers(1, 5))
        own = int(rng.integers(1, 4))
        words = list(rng.choice(TOPICS[label].split(), own))
        if own > 1 and rng.random() < 0.5:
            other = int(rng.choice([t for t in TOPICS if t != label]))
            words += list(rng.choice(TOPICS[other].split(), int(rng.integers(1, own))))
        words += list(rng.choice(FILLER, int(rng.integers(2, 9))))
        corpus.append((label, " ".join(rng.permutation(words))))
    return corpus


def build_vocab(corpus, specials=("<pad>", "<unk>")):
    counter = Counter(token for _, text in corpus for token in text.split())
    itos = list(specials) + sorted(counter, key=lambda w: (-counter[w], w))
    return {word: i for i, word in enumerate(itos)}


train_iter = make_corpus(240, seed=0)
test_iter = make_corpus(64, seed=1) + [(4, "the quantum laptop said hello"), (1, "")]  # "hello" is unknown
vocab = build_vocab(train_iter)
PAD, UNK = vocab["<pad>"], vocab["<unk>"]
text_pipeline = lambda x: [vocab.get(token, UNK) for token in x.split()]  # noqa: E731 - the tutorial's lambdas
label_pipeline = lambda x: int(x) - 1  # noqa: E731
print("vocab size", len(vocab), "example", text_pipeline(test_iter[-2][1]), label_pipeline(test_iter[-2][0]))


def collate_batch(batch):
    """The tutorial's collate: labels, every sentence concatenated into one 1-D tensor, and the bag offsets."""
    label_list, text_list, offsets = [], [], [0]
    for _label, _text in batch:
        label_list.append(label_pipeline(_label))
        processed_text = torch.tensor(text_pipeline(_text), dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list, text_list, offsets


def collate_padded(batch):
    """Labels and a right-padded (batch, max_len) token batch."""
    labels = torch.tensor([label_pipeline(label) for label, _ in batch])
    texts = [torch.tensor(text_pipeline(text), dtype=torch.int64) for _, text in batch]
    return labels, pad_sequence(texts, batch_first=True, padding_value=PAD)


split_gen = torch.Generator().manual_seed(42)
num_train = int(len(train_iter) * 0.8)
split_train_, split_valid_ = random_split(train_iter, [num_train, len(train_iter) - num_train], generator=split_gen)
print("split", len(split_train_), len(split_valid_), split_train_.indices[:6], split_valid_.indices[:6])
train_dataloader = DataLoader(split_train_, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch)
valid_dataloader = DataLoader(split_valid_, batch_size=BATCH_SIZE, shuffle=False, collate_fn=collate_batch)
test_dataloader = DataLoader(test_iter, batch_size=BATCH_SIZE, shuffle=False, collate_fn=collate_batch)
label, text, offsets = next(iter(valid_dataloader))
print("batch", tuple(label.shape), tuple(text.shape), offsets.tolist())


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, mode="mean")
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


class WeightedBagModel(nn.Module):
    """A bag of idf-weighted embeddings summed over the padded batch; the padding is skipped by padding_idx."""

    def __init__(self, vocab_size, embed_dim, num_class, idf):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, mode="sum", padding_idx=PAD)
        self.fc = nn.Linear(embed_dim, num_class)
        self.register_buffer("idf", idf)

    def forward(self, tokens):
        weights = self.idf[tokens] / (tokens != PAD).sum(1, keepdim=True)
        return self.fc(self.embedding(tokens, per_sample_weights=weights))


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(1, max_len, d_model)
        pe[0, :, 0::2] = torch.sin(position * div_term)
        pe[0, :, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[:, : x.size(1)]
        return self.dropout(x)


class TransformerClassifier(nn.Module):
    def __init__(self, vocab_size, d_model, nhead, dim_feedforward, num_layers, num_class):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=PAD)
        self.pos_encoder = PositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=num_layers)
        self.classifier = nn.Linear(d_model, num_class)

    def encode(self, x):
        pad_mask = x == PAD
        src = self.pos_encoder(self.embedding(x) * math.sqrt(self.d_model))
        return self.encoder(src, src_key_padding_mask=pad_mask), pad_mask

    def forward(self, x):
        out, pad_mask = self.encode(x)
        keep = (~pad_mask).unsqueeze(-1).float()
        pooled = (out * keep).sum(1) / keep.sum(1).clamp(min=1.0)
        return self.classifier(pooled)


num_class = len(set(label for (label, text) in train_iter))
vocab_size = len(vocab)
document_frequency = Counter(token for _, text in train_iter for token in set(text_pipeline(text)))
idf = torch.tensor([math.log(len(train_iter) / (1 + document_frequency[i])) + 1.0 for i in range(vocab_size)])
model = TextClassificationModel(vocab_size, EMSIZE, num_class)
bag_model = WeightedBagModel(vocab_size, EMSIZE, num_class, idf)
transformer = TransformerClassifier(vocab_size, 32, 2, 64, 2, num_class)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    seq_first = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 2, 64), num_layers=1)
for w in caught:
    print("warning", w.category.__name__, str(w.message))
print("nested", transformer.encoder.use_nested_tensor, seq_first.use_nested_tensor)
share_initial_weights({"model": model, "bag_model": bag_model, "transformer": transformer})

criterion = torch.nn.CrossEntropyLoss()


def train(dataloader, optimizer, epoch):
    model.train()
    total_acc, total_count, total_loss = 0, 0, 0.0
    log_interval = 4
    for idx, (label, text, offsets) in enumerate(dataloader):
        optimizer.zero_grad()
        predicted_label = model(text, offsets)
        loss = criterion(predicted_label, label)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        total_acc += (predicted_label.argmax(1) == label).sum().item()
        total_count += label.size(0)
        total_loss += loss.item()
        if idx % log_interval == 0 and idx > 0:
            print(f"| epoch {epoch:3d} | {idx:5d}/{len(dataloader):5d} batches | loss {total_loss / log_interval:.6f}"
                  f" | grad norm {grad_norm.item():.6f} | accuracy {total_acc / total_count:8.3f}")
            total_acc, total_count, total_loss = 0, 0, 0.0


def evaluate(dataloader):
    model.eval()
    total_acc, total_count, total_loss = 0, 0, 0.0
    with torch.no_grad():
        for label, text, offsets in dataloader:
            predicted_label = model(text, offsets)
            total_loss += criterion(predicted_label, label).item() * label.size(0)
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
    return total_acc / total_count, total_loss / total_count


optimizer = torch.optim.SGD(model.parameters(), lr=5)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
total_accu = None
for epoch in range(1, EPOCHS + 1):
    train(train_dataloader, optimizer, epoch)
    accu_val, loss_val = evaluate(valid_dataloader)
    if total_accu is not None and total_accu > accu_val:
        scheduler.step()
    else:
        total_accu = accu_val
    print(f"| end of epoch {epoch:3d} | valid accuracy {accu_val:8.3f} | valid loss {loss_val:.6f}"
          f" | lr {scheduler.get_last_lr()[0]:.6f}")
accu_test, loss_test = evaluate(test_dataloader)
print(f"test accuracy {accu_test:8.3f} loss {loss_test:.6f}")

ag_news_label = {1: "World", 2: "Sports", 3: "Business", 4: "Sci/Tec"}


def predict(text, text_pipeline):
    with torch.no_grad():
        text = torch.tensor(text_pipeline(text))
        output = model(text, torch.tensor([0]))
        return output.argmax(1).item() + 1


ex_text_str = "the striker said the coach of the league scored a goal today"
print(f"This is a {ag_news_label[predict(ex_text_str, text_pipeline)]} news")

# -- model 2: idf-weighted sum bags over the padded batch ----------------------------------------------------------
padded_train = DataLoader(split_train_, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_padded)
padded_valid = DataLoader(split_valid_, batch_size=BATCH_SIZE, collate_fn=collate_padded)
bag_optimizer = torch.optim.SGD(bag_model.parameters(), lr=1.0, momentum=0.9)
for epoch in range(1, 3):
    bag_model.train()
    for idx, (labels, tokens) in enumerate(padded_train):
        logits = bag_model(tokens)
        loss = criterion(logits, labels)
        bag_optimizer.zero_grad()
        loss.backward()
        bag_optimizer.step()
        if idx % 4 == 0:
            print(f"bag epoch {epoch} step {idx} loss {loss.item():.6f} "
                  f"pad row grad {bag_model.embedding.weight.grad[PAD].abs().sum().item():.6f}")
    bag_model.eval()
    with torch.inference_mode():
        correct = sum((bag_model(tokens).argmax(1) == labels).sum().item() for labels, tokens in padded_valid)
    print(f"bag epoch {epoch} valid accuracy {correct / len(split_valid_):.3f}")

# -- model 3: a Transformer encoder over the padded batch ---------------------------------------------------------
num_steps = 2 * len(padded_train)
warmup_steps = 3


def lr_lambda(current_step):
    """get_linear_schedule_with_warmup: up linearly for warmup_steps, then down linearly to zero."""
    if current_step < warmup_steps:
        return float(current_step) / float(max(1, warmup_steps))
    return max(0.0, float(num_steps - current_step) / float(max(1, num_steps - warmup_steps)))


no_decay = ["bias", "norm"]
grouped = [
    {"params": [p for n, p in transformer.named_parameters() if not any(nd in n for nd in no_decay)],
     "weight_decay": 0.01},
    {"params": [p for n, p in transformer.named_parameters() if any(nd in n for nd in no_decay)],
     "weight_decay": 0.0},
]
t_optimizer = torch.optim.AdamW(grouped, lr=3e-3)
t_scheduler = torch.optim.lr_scheduler.LambdaLR(t_optimizer, lr_lambda)
step = 0
for epoch in range(1, 3):
    transformer.train()
    for labels, tokens in padded_train:
        logits = transformer(tokens)
        loss = criterion(logits, labels)
        t_optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(transformer.parameters(), 1.0)
        t_optimizer.step()
        t_scheduler.step()
        step += 1
        if step % 3 == 0:
            print(f"transformer step {step} loss {loss.item():.6f} lr {t_scheduler.get_last_lr()[0]:.6f}")
    transformer.eval()
    total_loss, correct = 0.0, 0
    with torch.inference_mode():
        for labels, tokens in padded_valid:
            logits = transformer(tokens)
            total_loss += criterion(logits, labels).item() * labels.size(0)
            correct += (logits.argmax(1) == labels).sum().item()
    print(f"transformer epoch {epoch} valid loss {total_loss / len(split_valid_):.6f} "
          f"accuracy {correct / len(split_valid_):.3f}")

labels, tokens = collate_padded([split_valid_[i] for i in range(BATCH_SIZE - 1)] + [test_iter[-1]])
with torch.no_grad():
    transformer.train()
    torch.manual_seed(1)
    train_out, pad_mask = transformer.encode(tokens)
    transformer.eval()
    eval_out, _ = transformer.encode(tokens)
with torch.inference_mode():
    inference_out, _ = transformer.encode(tokens)
print(f"padded positions {pad_mask.sum().item()}: train |out| {train_out[pad_mask].abs().sum().item():.6f} "
      f"eval |out| {eval_out[pad_mask].abs().sum().item():.6f} "
      f"inference |out| {inference_out[pad_mask].abs().sum().item():.6f}")
print(f"kept positions eval |out| {eval_out[~pad_mask].abs().sum().item():.6f} "
      f"first row {eval_out[0, 0, :4].tolist()}")
with torch.inference_mode():
    logits = transformer(tokens)
print(f"empty sentence: train |out| {train_out[-1].abs().sum().item():.6f} eval |out| "
      f"{eval_out[-1].abs().sum().item():.6f} logits {logits[-1].tolist()} = "
      f"bias {transformer.classifier.bias.tolist()}")
