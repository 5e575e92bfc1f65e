"""torch's zip container: the records `torch.save` writes and a reader that checks them before trusting them.

Note [torch's zip layout]
A torch 2.x file is an uncompressed zip whose entries all live under one folder, the archive name
(the file's name without its extension, or `archive` for a buffer)::

  <archive>/data.pkl               the object, pickled (protocol 2) with a persistent id per storage
  <archive>/.format_version        "1": storages are numbered 0, 1, 2, ... in the order first met
  <archive>/.storage_alignment     "64": each entry's bytes start at a multiple of 64 in the file
  <archive>/byteorder              "little"
  <archive>/data/<key>             one storage's raw bytes, little-endian
  <archive>/version                "3\n", the container format version
  <archive>/.data/serialization_id 40 digits naming this save

The alignment is bought with an extra field of id b"FB" filled with b"Z" in each local header,
which is what lets torch memory-map storages; zip readers skip it.
"""

from __future__ import annotations

import os
import random
import struct
import zipfile
import zlib
from typing import IO

ALIGNMENT = 64
CONTAINER_VERSION = b"3\n"
_LOCAL_HEADER_SIZE = 30
_PADDING_ID = b"FB"


class ArchiveWriter:
    """Writes torch's records, in torch's order, to a seekable binary stream."""

    def __init__(self, stream: IO[bytes], name: str) -> None:
        self._zip = zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_STORED, allowZip64=True)
        self._stream = stream
        self._name = name
        self._crcs: list[int] = []

    def write(self, record: str, data: bytes | memoryview) -> None:
        """Store `data` as `<archive>/<record>`, its bytes starting at a multiple of ALIGNMENT."""
        info = zipfile.ZipInfo(f"{self._name}/{record}")
        info.compress_type = zipfile.ZIP_STORED
        data_start = self._stream.tell() + _LOCAL_HEADER_SIZE + len(info.filename.encode("utf-8")) + 4
        info.extra = _PADDING_ID + struct.pack("<H", -data_start % ALIGNMENT) + b"Z" * (-data_start % ALIGNMENT)
        self._zip.writestr(info, data)
        self._crcs.append(zlib.crc32(data))

    def close(self) -> None:
        """Write the trailing records (as torch does when its writer closes) and the zip directory."""
        self.write("version", CONTAINER_VERSION)
        combined = 0
        for crc in self._crcs:
            combined = zlib.crc32(crc.to_bytes(4, "little"), combined)
        self.write(".data/serialization_id", f"{random.getrandbits(64):020d}{combined:020d}".encode())
        self._zip.close()


def archive_name(f: str | os.PathLike | IO[bytes]) -> str:
    """The folder torch puts the records in: the file's base name without its extension, else `archive`."""
    if isinstance(f, (str, os.PathLike)):
        base = os.path.basename(os.fspath(f))
        return os.path.splitext(base)[0] or "archive"
    return "archive"


class ArchiveReader:
    """The records of a torch zip, each checked against the real file before it is read.

    A record's claimed size must fit inside the file, entries must be stored uncompressed (torch
    never compresses, and a compressed entry could claim any size), and zipfile checks each CRC.
    """

    def __init__(self, archive: zipfile.ZipFile, stream: IO[bytes], file_size: int) -> None:
        pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise RuntimeError("the zip archive holds no <archive>/data.pkl record, so it was not written by "
                               "torch.save or retrograd.save")
        self.prefix = pickles[0][: -len("data.pkl")]
        self._zip = archive
        self._stream = stream
        self._file_size = file_size

    def has(self, record: str) -> bool:
        return self.prefix + record in self._zip.NameToInfo

    def size(self, record: str) -> int:
        """The length of a record, as checked against the file (RuntimeError if it is missing or impossible)."""
        info = self._zip.NameToInfo.get(self.prefix + record)
        if info is None:
            raise RuntimeError(f"the archive has no record {self.prefix + record}")
        if info.compress_type != zipfile.ZIP_STORED:
            raise RuntimeError(f"record {info.filename} is compressed; torch.save files store records uncompressed")
        if info.header_offset + info.file_size > self._file_size:
            raise RuntimeError(f"record {info.filename} claims {info.file_size} bytes, more than the "
                               f"{self._file_size}-byte file holds: the file is truncated or corrupt")
        return info.file_size

    def read(self, record: str) -> bytes:
        self.size(record)
        return self._zip.read(self.prefix + record)

    def data_offset(self, record: str) -> int:
        """Where a stored record's bytes start in the file (after its local header), for memory-mapping."""
        size = self.size(record)
        info = self._zip.NameToInfo[self.prefix + record]
        self._stream.seek(info.header_offset)
        header = self._stream.read(_LOCAL_HEADER_SIZE)
        if len(header) != _LOCAL_HEADER_SIZE or header[:4] != b"PK\x03\x04":
            raise RuntimeError(f"record {info.filename} has no local header where the zip directory says")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        start = info.header_offset + _LOCAL_HEADER_SIZE + name_length + extra_length
        if start + size > self._file_size:
            raise RuntimeError(f"record {info.filename} runs past the end of the file: the file is truncated")
        return start
