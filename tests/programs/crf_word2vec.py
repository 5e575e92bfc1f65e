"""Small NLP models from the classic PyTorch NLP sources, run unchanged under torch and under `python -m retrograd.run`.
(1) The official "Advanced: Making Dynamic Decisions and the Bi-LSTM CRF" tutorial: a BiLSTM-CRF tagger on the
tutorial's two toy sentences, with `log_sum_exp` written by `argmax` (`torch.max(vec, 1)`, `.item()`) and
`torch.log(torch.sum(torch.exp(vec - max_score_broadcast)))`, the forward algorithm from `torch.full((1, tagset),
-10000.)` one tag at a time (`view(1, -1).expand(1, n)`, `torch.cat(alphas_t)`), transitions
`nn.Parameter(torch.randn(n, n))` with `.data[START, :] = -10000`, the LSTM's hidden state drawn by `torch.randn` on
every call, `_score_sentence` by `torch.cat` and tensor indexing, Viterbi decoding with backpointers, trained by SGD
with weight decay; it prints `model(sentence)` (a 0-d tensor and the decoded tags) before and after. Then the same
sentences batched as the NER repositories do, through kmkurn/pytorch-crf's `CRF` layer: `pad_sequence`,
`pack_padded_sequence(enforce_sorted=False)` / `pad_packed_sequence(total_length=...)` around a `batch_first` BiLSTM,
the padding mask made `.byte()` (and pytorch-crf's own default `torch.ones_like(tags, dtype=torch.uint8)`), checked by
`mask[:, 0].all()`, `torch.where(mask[i].unsqueeze(1), ...)` on it, `torch.logsumexp` over broadcast scores,
`emissions[i, torch.arange(batch), tags[i]]`, Viterbi by `max(dim=1)` with `history[:seq_ends[idx]]`, the four
reductions, Adam. (2) The official "NLP From Scratch: Classifying Names with a Character-Level RNN" tutorial: a
hand-written RNN cell (`i2h` and `i2o` on `torch.cat((input, hidden), 1)`, `nn.LogSoftmax(dim=1)`), one-hot letter
tensors filled by `tensor[li][0][letterToIndex(letter)] = 1`, `nn.NLLLoss`, the manual update `p.data.add_(p.grad.data,
alpha=-learning_rate)`, predictions by `output.topk(3, 1, True)`. (3) Word2vec skip-gram with negative sampling as
public implementations write it: input and output `nn.Embedding`s (uniform and zero init through
`init.uniform_(weight.data, ...)`), negatives drawn by `torch.multinomial(unigram ** 0.75 / Z, k * batch,
replacement=True)`, `torch.bmm` of the output vectors with `emb_u.unsqueeze(2)`, `torch.clamp`, `F.logsigmoid`, batches
by `torch.randperm`, Adam (SparseAdam's sparse gradients are left out), and nearest neighbours by cosine similarity
(`F.normalize`, `mm`, `topk`); then theeluwin/pytorch-sgns' variant: `FT`/`LT` aliases of
`torch.FloatTensor`/`torch.LongTensor`, embedding weights replaced by `nn.Parameter(torch.cat([zeros,
FT(n,d).uniform_(...)]))` with `padding_idx=0`, negatives by `torch.multinomial(FT(wf), ...)` or `FT(b, c *
k).uniform_(0, V-1).long()`, `torch.bmm(...).squeeze().sigmoid().log()` on `.neg()` vectors, over a shuffling DataLoader
of a TensorDataset, ending in `weight.data.cpu().numpy()`. The corpus is drawn from NumPy's seeded generator;
`WEIGHTS=path` shares the initial weights (tests/programs/_draws.py shares the randn and randperm draws; the multinomial
and uniform_ draws come from the seeded generator in both)."""

import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from _weights import share_initial_weights
from torch.nn import init

torch.manual_seed(1)
random.seed(0)
rng = np.random.default_rng(0)

# ---------------------------------------------------------------------------------------------- (1) BiLSTM-CRF


def argmax(vec):
    # return the argmax as a python int
    _, idx = torch.max(vec, 1)
    return idx.item()


