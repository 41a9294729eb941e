"""The messages between the checker and the process that runs the learner's code.

The checker (the process that runs :func:`learning.check.runner.check_exercise`) never imports
the learner's files. It sends requests ("import module M and call F with these arguments") to
a worker process over a pair of pipes of their own, and reads replies. Everything in a reply
is *data the learner's code could have written*: the worker's own code runs in the learner's
process, where anything can be patched. So a reply is decoded as untrusted data:

* a frame is an 8-byte length and a payload; a payload past :data:`MAX_REPLY_BYTES` is refused
  before it is read;
* the payload is read with ``torch.load(..., weights_only=True)``, which builds tensors,
  numbers, strings, lists, tuples and dicts and never runs pickled code;
* :func:`validate` then accepts only those types (plain CPU tensors of the course's dtypes, of
  bounded size), to a bounded depth and node count; anything else is a :class:`BadReply`.

Values that are not plain data travel *tagged* (``{"__remote__": kind, ...}``) and come back
as stand-ins made here: a ``torch.dtype`` from a fixed table, a numpy scalar of an allowed
type, a :class:`RemoteObject` (a named tuple, a dataclass, any other object: its type's name,
fields and ``repr``), or an exception of a built-in class carrying the learner's type name,
message and the line of the learner's file it came from (:func:`revive_error`). None of these
runs learner code on the checker's side.

This module is loaded by the worker too (by file path, see :mod:`learning.check.worker`), so
it imports nothing from ``learning``: the worker's side of the wire is :func:`to_plain`,
:func:`describe_error` and the framing functions.
"""

from __future__ import annotations

import builtins
import dataclasses
import io
import os
import select
import signal
import struct
import time
import traceback
from pathlib import Path
from typing import Any

# A worker asked what it is running before it is stopped for taking too long: the signal the
# checker sends, and the prefix of the one line the worker writes to its log in answer.
WHERE_SIGNAL = signal.SIGUSR1
WHERE_PREFIX = "still running: "

TAG = "__remote__"
HEADER = struct.Struct(">Q")
MAX_REPLY_BYTES = 256 * 2**20
MAX_DEPTH = 24
MAX_NODES = 200_000
MAX_TENSOR_ELEMENTS = 2**27
MAX_TEXT = 1_000_000
TEXT_SHOWN = 2_000  # characters of a repr or an error message kept
TENSOR_DTYPES = (
    "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
    "bool",
)  # fmt: skip
NUMPY_SCALARS = (
    "bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
)  # fmt: skip


class BadReply(Exception):
    """A reply that is not what the protocol allows; the message says what was wrong."""


class ChannelClosed(Exception):
    """The other end closed its pipe (the process ended) before a whole frame came."""


class FrameTimeout(Exception):
    """No whole frame within the time allowed."""


# --------------------------------------------------------------------------- framing


def write_frame(fd: int, payload: bytes, deadline: float | None = None) -> None:
    """Send one frame; ``deadline`` (a ``time.monotonic()`` value) bounds a reader that stalls."""
    data = memoryview(HEADER.pack(len(payload)) + payload)
    while data:
        if deadline is not None:
            _wait(fd, "write", deadline)
        try:
            written = os.write(fd, data[: 1 << 20])
        except BrokenPipeError:
            raise ChannelClosed("the other end closed its pipe") from None
        data = data[written:]


def read_frame(fd: int, deadline: float | None = None, limit: int | None = None) -> bytes:
    """Read one frame; :class:`BadReply` for a length past ``limit``, before reading it."""
    (length,) = HEADER.unpack(_read_exactly(fd, HEADER.size, deadline))
    if limit is not None and length > limit:
        raise BadReply(f"a reply of {length} bytes, more than the {limit} allowed")
    return _read_exactly(fd, length, deadline)


