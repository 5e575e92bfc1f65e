"""torch.nn.utils.rnn: padding and packing batches of variable-length sequences (PackedSequence).

A PackedSequence holds, step after step, the elements of the sequences still running at that step, the
longest first (Note [packed sequences] in ops/nn_extra.py); the recurrent layers take it as input. Packing is
one op row (PackPaddedSequenceBackward0); padding is a tensor of padding_value written by slices (CopySlices),
as in torch, so the gradients flow as torch's do.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from ... import _VF
from ... import _creation as C
from ... import _dtype as D
from ..._tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence_(NamedTuple):  # noqa: N801 - torch's name
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """The packed steps of a batch of sequences (data), how many sequences each step holds (batch_sizes), and the
    permutation that sorted the batch by length (sorted_indices) and its inverse (unsorted_indices)."""

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """data converted as Tensor.to converts it (the indices follow its device); self when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices, unsorted_indices = (None if t is None else t.to(data.device)
                                            for t in (self.sorted_indices, self.unsorted_indices))
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self.to("cuda", *args, **kwargs)

    def double(self) -> PackedSequence:
        return self.to(dtype=D.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=D.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=D.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=D.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=D.int32)

    def short(self) -> PackedSequence:
        return self.to(dtype=D.int16)

    def char(self) -> PackedSequence:
        return self.to(dtype=D.int8)

    def byte(self) -> PackedSequence:
        return self.to(dtype=D.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes `permutation` (None stays None)."""
    if permutation is None:
        return None
    output = C.empty_like(permutation)
    output.scatter_(0, permutation, C.arange(0, permutation.numel()))
    return output


def pack_padded_sequence(input: Tensor, lengths: Tensor | list[int], batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded ``(T, B, *)`` batch (``(B, T, *)`` if batch_first) whose sequences have the given lengths;
    enforce_sorted=False sorts them by length first (and remembers how).

    >>> pack_padded_sequence(retrograd.tensor([[1, 2], [3, 0]]), [2, 1], batch_first=True).data
    tensor([1, 3, 2])
    """
    if not isinstance(lengths, Tensor):
        lengths = C.tensor(lengths, dtype=D.int64)
    else:
        lengths = lengths.to(dtype=D.int64)
    sorted_indices = None
    if not enforce_sorted:
        lengths, sorted_indices = lengths.sort(descending=True)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _VF._pack_padded_sequence(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """Undo pack_padded_sequence: the padded batch in its original order and each sequence's length."""
    max_seq_length = sequence.batch_sizes.size(0)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {max_seq_length}")
        max_seq_length = total_length
    padded, lengths = _VF._pad_packed_sequence(sequence.data, sequence.batch_sizes, batch_first, padding_value,
                                               max_seq_length)
    if sequence.unsorted_indices is not None:
        return padded.index_select(0 if batch_first else 1, sequence.unsorted_indices), \
            lengths[sequence.unsorted_indices]
    return padded, lengths


def pad_sequence(sequences: Tensor | list[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of shape ``(L_i, *)`` into one ``(L_max, B, *)`` tensor (``(B, L_max, *)`` if
    batch_first), filling
    with padding_value on the `padding_side`.

    >>> pad_sequence([retrograd.tensor([1, 2]), retrograd.tensor([3])], batch_first=True)
    tensor([[1, 2],
            [3, 0]])
    """
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    first = sequences[0]
    longest = max(s.size(0) for s in sequences)
    shape = (len(sequences), longest) if batch_first else (longest, len(sequences))
    out = C.full((*shape, *first.shape[1:]), padding_value, dtype=first.dtype)
    for i, seq in enumerate(sequences):
        length = seq.size(0)
        steps = slice(0, length) if padding_side == "right" else slice(longest - length, longest)
        out[(i, steps) if batch_first else (steps, i)] = seq
    return out


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False) -> list[Tensor]:
    """Split a padded batch back into its sequences (as torch, a time-major input is transposed in place)."""
    if not batch_first:
        padded_sequences.transpose_(0, 1)
    steps = C.arange(padded_sequences.shape[1])
    return [seq[steps < length] for seq, length in zip(padded_sequences, lengths, strict=True)]


def pack_sequence(sequences: list[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences of shape ``(L_i, *)`` (longest first unless enforce_sorted=False)."""
    lengths = C.tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a PackedSequence holds, in their original order."""
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
