"""Plain data between a submission's process and the grader: JSON, with arrays as raw bytes.

The grader never unpickles anything a submission produced: a value crosses the boundary as JSON
whose only non-JSON parts are numeric arrays, sent as ``{"array": dtype, "shape", "data"}``
(base64 of the C-ordered bytes) and rebuilt with ``numpy.frombuffer`` for a fixed set of dtypes.
Tensors come back as tensors, tuples as tuples; any other object becomes an :class:`Opaque`
carrying only its type's name (so "should return a torch.Tensor, got Foo" still reads).

A line holds at most ``MAX_VALUES`` values, counted on its raw bytes before it is parsed
(:func:`loads`): parsing and decoding then cost a bounded amount of memory, a few hundred bytes
per value and a few times the bytes of each array, whatever a worker sends (one class built per
object made a 10 MB reply of 500,000 objects cost 1.3 GiB and two minutes).
"""

import base64
import json
import math

import numpy as np
import torch

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
DTYPES += ("complex64", "complex128")
MAX_DEPTH = 20
MAX_VALUES = 200_000  # values in one line; an honest reply holds a few dozen (tensors are one)


class Opaque:
    """Stands in for an object that is not plain data; only its type name crossed. One small
    instance per object (no class per object: a class costs about 1 KB)."""

    __slots__ = ("type_name",)

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name} object>"


def _opaque(type_name: str) -> Opaque:
    name = "".join(c for c in str(type_name) if c.isidentifier() or c.isalnum())[:80] or "object"
    return Opaque(name)


def type_name(value) -> str:
    """The type name of a decoded value: an :class:`Opaque`'s own, else its class's."""
    return value.type_name if isinstance(value, Opaque) else type(value).__name__


def encode(value, depth: int = 0):
    """``value`` as JSON-ready plain data (tensors and numpy arrays as base64 bytes)."""
    if depth > MAX_DEPTH:
        return {"opaque": "deeply nested value"}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return {"float": repr(value)}  # keeps nan, inf and every bit of the value
    if isinstance(value, torch.Tensor):
        array = value.detach().cpu().resolve_conj().resolve_neg().contiguous().numpy()
        return {"tensor": _array(array)}
    if isinstance(value, np.ndarray) and value.dtype.name in DTYPES:
        return {"ndarray": _array(value)}
    if isinstance(value, np.generic) and value.dtype.name in DTYPES:
        return encode(value.item(), depth)
    if isinstance(value, (tuple, list)):
        key = "tuple" if isinstance(value, tuple) else "list"
        return {key: [encode(v, depth + 1) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode(v, depth + 1) for k, v in value.items()}}
    return {"opaque": type(value).__name__}


def _array(array: np.ndarray) -> dict:
    array = np.array(array, order="C", copy=True)  # ascontiguousarray would make 0-d 1-d
    data = base64.b64encode(array.tobytes()).decode("ascii")
    return {"dtype": array.dtype.name, "shape": list(array.shape), "data": data}


def decode(data, depth: int = 0):
    """The value ``encode`` produced; ValueError for anything else (checked field by field)."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if data is None or isinstance(data, (bool, int, str)):
        return data
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError(f"not plain data: {type(data).__name__}")
    ((kind, body),) = data.items()
    if kind == "float":
        if not isinstance(body, str):
            raise ValueError("a float must be sent as its repr")
        return float(body)
    if kind in ("tensor", "ndarray"):
        array = _from_array(body)
        return torch.from_numpy(array) if kind == "tensor" else array
    if kind in ("tuple", "list") and isinstance(body, list):
        items = [decode(v, depth + 1) for v in body]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict" and isinstance(body, dict):
        return {str(k): decode(v, depth + 1) for k, v in body.items()}
    if kind == "opaque":
        return _opaque(body)
    raise ValueError(f"not plain data: {kind!r}")


def _from_array(body) -> np.ndarray:
    if not isinstance(body, dict) or body.get("dtype") not in DTYPES:
        raise ValueError("array without an allowed dtype")
    shape = body.get("shape")
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ValueError("array without a valid shape")
    raw = base64.b64decode(str(body.get("data", "")), validate=True)
    array = np.frombuffer(raw, dtype=body["dtype"])
    if array.size != math.prod(shape):
        raise ValueError("array size does not match its shape")
    array = array.reshape(shape).copy()  # writable, owned by the grader
    return array != 0 if array.dtype == np.bool_ else array  # any byte as a bool is 0 or 1


def dumps(message: dict) -> bytes:
    """One protocol line."""
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def values_at_most(line: bytes) -> int:
    """An upper bound of the values a JSON line holds, read off its raw bytes: each value but
    the first follows a ``,`` (next item), a ``:`` (a key's value) or a ``[`` (first item).
    Those bytes inside strings count too, so it never undercounts."""
    return 1 + line.count(b",") + line.count(b":") + line.count(b"[")


def loads(line: bytes) -> dict:
    """One protocol line back; ValueError unless it is a JSON object of at most MAX_VALUES values
    (nested too deeply for the parser included: a worker's line is untrusted data)."""
    if (count := values_at_most(line)) > MAX_VALUES:
        raise ValueError(f"it holds up to {count:,} values in {len(line):,} bytes; a reply may "
                         f"hold at most {MAX_VALUES:,} (return tensors, not many small "
                         "objects)")  # fmt: skip
    try:
        message = json.loads(line)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(message, dict):
        raise ValueError("a protocol line must be a JSON object")
    return message