def prepare_sequence(seq, to_ix):
    idxs = [to_ix[w] for w in seq]
    return torch.tensor(idxs, dtype=torch.long)


# Compute log sum exp in a numerically stable way for the forward algorithm
def log_sum_exp(vec):
    max_score = vec[0, argmax(vec)]
    max_score_broadcast = max_score.view(1, -1).expand(1, vec.size()[1])
    return max_score + torch.log(torch.sum(torch.exp(vec - max_score_broadcast)))


class BiLSTM_CRF(nn.Module):

    def __init__(self, vocab_size, tag_to_ix, embedding_dim, hidden_dim):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.hidden_dim = hidden_dim
        self.vocab_size = vocab_size
        self.tag_to_ix = tag_to_ix
        self.tagset_size = len(tag_to_ix)

        self.word_embeds = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, num_layers=1, bidirectional=True)

        # Maps the output of the LSTM into tag space.
        self.hidden2tag = nn.Linear(hidden_dim, self.tagset_size)

        # Matrix of transition parameters.  Entry i,j is the score of transitioning *to* i *from* j.
        self.transitions = nn.Parameter(torch.randn(self.tagset_size, self.tagset_size))

        # These two statements enforce the constraint that we never transfer
        # to the start tag and we never transfer from the stop tag
        self.transitions.data[tag_to_ix[START_TAG], :] = -10000
        self.transitions.data[:, tag_to_ix[STOP_TAG]] = -10000

        self.hidden = self.init_hidden()

    def init_hidden(self):
        return (torch.randn(2, 1, self.hidden_dim // 2),
                torch.randn(2, 1, self.hidden_dim // 2))

    def _forward_alg(self, feats):
        # Do the forward algorithm to compute the partition function
        init_alphas = torch.full((1, self.tagset_size), -10000.)
        # START_TAG has all of the score.
        init_alphas[0][self.tag_to_ix[START_TAG]] = 0.

        # Wrap in a variable so that we will get automatic backprop
        forward_var = init_alphas

        # Iterate through the sentence
        for feat in feats:
            alphas_t = []  # The forward tensors at this timestep
            for next_tag in range(self.tagset_size):
                # broadcast the emission score: it is the same regardless of the previous tag
                emit_score = feat[next_tag].view(1, -1).expand(1, self.tagset_size)
                # the ith entry of trans_score is the score of transitioning to next_tag from i
                trans_score = self.transitions[next_tag].view(1, -1)
                # The ith entry of next_tag_var is the value for the edge (i -> next_tag) before we do log-sum-exp
                next_tag_var = forward_var + trans_score + emit_score
                # The forward variable for this tag is log-sum-exp of all the scores.
                alphas_t.append(log_sum_exp(next_tag_var).view(1))
            forward_var = torch.cat(alphas_t).view(1, -1)
        terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
        alpha = log_sum_exp(terminal_var)
        return alpha

    def _get_lstm_features(self, sentence):
        self.hidden = self.init_hidden()
        embeds = self.word_embeds(sentence).view(len(sentence), 1, -1)
        lstm_out, self.hidden = self.lstm(embeds, self.hidden)
        lstm_out = lstm_out.view(len(sentence), self.hidden_dim)
        lstm_feats = self.hidden2tag(lstm_out)
        return lstm_feats

    def _score_sentence(self, feats, tags):
        # Gives the score of a provided tag sequence
        score = torch.zeros(1)
        tags = torch.cat([torch.tensor([self.tag_to_ix[START_TAG]], dtype=torch.long), tags])
        for i, feat in enumerate(feats):
            score = score + self.transitions[tags[i + 1], tags[i]] + feat[tags[i + 1]]
        score = score + self.transitions[self.tag_to_ix[STOP_TAG], tags[-1]]
        return score

    def _viterbi_decode(self, feats):
        backpointers = []

        # Initialize the viterbi variables in log space
        init_vvars = torch.full((1, self.tagset_size), -10000.)
        init_vvars[0][self.tag_to_ix[START_TAG]] = 0

        # forward_var at step i holds the viterbi variables for step i-1
        forward_var = init_vvars
        for feat in feats:
            bptrs_t = []  # holds the backpointers for this step
            viterbivars_t = []  # holds the viterbi variables for this step

            for next_tag in range(self.tagset_size):
                # next_tag_var[i] holds the viterbi variable for tag i at the previous step, plus the score of
                # transitioning from tag i to next_tag.
                next_tag_var = forward_var + self.transitions[next_tag]
                best_tag_id = argmax(next_tag_var)
                bptrs_t.append(best_tag_id)
                viterbivars_t.append(next_tag_var[0][best_tag_id].view(1))
            # Now add in the emission scores, and assign forward_var to the set of viterbi variables we just computed
            forward_var = (torch.cat(viterbivars_t) + feat).view(1, -1)
            backpointers.append(bptrs_t)

        # Transition to STOP_TAG
        terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
        best_tag_id = argmax(terminal_var)
        path_score = terminal_var[0][best_tag_id]

        # Follow the back pointers to decode the best path.
        best_path = [best_tag_id]
        for bptrs_t in reversed(backpointers):
            best_tag_id = bptrs_t[best_tag_id]
            best_path.append(best_tag_id)
        # Pop off the start tag (we dont want to return that to the caller)
        start = best_path.pop()
        assert start == self.tag_to_ix[START_TAG]  # Sanity check
        best_path.reverse()
        return path_score, best_path

    def neg_log_likelihood(self, sentence, tags):
        feats = self._get_lstm_features(sentence)
        forward_score = self._forward_alg(feats)
        gold_score = self._score_sentence(feats, tags)
        return forward_score - gold_score

    def forward(self, sentence):  # dont confuse this with _forward_alg above.
        # Get the emission scores from the BiLSTM
        lstm_feats = self._get_lstm_features(sentence)

        # Find the best path, given the features.
        score, tag_seq = self._viterbi_decode(lstm_feats)
        return score, tag_seq


START_TAG = "<START>"
STOP_TAG = "<STOP>"
EMBEDDING_DIM = 5
HIDDEN_DIM = 4

# Make up some training data
training_data = [(
    "the wall street journal reported today that apple corporation made money".split(),
    "B I I I O O O B I O O".split()
), (
    "georgia tech is a university in georgia".split(),
    "B I O O O O B".split()
)]

word_to_ix = {}
for sentence, tags in training_data:
    for word in sentence:
        if word not in word_to_ix:
            word_to_ix[word] = len(word_to_ix)

tag_to_ix = {"B": 0, "I": 1, "O": 2, START_TAG: 3, STOP_TAG: 4}


class CRF(nn.Module):
    """kmkurn/pytorch-crf's CRF layer, batched: the normaliser by `torch.logsumexp` over broadcast scores, the
    padding kept out by `torch.where(mask[i].unsqueeze(1), next_score, score)` on its default uint8 mask."""

    def __init__(self, num_tags, batch_first=False):
        super().__init__()
        self.num_tags = num_tags
        self.batch_first = batch_first
        self.start_transitions = nn.Parameter(torch.empty(num_tags))
        self.end_transitions = nn.Parameter(torch.empty(num_tags))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags))
        self.reset_parameters()

    def reset_parameters(self):
        nn.init.uniform_(self.start_transitions, -0.1, 0.1)
        nn.init.uniform_(self.end_transitions, -0.1, 0.1)
        nn.init.uniform_(self.transitions, -0.1, 0.1)

    def __repr__(self):
        return f"{self.__class__.__name__}(num_tags={self.num_tags})"

    def forward(self, emissions, tags, mask=None, reduction="sum"):
        self._validate(emissions, tags=tags, mask=mask)
        if reduction not in ("none", "sum", "mean", "token_mean"):
            raise ValueError(f"invalid reduction: {reduction}")
        if mask is None:
            mask = torch.ones_like(tags, dtype=torch.uint8)
        if self.batch_first:
            emissions = emissions.transpose(0, 1)
            tags = tags.transpose(0, 1)
            mask = mask.transpose(0, 1)
        numerator = self._compute_score(emissions, tags, mask)
        denominator = self._compute_normalizer(emissions, mask)
        llh = numerator - denominator
        if reduction == "none":
            return llh
        if reduction == "sum":
            return llh.sum()
        if reduction == "mean":
            return llh.mean()
        return llh.sum() / mask.float().sum()

    def decode(self, emissions, mask=None):
        self._validate(emissions, mask=mask)
        if mask is None:
            mask = emissions.new_ones(emissions.shape[:2], dtype=torch.uint8)
        if self.batch_first:
            emissions = emissions.transpose(0, 1)
            mask = mask.transpose(0, 1)
        return self._viterbi_decode(emissions, mask)

    def _validate(self, emissions, tags=None, mask=None):
        if emissions.dim() != 3:
            raise ValueError(f"emissions must have dimension of 3, got {emissions.dim()}")
        if emissions.size(2) != self.num_tags:
            raise ValueError(f"expected last dimension of emissions is {self.num_tags}, got {emissions.size(2)}")
        if mask is not None:
            no_empty_seq = not self.batch_first and mask[0].all()
            no_empty_seq_bf = self.batch_first and mask[:, 0].all()
            if not no_empty_seq and not no_empty_seq_bf:
                raise ValueError("mask of the first timestep must all be on")

    def _compute_score(self, emissions, tags, mask):
        seq_length, batch_size = tags.shape
        mask = mask.float()
        score = self.start_transitions[tags[0]]
        score += emissions[0, torch.arange(batch_size), tags[0]]
        for i in range(1, seq_length):
            score += self.transitions[tags[i - 1], tags[i]] * mask[i]
            score += emissions[i, torch.arange(batch_size), tags[i]] * mask[i]
        seq_ends = mask.long().sum(dim=0) - 1
        last_tags = tags[seq_ends, torch.arange(batch_size)]
        score += self.end_transitions[last_tags]
        return score

    def _compute_normalizer(self, emissions, mask):
        seq_length = emissions.size(0)
        score = self.start_transitions + emissions[0]
        for i in range(1, seq_length):
            broadcast_score = score.unsqueeze(2)
            broadcast_emissions = emissions[i].unsqueeze(1)
            next_score = broadcast_score + self.transitions + broadcast_emissions
            next_score = torch.logsumexp(next_score, dim=1)
            score = torch.where(mask[i].unsqueeze(1), next_score, score)
        score += self.end_transitions
        return torch.logsumexp(score, dim=1)

    def _viterbi_decode(self, emissions, mask):
        seq_length, batch_size = mask.shape
        score = self.start_transitions + emissions[0]
        history = []
        for i in range(1, seq_length):
            broadcast_score = score.unsqueeze(2)
            broadcast_emission = emissions[i].unsqueeze(1)
            next_score = broadcast_score + self.transitions + broadcast_emission
            next_score, indices = next_score.max(dim=1)
            score = torch.where(mask[i].unsqueeze(1), next_score, score)
            history.append(indices)
        score += self.end_transitions
        seq_ends = mask.long().sum(dim=0) - 1
        best_tags_list = []
        for idx in range(batch_size):
            _, best_last_tag = score[idx].max(dim=0)
            best_tags = [best_last_tag.item()]
            for hist in reversed(history[:seq_ends[idx]]):
                best_last_tag = hist[idx][best_tags[-1]]
                best_tags.append(best_last_tag.item())
            best_tags.reverse()
            best_tags_list.append(best_tags)
        return best_tags_list


class BiLSTMCRFTagger(nn.Module):
    """The NER repositories' batched tagger: padded batches through `pack_padded_sequence`, emissions into the CRF
    with the padding mask made `.byte()` as pytorch-crf's older versions required."""

    def __init__(self, vocab_size, num_tags, embedding_dim, hidden_dim, pad_idx=0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_idx)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, batch_first=True, bidirectional=True)
        self.hidden2tag = nn.Linear(hidden_dim, num_tags)
        self.crf = CRF(num_tags, batch_first=True)
        self.pad_idx = pad_idx

    def _emissions(self, words, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.embedding(words), lengths, batch_first=True,
                                                   enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=words.size(1))
        return self.hidden2tag(out)

    def forward(self, words, lengths, tags):
        mask = (words != self.pad_idx).byte()
        return -self.crf(self._emissions(words, lengths), tags, mask=mask, reduction="mean")

    def decode(self, words, lengths):
        return self.crf.decode(self._emissions(words, lengths), mask=(words != self.pad_idx).byte())


