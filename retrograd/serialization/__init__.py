"""retrograd.save / retrograd.load: torch's own file format, read without ever running the file's code by default.

What lives here:

- `_archive.py`: torch's zip container (Note [torch's zip layout]): the writer, and a reader that
  checks each record's size against the file before reading it.
- `_pickler.py`: pickles retrograd objects as torch pickles its own (torch's global names, one
  persistent id per storage, views sharing a storage).
- `_unpickler.py`: torch's weights_only rules (the default), the unrestricted unpickler
  (weights_only=False), and the allow-list of add_safe_globals / safe_globals.
- `_names.py`: torch's global names and the retrograd objects and rebuild functions behind them.
- `_legacy.py`: files in retrograd's earlier format (retrograd.json + .npy), still readable.

A file written by `torch.save` loads here without torch installed, and `torch.load(..., weights_only=True)`
reads what `save` writes. Damaged or hostile input raises an error that says what is wrong.
"""

from __future__ import annotations

import io
import os
import pickle
import tempfile
import zipfile
from typing import IO, Any

import numpy as np

from .._tensor import device
from .._xp import backend
from ._archive import ArchiveReader, ArchiveWriter, archive_name
from ._legacy import INDEX as LEGACY_INDEX
from ._legacy import load_legacy
from ._names import LoadedStorage, StorageType
from ._pickler import PROTOCOL, TorchPickler
from ._unpickler import (
    FullUnpickler,
    WeightsOnlyUnpickler,
    WeightsUnpicklerError,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
    weights_only_message,
)

FileLike = str | os.PathLike | IO[bytes]
LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C  # the first pickle of torch's pre-1.6 format
_ZIP_MAGIC = b"PK\x03\x04"
_CUDA_MESSAGE = ("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you "
                 "are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to "
                 "map your storages to the CPU.")