def _read_exactly(fd: int, count: int, deadline: float | None) -> bytes:
    chunks, remaining = [], count
    while remaining:
        if deadline is not None:
            _wait(fd, "read", deadline)
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise ChannelClosed("the other end closed its pipe")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _wait(fd: int, direction: str, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise FrameTimeout
    readable, writable, _ = select.select(
        [fd] if direction == "read" else [], [fd] if direction == "write" else [], [], left
    )
    if not readable and not writable:
        raise FrameTimeout


def dumps(message: Any) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(message, buffer)
    return buffer.getvalue()


def loads(payload: bytes) -> Any:
    """Decode a payload as untrusted data (``weights_only``), then :func:`validate` it."""
    import torch

    try:
        message = torch.load(io.BytesIO(payload), weights_only=True, map_location="cpu")
    except Exception as error:  # any malformed payload: the reply is refused, whatever it was
        raise BadReply(f"the reply could not be decoded ({type(error).__name__})") from None
    validate(message)
    return message


def requests(requests_fd: int, replies_fd: int):
    """A worker's side of the pipes, as a generator: announce readiness, then yield each
    request and send back the reply the caller sends in (``channel.send(reply)``), until the
    pipe closes. The caller's own frame, not this module's, is the one on the stack while it
    handles a request (a suspended generator is not on the stack)."""
    import sys

    import torch

    write_frame(replies_fd, dumps({"ready": True, "pid": os.getpid()}))
    while True:
        try:
            payload = read_frame(requests_fd)
        except ChannelClosed:
            return
        reply = yield torch.load(io.BytesIO(payload), weights_only=True)
        sys.stdout.flush()
        sys.stderr.flush()
        write_frame(replies_fd, dumps(reply))


def serve(requests_fd: int, replies_fd: int, handle, describe) -> None:
    """Answer requests until the pipe closes: ``handle(request)`` makes the reply; an exception
    it raises (``SystemExit`` too) is answered ``{"ok": False, "error": describe(error,
    request)}``."""
    channel = requests(requests_fd, replies_fd)
    request = next(channel, None)
    while request is not None:
        try:
            reply = handle(request)
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # the code the request ran raised (SystemExit too)
            reply = {"ok": False, "error": describe(error, request)}
        request = next_request(channel, reply)


def next_request(channel, reply: dict):
    """Send ``reply`` on ``channel`` (:func:`requests`); the next request, None at the end."""
    try:
        return channel.send(reply)
    except StopIteration:
        return None


# --------------------------------------------------------------------------- the checker's side


def validate(message: Any) -> None:
    """Refuse anything but plain data: see the module docstring."""
    import torch

    nodes = 0
    stack = [(message, 0)]
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise BadReply(f"the reply holds more than {MAX_NODES} values")
        if depth > MAX_DEPTH:
            raise BadReply(f"the reply is nested more than {MAX_DEPTH} deep")
        kind = type(value)
        if value is None or kind in (bool, int, float):
            continue
        if kind is str:
            if len(value) > MAX_TEXT:
                raise BadReply(f"the reply holds a string of {len(value)} characters")
            continue
        if kind in (list, tuple):
            stack.extend((item, depth + 1) for item in value)
            continue
        if kind is dict:
            for key, item in value.items():
                if type(key) is not str:
                    raise BadReply("the reply holds a dict whose key is not a string")
                stack.append((item, depth + 1))
            continue
        if kind is torch.Tensor:
            _validate_tensor(value)
            continue
        raise BadReply(f"the reply holds a {kind.__name__}, which the protocol does not allow")


def _validate_tensor(tensor) -> None:
    import torch

    if tensor.layout is not torch.strided or tensor.device.type != "cpu":
        raise BadReply("the reply holds a tensor that is not a plain CPU tensor")
    if str(tensor.dtype).removeprefix("torch.") not in TENSOR_DTYPES:
        raise BadReply(f"the reply holds a tensor of dtype {tensor.dtype}")
    if tensor.numel() > MAX_TENSOR_ELEMENTS or tensor.requires_grad:
        raise BadReply("the reply holds a tensor too large, or one that requires grad")


class RemoteObject:
    """A value the learner's code returned that is not plain data, as the checker sees it.

    Its class is made here, named after the learner's type (``type(got).__name__`` reads
    ``Spread``), with the fields the worker read (``got.median_ms``), the items of a tuple
    (``tuple(got)``) and the text its ``repr`` gave. Equality with a dataclass or a named tuple
    compares the type's name and the fields.
    """

    def __init__(self, module: str, fields: dict, items: tuple | None, text: str):
        self._module = module
        self._fields = fields
        self._items = items
        self._text = text

    def __getattr__(self, name: str) -> Any:
        fields = self.__dict__.get("_fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __iter__(self):
        if self._items is None:
            raise TypeError(f"{type(self).__name__!r} object is not iterable")
        return iter(self._items)

    def __len__(self) -> int:
        if self._items is None:
            raise TypeError(f"object of type {type(self).__name__!r} has no len()")
        return len(self._items)

    def __getitem__(self, index):
        if self._items is None:
            raise TypeError(f"{type(self).__name__!r} object is not subscriptable")
        return self._items[index]

    def __repr__(self) -> str:
        return self._text

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RemoteObject):
            return type(other).__name__ == type(self).__name__ and other._fields == self._fields
        if dataclasses.is_dataclass(other) and not isinstance(other, type):
            theirs = {f.name: getattr(other, f.name) for f in dataclasses.fields(other)}
        elif isinstance(other, tuple) and hasattr(type(other), "_fields"):
            theirs = dict(zip(type(other)._fields, other, strict=True))
        else:
            return NotImplemented
        return type(other).__name__ == type(self).__name__ and theirs == self._fields

    __hash__ = None


def _named_class(name: str, bases: tuple[type, ...]) -> type:
    shown = name if name.isidentifier() else "object"
    return type(shown, bases, {"__module__": "learner"})


def revive(value: Any, make_object=None) -> Any:
    """The checker-side stand-in for a :func:`to_plain` value (run :func:`validate` first).

    ``make_object(module, type_name, fields)`` may build a tagged object as itself (the
    worker does, for the checker's own dataclasses passed as arguments); None declines."""
    import numpy as np
    import torch

    def again(item):
        return revive(item, make_object)

    if type(value) is list:
        return [again(item) for item in value]
    if type(value) is tuple:
        return tuple(again(item) for item in value)
    if type(value) is not dict:
        return value
    kind = value.get(TAG)
    if kind == "dict":
        return {again(k): again(v) for k, v in _pairs(value.get("items"))}
    if kind == "dtype":
        name = value.get("name")
        dtype = getattr(torch, name, None) if isinstance(name, str) else None
        if not isinstance(dtype, torch.dtype):
            raise BadReply(f"the reply names an unknown dtype {name!r}")
        return dtype
    if kind == "numpy":
        name, item = value.get("type"), value.get("value")
        if name not in NUMPY_SCALARS or type(item) not in (bool, int, float):
            raise BadReply(f"the reply holds a numpy {name!r} the protocol does not allow")
        return getattr(np, name)(item)
    if kind == "tensor":  # a tensor subclass: the values, under a class of the learner's name
        data = value.get("data")
        if type(data) is not torch.Tensor:
            raise BadReply("a tensor subclass without its values")
        return data.as_subclass(_named_class(str(value.get("type")), (torch.Tensor,)))
    if kind == "object":
        fields = {str(k): again(v) for k, v in _pairs(value.get("fields"))}
        made = make_object and make_object(str(value.get("module")), str(value.get("type")), fields)
        if made is not None:
            return made
        items = value.get("items")
        items = tuple(again(item) for item in items) if type(items) is list else None
        cls = _named_class(str(value.get("type")), (RemoteObject,))
        return cls(str(value.get("module")), fields, items, str(value.get("text"))[:TEXT_SHOWN])
    raise BadReply(f"the reply holds a dict tagged {kind!r}")


def _pairs(items: Any) -> list:
    if type(items) is not list or not all(type(p) is tuple and len(p) == 2 for p in items):
        raise BadReply("a tagged mapping whose items are not (key, value) pairs")
    return items


@dataclasses.dataclass(frozen=True)
class LearnerFrame:
    """Where in the learner's files an error was raised (the deepest such frame)."""

    path: str  # as messages show it: relative to the repository when inside it
    line: int
    function: str
    text: str


def revive_error(info: Any) -> BaseException:
    """An exception of the nearest built-in class, named and worded as the learner's was.

    It carries ``learner_frame`` (a :class:`LearnerFrame` or None) and ``not_implemented``
    (the error or one it came from was a NotImplementedError)."""
    if type(info) is not dict:
        raise BadReply("an error reply without its description")
    name = str(info.get("type", "Exception"))
    message = str(info.get("message", ""))[:TEXT_SHOWN]
    bases = info.get("bases") if type(info.get("bases")) is list else []
    error = None
    for base_name in [*map(str, bases), "Exception"]:
        base = getattr(builtins, base_name, None)
        if not (isinstance(base, type) and issubclass(base, BaseException)):
            continue
        if issubclass(base, KeyboardInterrupt | GeneratorExit):
            continue
        cls = _named_class(name, (base,))
        cls.__str__ = lambda self, text=message: text
        try:
            error = _construct(cls, base, message, info)
        except Exception:  # a built-in whose constructor wants other arguments: try the next
            continue
        break
    frame = info.get("frame")
    error.learner_frame = None
    if type(frame) is dict:
        error.learner_frame = LearnerFrame(
            str(frame.get("path", "?")), _int(frame.get("line")), str(frame.get("function", "?")),
            str(frame.get("text", ""))[:TEXT_SHOWN],
        )  # fmt: skip
    error.not_implemented = info.get("not_implemented") is True
    return error


def _construct(cls: type, base: type, message: str, info: dict) -> BaseException:
    if issubclass(base, SyntaxError):
        syntax = info.get("syntax") if type(info.get("syntax")) is dict else {}
        details = (
            str(syntax.get("filename") or ""), _int(syntax.get("lineno")),
            _int(syntax.get("offset")), str(syntax.get("text") or ""),
        )  # fmt: skip
        return cls(str(syntax.get("msg") or message), details)
    error = cls(message)
    if issubclass(base, ImportError):
        error.name = info.get("name") if type(info.get("name")) is str else None
    return error


def _int(value: Any) -> int:
    return value if type(value) is int else 0


# --------------------------------------------------------------------------- the worker's side


def to_plain(value: Any, *, depth: int = 0, copy: bool = True) -> Any:
    """``value`` as plain data :func:`validate` accepts.

    Tensors become detached CPU copies of their elements; with ``copy=False`` (the checker's
    requests) they go as they are, views of their whole storage, so that the worker receives
    the layout the checker made (guard regions, row padding)."""
    import torch

    def again(item):
        return to_plain(item, depth=depth + 1, copy=copy)

    if depth > MAX_DEPTH:
        return _object(value, fields={})
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if isinstance(value, torch.dtype):
        return {TAG: "dtype", "name": str(value).removeprefix("torch.")}
    if isinstance(value, torch.Tensor):
        data = value.detach().as_subclass(torch.Tensor)
        data = data.cpu().clone() if copy else data
        if kind is torch.Tensor:
            return data
        return {TAG: "tensor", "type": kind.__name__, "data": data}
    if kind.__module__ == "numpy" and kind.__name__ in NUMPY_SCALARS:
        return {TAG: "numpy", "type": kind.__name__, "value": value.item()}
    if isinstance(value, bool | int | float | str) and not isinstance(value, tuple):
        base = next(t for t in (bool, int, float, str) if isinstance(value, t))
        return base(value)
    if kind in (list, tuple):
        return kind(again(item) for item in value)
    if kind is dict:
        return {TAG: "dict", "items": [(again(k), again(v)) for k, v in value.items()]}
    if isinstance(value, tuple) and hasattr(kind, "_fields"):
        fields = dict(zip(kind._fields, value, strict=False))
        return _object(value, fields, items=[again(v) for v in value], depth=depth)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return _object(value, fields, depth=depth)
    return _object(value, fields={})


def _object(value: Any, fields: dict, items: list | None = None, depth: int = 0) -> dict:
    kind = type(value)
    plain = [(str(k), to_plain(v, depth=depth + 1)) for k, v in fields.items()]
    return {TAG: "object", "type": kind.__name__, "module": str(kind.__module__),
            "fields": plain, "items": items, "text": safe_text(repr, value)}  # fmt: skip


def safe_text(show, value: Any) -> str:
    try:
        return str(show(value))[:TEXT_SHOWN]
    except Exception as error:  # a __repr__ that raises: say so rather than fail the reply
        return f"<{type(value).__name__}: its {show.__name__} raised {type(error).__name__}>"


def describe_error(error: BaseException, package_root: Path, repo_root: Path) -> dict:
    """What :func:`revive_error` needs: type, built-in bases, message, the learner's frame."""
    info = {
        "type": type(error).__name__,
        "bases": [c.__name__ for c in type(error).__mro__ if c.__module__ == "builtins"],
        "message": safe_text(str, error),
        "frame": _learner_frame(error, package_root, repo_root),
        "not_implemented": _not_implemented(error),
    }
    if isinstance(error, SyntaxError):
        info["syntax"] = {
            "filename": _shown(error.filename, repo_root) if error.filename else None,
            "lineno": error.lineno, "offset": error.offset, "text": error.text,
            "msg": error.msg,
        }  # fmt: skip
    if isinstance(error, ImportError):
        info["name"] = error.name
    return info


def _not_implemented(error: BaseException | None) -> bool:
    seen = 0
    while error is not None and seen < 20:
        if isinstance(error, NotImplementedError) or "NotImplementedError" in safe_text(str, error):
            return True
        error = error.__cause__ or error.__context__
        seen += 1
    return False


def _learner_frame(error: BaseException, package_root: Path, repo_root: Path) -> dict | None:
    root = package_root.resolve()
    try:
        frames = traceback.extract_tb(error.__traceback__)
    except Exception:  # a traceback the learner's code tampered with
        return None
    inside = [f for f in frames if Path(f.filename).resolve().is_relative_to(root)]
    if not inside:
        return None
    frame = inside[-1]
    return {"path": _shown(frame.filename, repo_root), "line": frame.lineno,
            "function": frame.name, "text": (frame.line or "").strip()}  # fmt: skip


def _shown(filename: str, repo_root: Path) -> str:
    path = Path(filename).resolve()
    return str(path.relative_to(repo_root)) if path.is_relative_to(repo_root) else str(filename)