# the toy sentences padded into one batch (word 0 is padding, tag O pads the tags)
batch_words = nn.utils.rnn.pad_sequence([torch.tensor([word_to_ix[w] + 1 for w in s]) for s, _ in training_data],
                                        batch_first=True)
batch_tags = nn.utils.rnn.pad_sequence([torch.tensor([tag_to_ix[t] for t in ts]) for _, ts in training_data],
                                       batch_first=True, padding_value=tag_to_ix["O"])
batch_lengths = torch.tensor([len(s) for s, _ in training_data])

# ------------------------------------------------------------------------------------------- (2) char-level RNN

all_letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .,;'"
n_letters = len(all_letters)
category_lines = {
    "English": ["Smith", "Jones", "Taylor", "Brown", "Wilson", "Evans"],
    "Italian": ["Rossi", "Russo", "Ferrari", "Esposito", "Bianchi", "Romano"],
    "Japanese": ["Sato", "Suzuki", "Takahashi", "Tanaka", "Watanabe", "Ito"],
    "Polish": ["Nowak", "Kowalski", "Wisniewski", "Wojcik", "Kowalczyk", "Kaminski"],
}
all_categories = list(category_lines)
n_categories = len(all_categories)


# Find letter index from all_letters, e.g. "a" = 0
def letterToIndex(letter):
    return all_letters.find(letter)


