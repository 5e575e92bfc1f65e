"""Functions the multiprocessing tests run in child processes (importable there without torch)."""

import sys


def put_square(rank: int, queue: object) -> None:
    """Send (rank, a leaf tensor of rank squared that requires grad) to the parent."""
    import retrograd

    queue.put((rank, (retrograd.tensor([float(rank)]) ** 2).requires_grad_()))


def fail_on(rank: int, bad_rank: int) -> None:
    if rank == bad_rank:
        raise ValueError(f"rank {rank} fails")


def exit_with(rank: int, code: int) -> None:
    sys.exit(code)


def double_in_place(inbox: object, outbox: object) -> None:
    """Double the tensor received, in place, and send it back."""
    tensor = inbox.get()
    tensor.mul_(2)
    outbox.put(tensor)