def save(obj: Any, f: FileLike, pickle_module: Any = pickle, pickle_protocol: int = PROTOCOL,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False) -> None:
    """Write `obj` as torch.save does (Note [torch's zip layout]); a path is replaced only once the file is whole.

    >>> retrograd.save(model.state_dict(), "model.pt")
    """
    if pickle_module is not pickle:
        raise ValueError("retrograd.save pickles with its own torch-compatible pickler; pickle_module is not supported")
    if not _use_new_zipfile_serialization:
        raise ValueError("retrograd.save writes torch's zip format only (_use_new_zipfile_serialization=True)")
    buffer = io.BytesIO()
    pickler = TorchPickler(buffer, pickle_protocol)
    try:
        pickler.dump(obj)
    except RecursionError:
        raise RuntimeError("retrograd.save: the object is nested too deeply to pickle (Python's recursion limit "
                           "was reached, as torch.save would reach it)") from None
    if not isinstance(f, (str, os.PathLike)):
        if not hasattr(f, "write"):
            raise AttributeError("expected 'f' to be string, path, or a file-like object with a 'write' attribute")
        if hasattr(f, "seekable") and f.seekable() and f.tell() == 0:
            _write_archive(f, "archive", buffer.getbuffer(), pickler, _disable_byteorder_record)
        else:
            stream = io.BytesIO()
            _write_archive(stream, "archive", buffer.getbuffer(), pickler, _disable_byteorder_record)
            f.write(stream.getbuffer())
        return
    path = os.fspath(f)
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise RuntimeError(f"Parent directory {os.path.dirname(path)} does not exist.")
    handle, temp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp",
                                    dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(handle, "wb") as stream:
            _write_archive(stream, archive_name(path), buffer.getbuffer(), pickler, _disable_byteorder_record)
        os.chmod(temp, 0o666 & ~_umask())
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_archive(stream: IO[bytes], name: str, pickled: memoryview, pickler: TorchPickler,
                   without_byteorder: bool) -> None:
    """torch's records in torch's order: data.pkl, format facts, byteorder, storages (then version and id)."""
    writer = ArchiveWriter(stream, name)
    writer.write("data.pkl", pickled)
    writer.write(".format_version", b"1")
    writer.write(".storage_alignment", b"64")
    if not without_byteorder:
        writer.write("byteorder", b"little")
    for storage in pickler.storages:
        flat = storage.flat.astype(storage.flat.dtype.newbyteorder("<"), copy=False)
        writer.write(f"data/{storage.key}", memoryview(np.ascontiguousarray(flat).view(np.uint8)))
    writer.close()


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *, weights_only: bool | None = None,
         mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Read a file written by torch.save or retrograd.save. By default (weights_only=True) only tensors,
    containers, numbers, strings and allowed globals are built, and no code from the file runs.

    >>> model.load_state_dict(retrograd.load("model.pt"))
    """
    weights_only = True if weights_only is None else bool(weights_only)
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if map_location is not None and not isinstance(map_location, (str, dict, device)) and not callable(map_location):
        raise TypeError(f"'{type(map_location).__name__}' object is not callable")  # torch calls what it cannot map by
    is_path = isinstance(f, (str, os.PathLike))
    if not is_path and not hasattr(f, "seek"):
        raise AttributeError(f"'{type(f).__name__}' object has no attribute 'seek'. You can only torch.load from a "
                             "file that is seekable. Please pre-load the data into a buffer like io.BytesIO and try "
                             "to load from it instead.")
    if mmap and not is_path:
        raise ValueError("f must be a file path in order to use the mmap argument")
    name = os.fspath(f) if is_path else getattr(f, "name", "<stream>")
    if is_path:
        with open(f, "rb") as handle:
            return _load_stream(handle, name, map_location, weights_only, name if mmap else None)
    if not (hasattr(f, "seekable") and f.seekable()):
        f = io.BytesIO(f.read())
    return _load_stream(f, name, map_location, weights_only, None)


def _load_stream(stream: IO[bytes], name: str, map_location: Any, weights_only: bool, mmap_path: str | None
                 ) -> Any:
    start = stream.tell()
    size = stream.seek(0, os.SEEK_END) - start
    stream.seek(start)
    head = stream.read(4)
    stream.seek(start)
    if not head:  # torch's unpickler runs out of input
        raise EOFError(f"retrograd.load: {name} is empty (nothing left to read from where it stands)")
    if head != _ZIP_MAGIC and head[:1] != pickle.PROTO:
        raise pickle.UnpicklingError(f"retrograd.load: {name} is not a file written by torch.save or retrograd.save "
                                     f"(it is neither a zip archive nor a pickle; it starts with {head!r})")
    try:
        if head == _ZIP_MAGIC:
            return _load_zip(stream, size, name, map_location, weights_only, mmap_path)
        return _load_plain_pickle(stream.read(), name, weights_only)
    except WeightsUnpicklerError as error:
        raise pickle.UnpicklingError(weights_only_message(str(error))) from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, pickle.UnpicklingError, EOFError, KeyError, IndexError,
            ValueError, TypeError, AttributeError, OverflowError, UnicodeDecodeError, OSError, RecursionError,
            NotImplementedError, MemoryError) as error:  # zipfile's NotImplementedError and RecursionError
        # are RuntimeErrors, but not ones that say what is wrong with the file
        raise RuntimeError(f"retrograd.load: {name} is corrupt or truncated ({type(error).__name__}: {error})"
                           ) from None


def _load_zip(stream: IO[bytes], size: int, name: str, map_location: Any, weights_only: bool,
              mmap_path: str | None) -> Any:
    archive = zipfile.ZipFile(stream)
    if LEGACY_INDEX in archive.NameToInfo:
        return load_legacy(archive, name)
    reader = ArchiveReader(archive, stream, size)
    if reader.has("byteorder") and reader.read("byteorder") not in (b"little", b"big"):
        raise RuntimeError(f"retrograd.load: {name} names an unknown byte order {reader.read('byteorder')!r}")
    byteorder = "<" if not reader.has("byteorder") or reader.read("byteorder") == b"little" else ">"
    storages: dict[str, LoadedStorage] = {}

    def persistent_load(pid: tuple) -> LoadedStorage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise RuntimeError(f"retrograd.load: {name} refers to an unknown persistent object {pid!r}")
        _, storage_type, key, location, numel = pid
        if not isinstance(storage_type, StorageType) or type(key) is not str or type(numel) is not int:
            raise RuntimeError(f"retrograd.load: {name} describes a storage as {pid!r}")
        where = _location(str(location), map_location)
        if key not in storages:
            storages[key] = _read_storage(reader, key, storage_type, numel, byteorder, name, mmap_path)
            storages[key].device = None if where == "cpu" else where
        return storages[key]

    data = reader.read("data.pkl")
    if weights_only:
        return WeightsOnlyUnpickler(data, persistent_load).load()
    return FullUnpickler(io.BytesIO(data), persistent_load).load()


def _read_storage(reader: ArchiveReader, key: str, storage_type: StorageType, numel: int, byteorder: str,
                  name: str, mmap_path: str | None) -> LoadedStorage:
    """Storage `key`, its claimed size checked against its record before anything is allocated.

    With mmap, the record is mapped copy-on-write (as torch maps it): writes stay in memory, and the
    bytes are read (without a CRC check, as in torch) only when touched.
    """
    itemsize = storage_type.dtype.itemsize
    record_size = reader.size(f"data/{key}")
    if numel < 0 or numel * itemsize != record_size:
        raise RuntimeError(f"retrograd.load: {name} is corrupt: storage {key} claims {numel} elements of "
                           f"{storage_type.dtype} ({numel * itemsize} bytes) but its record data/{key} holds "
                           f"{record_size} bytes")
    file_dtype = storage_type.dtype.np.newbyteorder(byteorder)
    if mmap_path is not None and numel:
        flat = np.memmap(mmap_path, file_dtype, mode="c", offset=reader.data_offset(f"data/{key}"), shape=(numel,))
    else:
        flat = np.frombuffer(bytearray(reader.read(f"data/{key}")), np.uint8).view(file_dtype)
    native = flat.astype(storage_type.dtype.np, copy=False)
    # NumPy keeps the file's dtype object when it equals the native one ('<bfloat16'), but retrograd tells bfloat16
    # and complex32 arrays by their dtype object's identity: the canonical object goes on the array
    return LoadedStorage(native if native.dtype is storage_type.dtype.np else native.view(storage_type.dtype.np))


def _location(location: str, map_location: Any) -> str:
    """Where a storage saved at `location` loads: its own device or map_location's. A CUDA storage needs CUDA
    (CuPy and a GPU) or a map_location to the CPU, as in torch.

    A callable map_location is accepted as mapping to the CPU.
    """
    if isinstance(map_location, dict):
        location = map_location.get(location, location)
    elif isinstance(map_location, (str, device)):
        location = str(device(map_location))
    elif map_location is not None and not callable(map_location):
        raise TypeError(f"map_location should be a string, a dict, a device or a callable, got "
                        f"{type(map_location).__name__}")
    elif callable(map_location):
        location = "cpu"
    if location.partition(":")[0] != "cpu" and backend(location.partition(":")[0]) is None:
        raise RuntimeError(_CUDA_MESSAGE)
    return location


def _load_plain_pickle(data: bytes, name: str, weights_only: bool) -> Any:
    """A file that is a bare pickle: torch's pre-1.6 format starts with its magic number; anything else is refused.

    The first pickle is read under the same rules as the rest, so a hostile one is refused before anything runs.
    """
    magic = WeightsOnlyUnpickler(data, _no_storage).load() if weights_only else pickle.loads(data)
    if magic == LEGACY_MAGIC_NUMBER:
        raise RuntimeError(f"retrograd.load: {name} is in torch's legacy format (before 1.6), which retrograd does "
                           "not read; re-save it with torch.save from a recent torch")
    raise RuntimeError("Invalid magic number; corrupt file?")


def _no_storage(pid: tuple) -> Any:
    raise RuntimeError("a plain pickle cannot refer to storages")


__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load", "safe_globals", "save"]