# Just for demonstration, turn a letter into a <1 x n_letters> Tensor
def letterToTensor(letter):
    tensor = torch.zeros(1, n_letters)
    tensor[0][letterToIndex(letter)] = 1
    return tensor


# Turn a line into a <line_length x 1 x n_letters>, or an array of one-hot letter vectors
def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()

        self.hidden_size = hidden_size

        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = self.i2h(combined)
        output = self.i2o(combined)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


def categoryFromOutput(output):
    top_n, top_i = output.topk(1)
    category_i = top_i[0].item()
    return all_categories[category_i], category_i


def randomChoice(lst):
    return lst[random.randint(0, len(lst) - 1)]


def randomTrainingExample():
    category = randomChoice(all_categories)
    line = randomChoice(category_lines[category])
    category_tensor = torch.tensor([all_categories.index(category)], dtype=torch.long)
    line_tensor = lineToTensor(line)
    return category, line, category_tensor, line_tensor


criterion = nn.NLLLoss()
learning_rate = 0.02  # the tutorial's 0.005 over 100000 iterations, sped up for 400


def train(category_tensor, line_tensor):
    hidden = rnn.initHidden()

    rnn.zero_grad()

    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)

    loss = criterion(output, category_tensor)
    loss.backward()

    # Add parameters' gradients to their values, multiplied by learning rate
    for p in rnn.parameters():
        p.data.add_(p.grad.data, alpha=-learning_rate)

    return output, loss.item()


