"""The .hpm container both model formats share (Sources/HotPhrase/ModelFile.swift reads it): b"HPM1", a
little-endian u32 header length, a JSON header whose "tensors" table gives each tensor's dtype, shape and offset
into the payload that follows.
"""
import json
import struct

import numpy as np

from .errors import HotPhraseError

MAGIC = b"HPM1"


def split(path):
    """(header dict, payload bytes)."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:4] != MAGIC:
        raise HotPhraseError(path, "not a hot-phrase model (it does not start with HPM1)")
    (n,) = struct.unpack("<I", raw[4:8])
    if 8 + n > len(raw):
        raise HotPhraseError(path, f"header length {n} runs past the end of the file ({len(raw)} bytes)")
    try:
        return json.loads(raw[8:8 + n]), raw[8 + n:]
    except ValueError as e:
        raise HotPhraseError(path, f"the header is not JSON ({e})") from None


def write(path, header, payload):
    hj = json.dumps(header, indent=1, sort_keys=True).encode()
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack("<I", len(hj)) + hj + payload)


def read(path):
    """(header, dict of float32 arrays): float16 widened, int8 dequantised with its per-row scales, as the Swift
    loader does."""
    header, payload = split(path)
    tensors = {}
    for t in header["tensors"]:
        shape, count = t["shape"], int(np.prod(t["shape"]))
        if t["dtype"] == "int8":
            q = np.frombuffer(payload, "i1", count, t["offset"]).reshape(shape).astype(np.float32)
            s = np.frombuffer(payload, "<f4", shape[0], t["scale_offset"])
            a = q * s.reshape((-1,) + (1,) * (len(shape) - 1))
        else:
            a = np.frombuffer(payload, "<f2" if t["dtype"] == "float16" else "<f4", count, t["offset"]).reshape(shape)
        tensors[t["name"]] = a.astype(np.float32)
    return header, tensors


def update_header(path, fields):
    """Rewrites the JSON header with `fields` merged in (tensor offsets are relative to the payload, so the
    header may change length)."""
    header, payload = split(path)
    header.update(fields)
    write(path, header, payload)
