"""torch.multiprocessing.spawn: run `fn(i, *args)` in nprocs processes and report the first that fails.

A child that raises writes its formatted traceback to its own temporary file and exits with 1; the
parent, joining, stops the others and raises ProcessRaisedException carrying that traceback (or
ProcessExitedException for a child that died without one), in torch's words.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from typing import NoReturn


class ProcessException(Exception):  # noqa: N818 - torch's name
    """A spawned process failed: which one (error_index) and its pid."""

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self) -> tuple:
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised: the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code or was killed by a signal, without a traceback."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self) -> tuple:
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _wrap(fn: Callable, i: int, args: tuple, error_file: str) -> None:
    """The child's entry point: fn(i, *args); an exception's traceback goes to error_file."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # stopped by the parent
    except Exception:
        with open(error_file, "wb") as f:
            pickle.dump(traceback.format_exc(), f)
        sys.exit(1)


class ProcessContext:
    """The processes start_processes started, for join() when join=False."""

    def __init__(self, processes: list, error_files: list[str]) -> None:
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(process.pid) for process in self.processes]

    def _join_procs_with_timeout(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.0, end - time.monotonic()))

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait for processes to end: True when all have ended well, False if some still run after `timeout`;
        when one failed, stop the others (after `grace_period`) and raise its error."""
        if not self.sentinels:
            return True
        failed = None
        for sentinel in multiprocessing.connection.wait(list(self.sentinels), timeout=timeout):
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0:
                failed = index
                break
        if failed is None:
            return not self.sentinels
        if grace_period is not None:
            self._join_procs_with_timeout(grace_period)
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        self._join_procs_with_timeout(30 if grace_period is None else grace_period)
        for process in self.processes:
            if process.is_alive():
                process.kill()
            process.join()
        self._raise(failed)

    def _raise(self, index: int) -> NoReturn:
        """Raise what process `index` failed with, as torch words it."""
        process = self.processes[index]
        if not os.access(self.error_files[index], os.R_OK):
            code = process.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(f"process {index:d} terminated with signal {name}", error_index=index,
                                             error_pid=process.pid, exit_code=code, signal_name=name)
            raise ProcessExitedException(f"process {index:d} terminated with exit code {code:d}", error_index=index,
                                         error_pid=process.pid, exit_code=code)
        with open(self.error_files[index], "rb") as f:
            original_trace = pickle.load(f)
        raise ProcessRaisedException(f"\n\n-- Process {index:d} terminated with the following error:\n{original_trace}",
                                     index, process.pid)


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn") -> ProcessContext | None:
    """Start `fn(i, *args)` for i in range(nprocs) with `start_method`; join them unless join=False (then the
    ProcessContext is returned)."""
    context = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        # a file per process for its traceback: its existence says the process raised
        descriptor, error_file = tempfile.mkstemp(prefix="retrograd-errorfile-", suffix=".pickle")
        os.close(descriptor)
        os.unlink(error_file)
        process = context.Process(target=_wrap, args=(fn, i, args, error_file), daemon=daemon)
        process.start()
        processes.append(process)
        error_files.append(error_file)
    result = ProcessContext(processes, error_files)
    if not join:
        return result
    while not result.join():
        pass
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn") -> ProcessContext | None:
    """Run `fn(i, *args)` in nprocs new processes started by "spawn" (start_processes for another start method)."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t torch.multiprocessing.start_processes(...)",
                      FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