def evaluate(line_tensor):
    hidden = rnn.initHidden()
    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)
    return output


def predict(input_line, n_predictions=3):
    print(f"\n> {input_line}")
    with torch.no_grad():
        output = evaluate(lineToTensor(input_line))

        # Get top N categories
        topv, topi = output.topk(n_predictions, 1, True)
        predictions = []

        for i in range(n_predictions):
            value = topv[0][i].item()
            category_index = topi[0][i].item()
            print(f"({value:.4f}) {all_categories[category_index]}")
            predictions.append([value, all_categories[category_index]])
    return predictions


# ------------------------------------------------------------------------------ (3) skip-gram, negative sampling

TOPICS = [["king", "queen", "prince", "crown", "throne", "royal"],
          ["cat", "dog", "puppy", "kitten", "pet", "fur"],
          ["stock", "market", "trade", "price", "bank", "money"],
          ["rain", "cloud", "storm", "wind", "snow", "sun"]]
vocab = [w for topic in TOPICS for w in topic] + ["the", "a", "of"]
word2id = {w: i for i, w in enumerate(vocab)}
corpus = []
for _ in range(80):  # each sentence stays in one topic, with a few function words mixed in
    topic = TOPICS[rng.integers(len(TOPICS))]
    words = list(rng.choice(topic, size=6, p=[0.3, 0.25, 0.15, 0.12, 0.1, 0.08]))
    for _ in range(2):
        words.insert(rng.integers(len(words) + 1), rng.choice(["the", "a", "of"]))
    corpus.append([word2id[w] for w in words])
