"""Every address the replayed kernels load and store, seen in Triton's CPU interpreter.

The interpreter runs a kernel program by program, and every memory access of a program goes
through two methods of its one builder (``interpreter_builder``): ``create_masked_load`` (a
plain ``tl.load``, a block pointer's and a tensor descriptor's load all end there) and
``create_masked_store``, plus the atomics. While a :class:`MemoryWatch` is active it wraps
those methods on that builder: each wrapper looks at the pointers and the mask it is given,
then calls the interpreter's own method with the same arguments, so that what a kernel
computes does not change. On leaving, the builder's own methods are back.

What the watch notes, for the lanes a load or store really issues (masked-off lanes are not
accessed, so they are not counted):

* the bytes each kernel loaded and stored, by buffer. A lane that repeats an address another
  lane of the same load already names moves nothing more (a GPU serves them with one access),
  so each load counts its distinct addresses;
* each load outside every buffer of the replay (a guard region, or no buffer at all), with the
  kernel, the program id and how far outside it went;
* for the buffers asked for (those an output lies in), which program stored each element last.

The numbers are read from the interpreter's real pointers: a replay on the CPU only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_NOBODY = -1  # an element no program stored
_LAUNCH_SHIFT = 32  # an owner is launch index << 32 | program's linear index


@dataclass(frozen=True)
class Region:
    """One buffer of the replay as the interpreter sees it: its storage's addresses, and the
    part of it that is the tensor (``interior``); the rest is its guard regions."""

    name: str  # "x", "buffer 2 (torch.empty_like)": what a message calls it
    storage_start: int
    storage_end: int
    interior_start: int
    nbytes: int
    itemsize: int  # the buffer's element size, for the owners and for a message's distances
    owned: bool = False  # keep which program stored each element


@dataclass
class Stray:
    """The first load of a kernel outside the buffers, and how many programs made one."""

    kernel: str
    program: tuple[int, int, int]
    where: str  # "3 elements past the end of x"
    programs: int = 1

    @property
    def shown(self) -> str:
        more = f" (and {self.programs - 1} more programs)" if self.programs > 1 else ""
        return f"{self.kernel} loads {self.where}, program {self.program}{more}"


class MemoryWatch:
    """The interpreter's loads and stores counted while active (see the module docstring)."""

    _METHODS = ("create_masked_load", "create_masked_store", "create_atomic_rmw",
                "create_atomic_cas")  # fmt: skip

    def __init__(self, regions: list[Region]):
        from triton.runtime import interpreter

        self._interpreter = interpreter
        self._builder = interpreter.interpreter_builder
        order = sorted(range(len(regions)), key=lambda i: regions[i].storage_start)
        self.regions = [regions[i] for i in order]
        self._starts = np.array([r.storage_start for r in self.regions], dtype=np.int64)
        self._ends = np.array([r.storage_end for r in self.regions], dtype=np.int64)
        self._interiors = np.array([r.interior_start for r in self.regions], dtype=np.int64)
        self._sizes = np.array([r.nbytes for r in self.regions], dtype=np.int64)
        self.owners = {
            r.name: np.full(r.nbytes // r.itemsize, _NOBODY, dtype=np.int64)
            for r in self.regions if r.owned
        }  # fmt: skip
        self.loaded: dict[str, np.ndarray] = {}  # kernel -> bytes by region (sorted order)
        self.stored: dict[str, np.ndarray] = {}
        self.strays: dict[tuple, Stray] = {}
        self._kernel, self._launch = "kernel", 0
        self._last_program: dict[tuple, tuple] = {}
        self._saved: dict[str, object] = {}
        self._itemsizes: dict[object, int] = {}

    # -- on and off ---------------------------------------------------------------------------

    def __enter__(self) -> MemoryWatch:
        own = vars(self._builder)
        for name in self._METHODS:
            self._saved[name] = own.get(name, _ABSENT)
            setattr(self._builder, name, getattr(self, "_" + name)(getattr(self._builder, name)))
        return self

    def __exit__(self, *exc_info) -> None:
        for name, saved in self._saved.items():
            if saved is _ABSENT:
                vars(self._builder).pop(name, None)
            else:
                setattr(self._builder, name, saved)
        self._saved.clear()

    def launching(self, kernel: str, index: int) -> None:
        """The launch whose programs run next."""
        self._kernel, self._launch = kernel, index

    # -- the wrappers ---------------------------------------------------------------------------

    def _create_masked_load(self, original):
        def create_masked_load(ptrs, mask, *rest, **options):
            self._saw(ptrs, mask, load=True)
            return original(ptrs, mask, *rest, **options)

        return create_masked_load

    def _create_masked_store(self, original):
        def create_masked_store(ptrs, value, mask, *rest, **options):
            self._saw(ptrs, mask, load=False)
            return original(ptrs, value, mask, *rest, **options)

        return create_masked_store

    def _create_atomic_rmw(self, original):
        def create_atomic_rmw(op, ptr, value, mask, *rest, **options):
            self._saw(ptr, mask, load=True)  # an atomic reads and writes each lane
            self._saw(ptr, mask, load=False)
            return original(op, ptr, value, mask, *rest, **options)

        return create_atomic_rmw

    def _create_atomic_cas(self, original):
        def create_atomic_cas(ptr, *rest, **options):
            self._saw(ptr, None, load=True)
            self._saw(ptr, None, load=False)
            return original(ptr, *rest, **options)

        return create_atomic_cas

    # -- what one access touched ----------------------------------------------------------------

    def _itemsize(self, ptrs) -> int:
        element = ptrs.get_element_ty()
        size = self._itemsizes.get(element)
        if size is None:
            size = self._itemsizes[element] = self._interpreter._get_np_dtype(element).itemsize
        return size

    def _saw(self, ptrs, mask, load: bool) -> None:
        addresses = np.asarray(ptrs.data)
        if mask is not None:
            lanes = np.broadcast_to(np.asarray(mask.data, dtype=bool), addresses.shape)
            addresses = addresses[lanes]
        if addresses.size == 0:
            return
        addresses = np.unique(addresses.astype(np.int64, copy=False).ravel())
        itemsize = self._itemsize(ptrs)
        table = self.loaded if load else self.stored
        count = len(self.regions)
        moved = table.get(self._kernel)
        if moved is None:
            moved = table[self._kernel] = np.zeros(count + 1, dtype=np.int64)
        if not count:  # nothing to tell apart: the totals only
            moved[0] += addresses.size * itemsize
            return
        region = np.searchsorted(self._starts, addresses, side="right") - 1
        known = region >= 0
        region = np.where(known, region, 0)
        offset = addresses - self._interiors[region]
        inside = known & (offset >= 0) & (offset + itemsize <= self._sizes[region])
        moved[:count] += np.bincount(region[inside], minlength=count)[:count] * itemsize
        moved[count] += int((~inside).sum()) * itemsize  # outside every buffer
        if not load:
            self._own(region, offset, inside)
        elif not inside.all():
            in_storage = known & (addresses < self._ends[region])
            self._stray(region, offset, ~inside, in_storage, itemsize)

    def _own(self, region, offset, inside) -> None:
        if not self.owners:
            return
        x, y, z = self._builder.grid_idx
        nx, ny, _ = self._builder.grid_dim
        owner = (self._launch << _LAUNCH_SHIFT) | (x + nx * (y + ny * z))
        for index, buffer in enumerate(self.regions):
            owners = self.owners.get(buffer.name) if buffer.owned else None
            lanes = inside & (region == index) if owners is not None else None
            if lanes is not None and lanes.any():
                owners[offset[lanes] // buffer.itemsize] = owner

    def _stray(self, region, offset, outside, in_storage, itemsize) -> None:
        program = tuple(int(i) for i in self._builder.grid_idx)
        guards = outside & in_storage
        for index in np.unique(region[guards]).tolist():
            buffer = self.regions[index]
            lanes = guards & (region == index)
            below, above = offset[lanes & (offset < 0)], offset[lanes & (offset >= 0)]
            if len(below):
                count = -(-int(-below.min()) // buffer.itemsize)
                self._note(f"{count} elements before the start of {buffer.name}", program,
                           (buffer.name, "before"))  # fmt: skip
            if len(above):
                past = int(above.max()) + itemsize - buffer.nbytes  # bytes past the end
                count = -(-past // buffer.itemsize)
                self._note(f"{count} elements past the end of {buffer.name}", program,
                           (buffer.name, "after"))  # fmt: skip
        wild = int((outside & ~in_storage).sum())
        if wild:
            self._note(f"{wild} elements from memory that belongs to no tensor of the call",
                       program, ("", "nowhere"))  # fmt: skip

    def _note(self, where: str, program: tuple, what: tuple[str, str]) -> None:
        key = (self._kernel, *what)
        stray = self.strays.get(key)
        if stray is None:
            self.strays[key] = Stray(self._kernel, program, where)
        elif self._last_program.get(key) != program:
            stray.programs += 1
        self._last_program[key] = program

    # -- the results ----------------------------------------------------------------------------

    def traffic(self) -> dict:
        """Bytes loaded and stored: in all, by buffer and by kernel (plain data)."""
        names = [r.name for r in self.regions] + ["outside every tensor"]
        by_tensor: dict[str, dict[str, int]] = {}
        by_kernel: dict[str, dict[str, int]] = {}
        for key, table in (("loaded_bytes", self.loaded), ("stored_bytes", self.stored)):
            for kernel, moved in table.items():
                entry = by_kernel.setdefault(kernel, {"loaded_bytes": 0, "stored_bytes": 0})
                entry[key] += int(moved.sum())
                for name, amount in zip(names, moved.tolist(), strict=True):
                    if amount:
                        tensor = by_tensor.setdefault(name, {"loaded_bytes": 0,
                                                             "stored_bytes": 0})  # fmt: skip
                        tensor[key] += amount
        return {
            "loaded_bytes": sum(k["loaded_bytes"] for k in by_kernel.values()),
            "stored_bytes": sum(k["stored_bytes"] for k in by_kernel.values()),
            "by_tensor": by_tensor,
            "by_kernel": by_kernel,
        }

    def stray_loads(self) -> list[str]:
        return [stray.shown for stray in self.strays.values()]


_ABSENT = object()


def owner_parts(owner: int) -> tuple[int, int]:
    """(launch index, program's linear index) of an owner value; (-1, -1) for nobody."""
    if owner < 0:
        return -1, -1
    return owner >> _LAUNCH_SHIFT, owner & ((1 << _LAUNCH_SHIFT) - 1)