counts = np.bincount([w for s in corpus for w in s], minlength=len(vocab)).astype(np.float64)
WINDOW, NEG, EMB_DIM, BATCH, W2V_EPOCHS = 2, 5, 10, 64, 4
pairs = np.array([(s[i], s[j]) for s in corpus for i in range(len(s))
                  for j in range(max(0, i - WINDOW), min(len(s), i + WINDOW + 1)) if j != i])
pos_u_all, pos_v_all = torch.from_numpy(pairs[:, 0]), torch.from_numpy(pairs[:, 1])
unigram = torch.tensor(counts, dtype=torch.float)
noise_dist = unigram ** 0.75 / (unigram ** 0.75).sum()


class SkipGramModel(nn.Module):

    def __init__(self, emb_size, emb_dimension):
        super().__init__()
        self.emb_size = emb_size
        self.emb_dimension = emb_dimension
        self.u_embeddings = nn.Embedding(emb_size, emb_dimension)
        self.v_embeddings = nn.Embedding(emb_size, emb_dimension)

        initrange = 1.0 / self.emb_dimension
        init.uniform_(self.u_embeddings.weight.data, -initrange, initrange)
        init.constant_(self.v_embeddings.weight.data, 0)

    def forward(self, pos_u, pos_v, neg_v):
        emb_u = self.u_embeddings(pos_u)
        emb_v = self.v_embeddings(pos_v)
        emb_neg_v = self.v_embeddings(neg_v)

        score = torch.sum(torch.mul(emb_u, emb_v), dim=1)
        score = torch.clamp(score, max=10, min=-10)
        score = -F.logsigmoid(score)

        neg_score = torch.bmm(emb_neg_v, emb_u.unsqueeze(2)).squeeze()
        neg_score = torch.clamp(neg_score, max=10, min=-10)
        neg_score = -torch.sum(F.logsigmoid(-neg_score), dim=1)

        return torch.mean(score + neg_score)


FT, LT = torch.FloatTensor, torch.LongTensor


class Word2Vec(nn.Module):
    """theeluwin/pytorch-sgns' embedding bundle: row 0 is padding, the input vectors start uniform."""

    def __init__(self, vocab_size, embedding_size, padding_idx=0):
        super().__init__()
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.ivectors = nn.Embedding(self.vocab_size, self.embedding_size, padding_idx=padding_idx)
        self.ovectors = nn.Embedding(self.vocab_size, self.embedding_size, padding_idx=padding_idx)
        self.ivectors.weight = nn.Parameter(torch.cat([torch.zeros(1, self.embedding_size),
                                                       FT(self.vocab_size - 1, self.embedding_size).uniform_(
                                                           -0.5 / self.embedding_size, 0.5 / self.embedding_size)]))
        self.ovectors.weight = nn.Parameter(torch.cat([torch.zeros(1, self.embedding_size),
                                                       FT(self.vocab_size - 1, self.embedding_size).uniform_(
                                                           -0.5 / self.embedding_size, 0.5 / self.embedding_size)]))
        self.ivectors.weight.requires_grad = True
        self.ovectors.weight.requires_grad = True

    def forward_i(self, data):
        v = LT(data)
        return self.ivectors(v)

    def forward_o(self, data):
        v = LT(data)
        return self.ovectors(v)


class SGNS(nn.Module):

    def __init__(self, embedding, vocab_size, n_negs, weights=None):
        super().__init__()
        self.embedding = embedding
        self.vocab_size = vocab_size
        self.n_negs = n_negs
        self.weights = None
        if weights is not None:
            wf = np.power(weights, 0.75)
            wf = wf / wf.sum()
            self.weights = FT(wf)

    def forward(self, iword, owords):
        batch_size = iword.size()[0]
        context_size = owords.size()[1]
        if self.weights is not None:
            nwords = torch.multinomial(self.weights, batch_size * context_size * self.n_negs,
                                       replacement=True).view(batch_size, -1)
        else:
            nwords = FT(batch_size, context_size * self.n_negs).uniform_(0, self.vocab_size - 1).long()
        ivectors = self.embedding.forward_i(iword).unsqueeze(2)
        ovectors = self.embedding.forward_o(owords)
        nvectors = self.embedding.forward_o(nwords).neg()
        oloss = torch.bmm(ovectors, ivectors).squeeze().sigmoid().log().mean(1)
        nloss = torch.bmm(nvectors, ivectors).squeeze().sigmoid().log()
        nloss = nloss.view(-1, context_size, self.n_negs).sum(2).mean(1)
        return -(oloss + nloss).mean()


# theeluwin's data: every word with its 2 * WINDOW neighbours, sentences padded by the padding word (index 0, so
# the vocabulary shifts by one)
padded = [[0] * WINDOW + [w + 1 for w in s] + [0] * WINDOW for s in corpus]
iwords = np.array([s[i] for s in padded for i in range(WINDOW, len(s) - WINDOW)])
owords = np.array([s[i - WINDOW:i] + s[i + 1:i + WINDOW + 1] for s in padded for i in range(WINDOW, len(s) - WINDOW)])
sgns_data = torch.utils.data.TensorDataset(torch.from_numpy(iwords), torch.from_numpy(owords))

# ------------------------------------------------------------------------------------- the models, and training

model = BiLSTM_CRF(len(word_to_ix), tag_to_ix, EMBEDDING_DIM, HIDDEN_DIM)
print(model)
n_hidden = 32
rnn = RNN(n_letters, n_hidden, n_categories)
skip_gram = SkipGramModel(len(vocab), EMB_DIM)
word2vec = Word2Vec(len(vocab) + 1, EMB_DIM)
sgns = SGNS(word2vec, len(vocab) + 1, NEG, weights=np.concatenate([[0.0], counts]))
sgns_uniform = SGNS(Word2Vec(len(vocab) + 1, EMB_DIM), len(vocab) + 1, NEG)
tagger = BiLSTMCRFTagger(len(word_to_ix) + 1, 3, EMBEDDING_DIM, HIDDEN_DIM)
print(tagger)
share_initial_weights({"crf": model, "tagger": tagger, "rnn": rnn, "skip_gram": skip_gram, "sgns": sgns,
                       "sgns_uniform": sgns_uniform})

# the BiLSTM-CRF, as the tutorial goes
optimizer = optim.SGD(model.parameters(), lr=0.05, weight_decay=1e-4)

# Check predictions before training
with torch.no_grad():
    precheck_sent = prepare_sequence(training_data[0][0], word_to_ix)
    precheck_tags = torch.tensor([tag_to_ix[t] for t in training_data[0][1]], dtype=torch.long)
    print(model(precheck_sent))

for epoch in range(12):  # the tutorial runs 300 epochs at lr 0.01
    for sentence, tags in training_data:
        model.zero_grad()
        sentence_in = prepare_sequence(sentence, word_to_ix)
        targets = torch.tensor([tag_to_ix[t] for t in tags], dtype=torch.long)
        loss = model.neg_log_likelihood(sentence_in, targets)
        loss.backward()
        optimizer.step()
    if epoch % 3 == 0:
        print(f"crf epoch {epoch} loss {loss.item():.6f} transitions {model.transitions[:3, :3].norm().item():.6f}")
print(loss)

with torch.no_grad():
    precheck_sent = prepare_sequence(training_data[0][0], word_to_ix)
    print(model(precheck_sent))
    print(model(prepare_sequence(training_data[1][0], word_to_ix))[1], training_data[1][1])

# the batched BiLSTM-CRF (pytorch-crf), Adam on the mean negative log-likelihood
tagger_optimizer = optim.Adam(tagger.parameters(), lr=0.05)
for epoch in range(10):
    tagger_optimizer.zero_grad()
    loss = tagger(batch_words, batch_lengths, batch_tags)
    loss.backward()
    tagger_optimizer.step()
    if epoch % 3 == 0:
        emissions = tagger._emissions(batch_words, batch_lengths)
        token_mean = tagger.crf(emissions, batch_tags, mask=(batch_words != 0).byte(), reduction="token_mean")
        print(f"pytorch-crf epoch {epoch} loss {loss.item():.6f} token_mean {token_mean.item():.6f} "
              f"unmasked {tagger.crf(emissions, batch_tags, reduction='none').tolist()}")
with torch.no_grad():
    print(tagger.decode(batch_words, batch_lengths), batch_lengths.tolist())
    print(tagger.crf.transitions)

# the char-level RNN, as the tutorial goes
print(letterToTensor("J").nonzero())
print(lineToTensor("Jones").size())

input = lineToTensor("Albert")
hidden = torch.zeros(1, n_hidden)

output, next_hidden = rnn(input[0], hidden)
print(output)
print(categoryFromOutput(output))

n_iters = 400
print_every = 100
current_loss = 0
for iter in range(1, n_iters + 1):
    category, line, category_tensor, line_tensor = randomTrainingExample()
    output, loss = train(category_tensor, line_tensor)
    current_loss += loss
    if iter % print_every == 0:
        guess, guess_i = categoryFromOutput(output)
        correct = "✓" if guess == category else f"✗ ({category})"
        print(f"{iter} {iter / n_iters * 100:.0f}% {loss:.4f} {line} / {guess} {correct} "
              f"avg {current_loss / print_every:.6f}")
        current_loss = 0

predict("Dovesky")
predict("Jackson")
predict("Satoshi")

# skip-gram training, nearest neighbours by cosine similarity
w2v_optimizer = optim.Adam(skip_gram.parameters(), lr=0.05)
for epoch in range(W2V_EPOCHS):
    perm = torch.randperm(len(pairs))
    running, batches = 0.0, 0
    for start in range(0, len(pairs), BATCH):
        idx = perm[start:start + BATCH]
        pos_u, pos_v = pos_u_all[idx], pos_v_all[idx]
        neg_v = torch.multinomial(noise_dist, NEG * len(idx), replacement=True).view(len(idx), NEG)
        w2v_optimizer.zero_grad()
        loss = skip_gram(pos_u, pos_v, neg_v)
        loss.backward()
        w2v_optimizer.step()
        running += loss.item()
        batches += 1
    print(f"skip-gram epoch {epoch} loss {running / batches:.6f} last {loss.item():.6f}")

with torch.no_grad():
    emb = F.normalize(skip_gram.u_embeddings.weight, dim=1)
    sims = emb.mm(emb.t())
    for word in ["king", "cat", "stock", "rain"]:
        values, neighbours = sims[word2id[word]].topk(4)
        close = zip(values[1:].tolist(), neighbours[1:].tolist())
        print(word, "->", ", ".join(f"{vocab[i]} {v:.4f}" for v, i in close))

# theeluwin's loop: a shuffling DataLoader, Adam, the unigram^0.75 negatives and the uniform ones
for name, model_ in (("sgns", sgns), ("sgns uniform", sgns_uniform)):
    optim_ = optim.Adam(model_.parameters(), lr=0.05)
    dataloader = torch.utils.data.DataLoader(sgns_data, batch_size=BATCH, shuffle=True)
    for epoch in range(1, 4):
        for iword, owords_ in dataloader:
            loss = model_(iword, owords_)
            optim_.zero_grad()
            loss.backward()
            optim_.step()
        padding_row = model_.embedding.ivectors.weight[0]
        print(f"{name} epoch {epoch} loss {loss.item():.6f} padding row {padding_row.abs().sum().item()}")
idx2vec = sgns.embedding.ivectors.weight.data.cpu().numpy()
print("idx2vec", idx2vec.shape, idx2vec.dtype, f"{np.linalg.norm(idx2vec[1:], axis=1).mean():.6f}")
