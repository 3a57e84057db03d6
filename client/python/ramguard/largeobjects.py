"""The census: which large objects (torch tensors and storages, numpy arrays, big buffers) this
process holds, who holds them (a root's path, or the reference cycle that alone keeps them),
and the same as the protocol's Census."""

import ctypes
import gc
import mmap
import os
import sys
import time
import types
import weakref
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from .wire import CENSUS_TEXT_BYTES


# Census: which large objects are alive, who holds them, and whether anything reachable does.
# Opt-in (Run.round_end(census=...), Run.end(census=...), Client(census_every_rounds=N), or
# automatically while a growth warning stands) and budgeted. Never imports torch or numpy: it
# looks at them only when the coordinator already has. It holds no reference after it returns
# and never frees anything (no gc.collect()).

# Frames of this package (the census, and Run.round_end or Run.end that called it) are not roots.
_PACKAGE_DIR = os.path.dirname(__file__)
CENSUS_BUDGET_SECONDS = 1.0      # full mode stops here and says it is partial
CENSUS_MIN_BYTES = 1 << 20       # bytes, bytearray, memoryview, mmap and arrays below: ignored
CENSUS_ROWS = 12                 # groups sent with the mark (the rest summed in other_bytes)
CENSUS_RANGES = 256              # address ranges sent, over all groups (the daemon places them)
_CENSUS_CYCLE_STEPS = 8          # how far up the referrers a cycle is looked for
_CENSUS_CYCLE_GROUPS = 4         # groups whose cycle is described (a heap pass each step)
_CENSUS_CHECK_EVERY = 4096       # references followed between two looks at the clock
_CENSUS_CHECK_LARGE_EVERY = 64   # large objects counted between two looks at the clock
_CENSUS_GROUP_CHECK_EVERY = 256  # storages grouped between two looks at the clock
# The walk's share of the budget: grouping what it found, naming the holders and dropping what
# it held take the rest.
_CENSUS_WALK_SHARE = 0.7


class _CensusBudget(Exception):
    pass


def _census_kinds() -> Dict[str, Any]:
    """The types to look for, from the modules the process already has."""
    kinds: Dict[str, Any] = {"tensor": (), "storage": (), "ndarray": None, "module": None,
                             "torch": sys.modules.get("torch"), "cuda_ready": False}
    torch = kinds["torch"]
    if torch is not None:
        kinds["tensor"] = tuple(t for t in (getattr(torch, "Tensor", None),) if t)
        storage_mod = getattr(torch, "storage", None)
        kinds["storage"] = tuple(t for t in (
            getattr(torch, "UntypedStorage", None), getattr(torch, "TypedStorage", None),
            getattr(storage_mod, "_UntypedStorage", None),
            getattr(storage_mod, "_TypedStorage", None)) if isinstance(t, type))
        nn = sys.modules.get("torch.nn")
        kinds["module"] = getattr(nn, "Module", None)
        cuda = sys.modules.get("torch.cuda")
        try:
            kinds["cuda_ready"] = bool(cuda is not None and cuda.is_initialized())
        except Exception:
            kinds["cuda_ready"] = False
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        kinds["ndarray"] = getattr(numpy, "ndarray", None)
    return kinds


_BYTES_DATA_OFFSET = sys.getsizeof(b"") - 1  # where a bytes object's data starts (CPython)


def _buffer_address(obj: Any) -> int:
    """Where a writable buffer's data lies (0 when it cannot be told without copying)."""
    try:
        return ctypes.addressof((ctypes.c_char * 0).from_buffer(obj))
    except (TypeError, ValueError, BufferError):
        return 0


class _Storage:
    """One block of memory, counted once however many tensors, views and arrays share it."""
    __slots__ = ("key", "nbytes", "address", "device", "dtype", "pinned", "shared", "kind",
                 "objects")

    def __init__(self, key: Any, nbytes: int, address: int, device: str, dtype: str,
                 kind: str, pinned: bool = False, shared: bool = False) -> None:
        self.key, self.nbytes, self.address, self.device = key, nbytes, address, device
        self.dtype, self.kind, self.pinned, self.shared = dtype, kind, pinned, shared
        self.objects = 0


_CENSUS_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                  types.MethodType, types.CodeType, types.FrameType)


class _Root:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class _Group:
    __slots__ = ("obj", "holder", "reachable", "cycle", "storages", "objects")

    def __init__(self, obj: Any, holder: str) -> None:
        self.obj, self.holder, self.reachable, self.cycle = obj, holder, bool(holder), ""
        self.storages: List[_Storage] = []
        self.objects = 0


class _Census:
    """One census. Everything it holds is dropped by close(), before census() returns."""

    def __init__(self, roots: Dict[str, Any], mode: str, budget_seconds: float, min_bytes: int,
                 rows: int, model_bytes: int) -> None:
        self.roots, self.mode, self.min_bytes, self.rows = roots, mode, min_bytes, rows
        self.model_bytes = model_bytes
        self.started = time.perf_counter()
        self.deadline = self.started + budget_seconds
        self.walk_deadline = self.started + budget_seconds * _CENSUS_WALK_SHARE
        self.watch = False  # weak references to the listed storages' objects (a gc probe follows)
        self.partial = ""
        self.kinds = _census_kinds()
        self.storages: Dict[Any, _Storage] = {}
        self.found: Dict[int, Tuple[Any, _Storage]] = {}   # id -> (object, its storage)
        self.parent: Dict[int, Any] = {}       # id -> (parent object, label or None)
        self.objects_seen = 0
        self.ignore: Set[int] = set()
        self.seen: Set[int] = set()
        self._index: Dict[int, Dict[int, Any]] = {}  # container id -> {id(value): key}
        self.unseen: List[Any] = []
        self.referrers: Dict[int, List[Any]] = {}
        self._large_types: Tuple[type, ...] = (bytes, bytearray, memoryview, mmap.mmap) + \
            tuple(t for t in (self.kinds["ndarray"],) if t is not None) + \
            self.kinds["tensor"] + self.kinds["storage"]
        self._type_cache: Dict[type, bool] = {}
        self._tensor_types: Set[type] = set()
        self._dtype_names: Dict[Any, str] = {}
        tensor = self.kinds["tensor"][0] if self.kinds["tensor"] else None
        self._storage_of: Callable[[Any], Any] = (
            (lambda t: t.untyped_storage()) if hasattr(tensor, "untyped_storage") else
            (lambda t: t._storage()) if hasattr(tensor, "_storage") else
            (lambda t: t.storage()))

    def large_type(self, t: type) -> bool:
        hit = self._type_cache.get(t)
        if hit is None:
            hit = self._type_cache[t] = issubclass(t, self._large_types)
        return hit

    # -- what counts ---------------------------------------------------------------------

    def _over(self) -> bool:
        return time.perf_counter() > self.deadline

    def _walk_over(self) -> bool:
        return time.perf_counter() > self.walk_deadline

    def large(self, obj: Any) -> Optional[_Storage]:
        """The storage of a large object, or None: tensors (their storage), torch storages,
        numpy arrays (their base), bytes-likes and mmaps above min_bytes."""
        k = self.kinds
        t = type(obj)
        if t in self._tensor_types:  # the common case first: a state dict's tensors
            return self._tensor(obj)
        if t is bytes:
            if len(obj) < self.min_bytes:
                return None
            return self._storage(("b", id(obj)), len(obj), id(obj) + _BYTES_DATA_OFFSET,
                                 "cpu", "bytes", "bytes")
        if t is bytearray:
            if len(obj) < self.min_bytes:
                return None
            return self._storage(("b", id(obj)), len(obj), _buffer_address(obj), "cpu",
                                 "bytes", "bytearray")
        if t is memoryview:
            try:
                if obj.nbytes < self.min_bytes:
                    return None
                owner = obj.obj
            except ValueError:  # released
                return None
            if self.large(owner) is not None:
                return self.large(owner)
            return self._storage(("b", id(owner)), obj.nbytes, 0, "cpu", "bytes", "memoryview")
        if t is mmap.mmap:
            try:
                size = len(obj)
            except ValueError:  # closed
                return None
            if size < self.min_bytes:
                return None
            return self._storage(("b", id(obj)), size, _buffer_address(obj), "cpu", "bytes",
                                 "mmap")
        if k["ndarray"] is not None and isinstance(obj, k["ndarray"]):
            base = obj
            while isinstance(getattr(base, "base", None), k["ndarray"]):
                base = base.base
            owner = getattr(base, "base", None)
            if owner is not None and not isinstance(owner, (bytes, bytearray, mmap.mmap)):
                # An array over another object's memory (a tensor's, a buffer's): count it
                # once, under that object, when it is itself large.
                inner = self.large(owner) if not isinstance(owner, memoryview) else None
                if inner is not None:
                    return inner
            if base.nbytes < self.min_bytes:
                return None
            address = int(base.__array_interface__["data"][0])
            return self._storage(("a", address, int(base.nbytes)), int(base.nbytes), address,
                                 "cpu", str(base.dtype), "array")
        if k["tensor"] and isinstance(obj, k["tensor"]):
            self._tensor_types.add(t)
            return self._tensor(obj)
        if k["storage"] and isinstance(obj, k["storage"]):
            dtype = str(getattr(obj, "dtype", "uint8")).replace("torch.", "")
            return self._torch_storage(obj, dtype, getattr(obj, "device", None) and
                                       obj.device.type or "cpu")
        return None

    def _tensor(self, obj: Any) -> Optional[_Storage]:
        try:
            # untyped_storage (torch 2) or _storage (1.x), both C; storage() builds a Python
            # TypedStorage each call.
            storage = self._storage_of(obj)
        except Exception:  # sparse, nested, meta without storage
            return None
        dtype = self._dtype_names.get(obj.dtype)
        if dtype is None:
            dtype = self._dtype_names[obj.dtype] = str(obj.dtype).replace("torch.", "")
        return self._torch_storage(storage, dtype, obj.device.type)

    def _torch_storage(self, storage: Any, dtype: str, device: str) -> Optional[_Storage]:
        try:
            address, nbytes = int(storage.data_ptr()), int(storage.nbytes())
        except Exception:
            return None
        if nbytes <= 0 or device == "meta":
            return None
        key = ("t", device, address)
        known = self.storages.get(key)
        if known is not None:
            known.nbytes = max(known.nbytes, nbytes)
            return known
        pinned = shared = False
        if device == "cpu":
            try:
                shared = bool(storage.is_shared())
                # is_pinned asks CUDA: only once the process has initialized it itself.
                pinned = bool(self.kinds["cuda_ready"] and storage.is_pinned())
            except Exception:
                pass
        return self._storage(key, nbytes, address, device, dtype, "tensor", pinned, shared)

    def _storage(self, key: Any, nbytes: int, address: int, device: str, dtype: str,
                 kind: str, pinned: bool = False, shared: bool = False) -> _Storage:
        known = self.storages.get(key)
        if known is None:
            known = self.storages[key] = _Storage(key, nbytes, address, device, dtype, kind,
                                                  pinned, shared)
        return known

    def note(self, obj: Any) -> None:
        """Count obj if it is large."""
        if id(obj) in self.found:
            return
        storage = self.large(obj)
        if storage is None:
            return
        storage.objects += 1
        entry = self.found[id(obj)] = (obj, storage)
        self.seen.add(id(entry))  # the census's own: not a holder

    # -- walking -------------------------------------------------------------------------

    def root_objects(self) -> List[Tuple[str, Any]]:
        """Named roots, in the order paths prefer them: registered roots, live frames' locals
        (the innermost first), __main__'s globals, then every other module's."""
        out: List[Tuple[str, Any]] = [(name, obj) for name, obj in self.roots.items()]
        if self.mode == "roots":
            return out
        frame: Optional[types.FrameType]
        for frame in sys._current_frames().values():
            while frame is not None:
                # Not the census's own frames (nor its callers' in this file), and not a
                # module's body, whose locals are its globals (named below as module.name).
                if os.path.dirname(frame.f_code.co_filename) != _PACKAGE_DIR and \
                        frame.f_locals is not frame.f_globals:
                    name = frame.f_code.co_name
                    try:
                        local_items = list(frame.f_locals.items())
                    except Exception:
                        local_items = []
                    for key, value in local_items:
                        out.append((f"{name}() local '{key}'", value))
                frame = frame.f_back
        del frame
        modules = list(sys.modules.items())
        modules.sort(key=lambda item: item[0] != "__main__")
        for modname, module in modules:
            attrs = getattr(module, "__dict__", None)
            if not isinstance(attrs, dict):
                continue
            for key, value in list(attrs.items()):
                if type(value) is type(sys) or key.startswith("__"):
                    continue  # modules are roots of their own; dunders hold no data
                out.append((f"{modname}.{key}", value))
        return out

    def walk(self, roots: List[Tuple[str, Any]]) -> bool:
        """Breadth-first from the roots through what the collector can see, recording the
        first parent of every object reached and counting the large ones. False when it
        stopped at the budget."""
        parent, seen = self.parent, self.seen
        queue: List[Any] = []
        for name, obj in roots:
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            parent[id(obj)] = _Root(name)
            if self.large_type(type(obj)):
                self.note(obj)
            queue.append(obj)
        get_referents, is_tracked = gc.get_referents, gc.is_tracked
        cache, large_type, note = self._type_cache, self.large_type, self.note
        # Roots mode stays within the roots' data: not into classes, modules and functions,
        # through which everything is reachable.
        stop = _CENSUS_OPAQUE if self.mode == "roots" else ()
        head = 0
        # The clock is read every _CENSUS_CHECK_EVERY references followed, not objects: one
        # list of 10^6 items is as much work as 10^6 small objects, so a big container's
        # references are followed in slices of that many, the clock read between.
        work = noted = 0
        stopped = "stopped at its time budget while walking from the roots"
        rest: Optional[List[Any]] = None
        rest_at = 0
        while True:
            if rest is not None:
                refs = rest[rest_at:rest_at + _CENSUS_CHECK_EVERY]
                rest_at += _CENSUS_CHECK_EVERY
                if rest_at >= len(rest):
                    rest = None
            else:
                if head >= len(queue):
                    break
                obj = queue[head]
                queue[head] = None
                head += 1
                refs = get_referents(obj)
                if len(refs) > _CENSUS_CHECK_EVERY:
                    rest, rest_at = refs, _CENSUS_CHECK_EVERY
                    refs = refs[:_CENSUS_CHECK_EVERY]
            work += len(refs) + 1
            if work > _CENSUS_CHECK_EVERY:
                work = 0
                if self._walk_over():
                    self.partial = stopped
                    return False
            for child in refs:
                big = cache.get(type(child))
                if big is None:
                    big = large_type(type(child))
                if big:
                    cid = id(child)
                    if cid not in seen:
                        seen.add(cid)
                        parent[cid] = obj
                        note(child)  # microseconds (a tensor's storage): the clock more often
                        if is_tracked(child):
                            queue.append(child)
                        noted += 1
                        if not noted % _CENSUS_CHECK_LARGE_EVERY and self._walk_over():
                            self.partial = stopped
                            return False
                elif is_tracked(child):
                    cid = id(child)
                    if cid not in seen and not isinstance(child, stop):
                        seen.add(cid)
                        parent[cid] = obj
                        queue.append(child)
        return True

    def unreached(self) -> None:
        """Full mode, after a complete walk: the objects no root reaches (held by reference
        cycles, or from outside Python's objects). Their large objects are counted, and who
        refers to whom among them is kept (self.referrers) to name holders and cycles: what
        refers to an unreached object is unreached itself."""
        seen = self.seen
        if self._walk_over():
            self.partial = "stopped at its time budget before the unreached objects"
            return
        objs = gc.get_objects()
        unseen = [o for o in objs if id(o) not in seen]
        own = (types.FrameType, _Root, _Storage, _Group, _Census)
        unseen = [o for o in unseen if not isinstance(o, own)]
        del objs
        self.ignore.add(id(unseen))
        self.unseen = unseen
        cache, large_type, note = self._type_cache, self.large_type, self.note
        referrers: Dict[int, List[Any]] = {}
        self.referrers = referrers
        get_referents = gc.get_referents
        for i, obj in enumerate(unseen):
            if not i % _CENSUS_CHECK_EVERY and self._walk_over():
                self.partial = "stopped at its time budget among unreached objects"
                return
            big = cache.get(type(obj))
            if big is None:
                big = large_type(type(obj))
            if big:
                note(obj)
            for child in get_referents(obj):
                cid = id(child)
                if cid in seen:
                    continue
                held = referrers.get(cid)
                if held is None:
                    referrers[cid] = [obj]
                    big = cache.get(type(child))
                    if big is None:
                        big = large_type(type(child))
                    if big and not gc.is_tracked(child):
                        note(child)
                else:
                    held.append(obj)
        for i, (obj, _) in self.found.items():
            if i not in self.parent and i in referrers:
                self.parent[i] = referrers[i][0]

    # -- naming --------------------------------------------------------------------------

    def step(self, parent: Any, child: Any) -> str:
        """How parent refers to child, as Python would write it."""
        if isinstance(parent, (dict, list, tuple)):
            # Where each value sits, once per container: a state dict of 10^4 tensors is
            # looked up 10^4 times.
            index = self._index.get(id(parent))
            if index is None:
                items = parent.items() if isinstance(parent, dict) else enumerate(parent)
                index = self._index[id(parent)] = {}
                for key, value in items:
                    index.setdefault(id(value), key)
            if id(child) not in index:
                return ".<key>" if isinstance(parent, dict) else "[?]"
            key = index[id(child)]
            return f"[{key!r}]" if isinstance(parent, dict) else f"[{key}]"
        if isinstance(parent, types.FunctionType):
            if parent.__globals__ is child:
                return ".__globals__"
            for cell, name in zip(parent.__closure__ or (), parent.__code__.co_freevars):
                if cell is child:
                    return f".<closure {name}>"
            return ".<function>"
        if isinstance(parent, types.CellType) if hasattr(types, "CellType") else False:
            return ""
        if isinstance(parent, types.FrameType):
            for key, value in parent.f_locals.items():
                if value is child:
                    return f" local '{key}'"
            return " <frame>"
        attrs = getattr(parent, "__dict__", None)
        if attrs is child:
            return ""
        if isinstance(attrs, dict):
            for key, value in attrs.items():
                if value is child:
                    return f".{key}"
        if isinstance(parent, (set, frozenset)):
            return ".<member>"
        return f".<{type(parent).__name__}>"

    def path(self, obj: Any) -> Tuple[str, List[Any]]:
        """The path from a root to obj, and the objects on it (root first)."""
        chain: List[Any] = [obj]
        parts: List[str] = []
        current = obj
        for _ in range(64):
            entry = self.parent.get(id(current))
            if entry is None:
                return "", chain
            if isinstance(entry, _Root):
                parts.append(entry.name)
                break
            step = self.step(entry, current)
            if not step and parts and parts[-1].startswith("[") and parts[-1].endswith("]") \
                    and parts[-1][1:2] in "'\"":
                parts[-1] = "." + parts[-1][2:-2]  # obj.__dict__['x'] is obj.x
            parts.append(step)
            chain.append(entry)
            current = entry
        chain.reverse()
        return "".join(reversed(parts)), chain

    def ancestors(self, obj: Any) -> List[Any]:
        """The objects on obj's path from a root, root first (no names: cheap)."""
        chain: List[Any] = []
        current = obj
        for _ in range(64):
            entry = self.parent.get(id(current))
            if entry is None or isinstance(entry, _Root):
                break
            chain.append(entry)
            current = entry
        chain.reverse()
        return chain

    def _referrers(self, obj: Any) -> List[Any]:
        """What refers to an unreached object (the census's own objects aside)."""
        return [r for r in self.referrers.get(id(obj), ())
                if not isinstance(r, (_Group, _Census, _Storage))]

    def cycle(self, obj: Any) -> Tuple[str, str]:
        """For an object no root reaches: (its holder's name, the cycle that keeps it), found by
        climbing the referrers (a heap pass per step, so a few steps for a few groups)."""
        chain: List[Any] = [obj]
        try:
            for _ in range(_CENSUS_CYCLE_STEPS):
                referrers = self._referrers(chain[-1])
                if not referrers:
                    return "", "held from outside Python's objects (an extension's reference)"
                # A referrer already on the chain closes the cycle.
                on_chain = [r for r in referrers if any(r is c for c in chain)]
                nxt = on_chain[0] if on_chain else referrers[0]
                del referrers, on_chain
                if not any(nxt is c for c in chain):
                    chain.append(nxt)
                    continue
                start = next(i for i, c in enumerate(chain) if c is nxt)
                names = [self._name(o) for o in chain[start:]]
                back = self.step(chain[-1], nxt).lstrip(".") or "refers back to"
                shape = " -> ".join(f"{n[0]} `{n[1]}`" for n in names) + \
                    f" -> `{back}` is `{names[0][1]}`"
                holder = names[0][1] + "".join(self.step(chain[i], chain[i - 1])
                                               for i in range(start, 0, -1))
                return holder, shape
            return "", "held by a chain of objects longer than the census follows"
        finally:
            chain.clear()

    def _name(self, obj: Any) -> Tuple[str, str]:
        """(what it is, what to call it) for an object no root names."""
        if isinstance(obj, types.FunctionType):
            return "function", obj.__qualname__
        if isinstance(obj, dict):
            for value in obj.values():  # a namespace: name it by its functions
                if isinstance(value, types.FunctionType) and value.__globals__ is obj:
                    return "dict", f"{value.__name__}.__globals__"
            return "dict", f"dict at {id(obj):#x}"
        return type(obj).__name__, f"{type(obj).__name__} at {id(obj):#x}"

    def group_of(self, obj: Any, path_objects: List[Any]) -> Any:
        """The container that a storage counts under: the outermost torch Module on its path,
        else its direct holder when that is a container, else the object itself."""
        module = self.kinds["module"]
        if module is not None:
            for o in path_objects:
                if isinstance(o, module):
                    return o
        holder = self.parent.get(id(obj))
        if isinstance(holder, (dict, list, tuple)):
            owner = self.parent.get(id(holder))
            if owner is not None and not isinstance(owner, _Root) and \
                    getattr(owner, "__dict__", None) is holder:
                return obj  # an attribute: the object's __dict__ holds all of them
            return holder
        return obj

    def close(self) -> None:
        self.roots = {}
        self.found.clear()
        self.parent.clear()
        self.storages.clear()
        self.ignore.clear()
        self.seen.clear()
        self.unseen = []
        self.referrers = {}
        self._index = {}


def census(roots: Optional[Dict[str, Any]] = None, mode: str = "full",
           budget_seconds: float = CENSUS_BUDGET_SECONDS, min_bytes: int = CENSUS_MIN_BYTES,
           rows: int = CENSUS_ROWS, model_bytes: int = 0) -> Dict[str, Any]:
    """Which large objects this process holds, grouped by who holds them.

    mode="full": every torch tensor and storage (torch only if already imported), numpy array
    (likewise), bytes/bytearray/memoryview/mmap of min_bytes or more in the heap, each storage
    counted once however many tensors and views share it; grouped by the container holding
    them (a state dict is one group; a torch Module and its submodules are one); each group
    named by its path from a root: registered roots (roots={"name": obj}), live frames' locals
    ("aggregate() local 'updates'"), module globals ("coordinator.state"). A group no root
    reaches is held only by a reference cycle: it is named from the cycle, whose shape is given
    ("dict `aggregate.__globals__` -> function `aggregate` -> __globals__ is ...").
    mode="roots": only what the registered roots reach (cheap). Stops at budget_seconds with
    partial set to why. model_bytes > 0 sizes groups in model copies. Never imports torch or
    numpy, never collects, holds nothing after it returns.

    Returns {"mode", "partial", "duration_seconds", "objects_seen", "storages", "host_bytes",
    "gpu_bytes", "pinned_bytes", "shared_bytes", "unreachable_bytes", "groups": [{"holder",
    "reachable", "cycle", "kind", "bytes", "gpu_bytes", "storages", "objects", "dtype",
    "model_copies", "ranges": [[address, nbytes], ...]}, ...] (largest first, `rows` of them),
    "other_bytes" (groups not listed), "other_groups"}."""
    return _census(roots, mode, budget_seconds, min_bytes, rows, model_bytes)


def _census(roots: Optional[Dict[str, Any]], mode: str, budget_seconds: float, min_bytes: int,
            rows: int, model_bytes: int, watch: bool = False) -> Dict[str, Any]:
    """census(); watch=True: a gc probe follows, and the listed groups keep weak references to
    their storages' objects for _census_after_gc (which drops them)."""
    if mode not in ("full", "roots"):
        raise ValueError(f"invalid census mode {mode!r}; expected 'full' or 'roots'")
    c = _Census(dict(roots or {}), mode, budget_seconds, min_bytes, rows, model_bytes)
    c.watch = watch
    c.ignore.add(id(roots))  # the caller's dict of roots is not a holder
    try:
        return _census_run(c)
    finally:
        c.close()


def _census_ranges(storages: List[Tuple[int, int]]) -> List[List[int]]:
    """(address, nbytes) pairs as ranges, sorted, merged where adjacent."""
    merged: List[List[int]] = []
    for address, nbytes in sorted(storages):
        if merged and merged[-1][0] + merged[-1][1] == address:
            merged[-1][1] += nbytes
        else:
            merged.append([address, nbytes])
    return merged


def _census_after_gc(result: Dict[str, Any]) -> None:
    """A census taken just before a gc probe, made to describe the state after it: the one the
    mark's reading, its allocator facts and the daemon's placement describe. The ranges of the
    storages the collector freed are not sent (the daemon would place memory no longer held);
    their groups keep their bytes and names (what the census found, and the cycle that held
    them: what the verdicts diff) and say they were freed (gc_freed_bytes, and in the cycle)."""
    total = 0
    ranges_left = CENSUS_RANGES
    for g in result["groups"]:
        watched = g.pop("_watch", None) or []
        alive: List[Tuple[int, int]] = []
        freed = 0
        for address, nbytes, refs in watched:
            # Freed: every object of the storage is gone (one without a weak reference: kept).
            if refs and all(r is not None and r() is None for r in refs):
                freed += nbytes
            else:
                alive.append((address, nbytes))
        if freed:
            g["ranges"] = _census_ranges(alive)
            g["cycle"] = (g["cycle"] + "; " if g["cycle"] else "") + \
                "freed by the gc probe after the census"
        g["ranges"] = g["ranges"][:max(0, ranges_left)]
        ranges_left -= len(g["ranges"])
        g["gc_freed_bytes"] = freed
        total += freed
    result["gc_freed_bytes"] = total


def _census_is_view(obj: Any) -> bool:
    if isinstance(obj, memoryview):
        return True
    try:
        base = getattr(obj, "_base", None) if not hasattr(obj, "__array_interface__") \
            else obj.base
    except Exception:
        return False
    return base is not None


def _census_run(c: _Census) -> Dict[str, Any]:
    # The census's own objects are not part of the census: mark them seen.
    c.ignore.update(id(o) for o in (c, c.seen, c.parent, c.found, c.storages, c.ignore,
                                    c.roots, c._type_cache))
    roots = c.root_objects()
    c.ignore.add(id(roots))
    c.ignore.update(id(item) for item in roots)
    c.seen.update(c.ignore)
    complete = c.walk(roots)
    del roots
    c.objects_seen = len(c.seen)
    if complete and c.mode == "full":
        c.unreached()
        c.objects_seen += len(c.unseen)
    return _census_groups(c, complete and not c.partial)


def _census_groups(c: _Census, complete: bool) -> Dict[str, Any]:
    groups: Dict[int, _Group] = {}
    c.ignore.add(id(groups))
    counted: Set[Any] = set()
    # Largest storages first, owners before views: a storage counts in the group of the object
    # that owns it (an array's base, a tensor that is not a view), else in the first found.
    items = sorted(c.found.values(),
                   key=lambda item: (-item[1].nbytes, _census_is_view(item[0])))
    c.ignore.add(id(items))
    obj: Any = None
    group_obj: Any = None
    storage: Optional[_Storage] = None
    # What the budget left ungrouped (the smallest storages: the largest go first) is summed
    # in other_bytes, and partial says so.
    ungrouped: Dict[Any, int] = {}
    for i, (obj, storage) in enumerate(items):
        if not i % _CENSUS_GROUP_CHECK_EVERY and i and c._over():
            for _, s in items[i:]:
                if s.key not in counted and s.device == "cpu":
                    ungrouped[s.key] = s.nbytes
            why = (f"stopped at its time budget while grouping: {len(ungrouped)} storages "
                   f"({sum(ungrouped.values())} bytes) not grouped, in other_bytes")
            c.partial = f"{c.partial}; {why}" if c.partial else why
            break
        chain = c.ancestors(obj)
        group_obj = c.group_of(obj, chain)
        chain.clear()
        g = groups.get(id(group_obj))
        if g is None:
            # Named once per group; "" when no root reaches it (named from its cycle below).
            g = groups[id(group_obj)] = _Group(group_obj, c.path(group_obj)[0])
        g.objects += 1
        if storage.key not in counted:
            counted.add(storage.key)
            g.storages.append(storage)
    del items
    obj = group_obj = storage = None
    ordered = sorted(groups.values(),
                     key=lambda g: -sum(s.nbytes for s in g.storages))
    groups.clear()
    described = 0
    for g in ordered:
        if g.reachable or not g.storages:
            continue
        what = type(g.obj).__name__
        if not complete:
            g.holder = f"a {what} not reached before the budget"
        elif described >= _CENSUS_CYCLE_GROUPS or c._over():
            g.holder = f"a {what} no root reaches"
            g.cycle = "not described (census budget)"
        else:
            described += 1
            holder, g.cycle = c.cycle(g.obj)
            g.holder = holder or f"a {what} no root reaches"
    module = c.kinds["module"]
    out: List[Dict[str, Any]] = []
    ranges_left = CENSUS_RANGES
    other_groups = 0
    other_bytes = sum(ungrouped.values())
    other_unreachable = 0
    watched: List[Tuple[int, List[_Storage]]] = []
    for g in ordered:
        storages = g.storages
        if not storages:  # views of storages another group counts
            continue
        host = sum(s.nbytes for s in storages if s.device == "cpu")
        if len(out) >= c.rows:  # not listed: only summed
            other_groups += 1
            other_bytes += host
            other_unreachable += 0 if g.reachable else host
            g.obj = None
            continue
        gpu = sum(s.nbytes for s in storages if s.device != "cpu")
        tensors = sum(1 for s in storages if s.kind == "tensor")
        if module is not None and isinstance(g.obj, module):
            kind = "module"
        elif tensors > 1:
            kind = "state"
        elif tensors:
            kind = "tensor"
        elif any(s.kind == "array" for s in storages):
            kind = "arrays" if len(storages) > 1 else "array"
        else:
            kind = storages[0].kind if len(storages) == 1 else "buffers"
        dtypes: Dict[str, int] = {}
        for s in storages:
            dtypes[s.dtype] = dtypes.get(s.dtype, 0) + s.nbytes
        placed = [s for s in storages if s.device == "cpu" and s.address]
        merged = _census_ranges([(s.address, s.nbytes) for s in placed])[:max(0, ranges_left)]
        ranges_left -= len(merged)
        if c.watch:
            watched.append((len(out), placed))
        out.append({
            "holder": g.holder, "reachable": g.reachable, "cycle": g.cycle, "kind": kind,
            "bytes": host, "gpu_bytes": gpu, "storages": len(storages), "objects": g.objects,
            "dtype": max(dtypes, key=lambda d: dtypes[d]) if dtypes else "",
            "pinned_bytes": sum(s.nbytes for s in storages if s.pinned),
            "shared_bytes": sum(s.nbytes for s in storages if s.shared),
            "model_copies": round(host / c.model_bytes, 3) if c.model_bytes else 0.0,
            "ranges": merged,
        })
        g.obj = None
    ordered.clear()
    if watched:
        _census_watch(c, out, watched)
    cpu = [s for s in c.storages.values() if s.device == "cpu"]
    return {
        "mode": c.mode, "partial": c.partial,
        "duration_seconds": time.perf_counter() - c.started,
        "objects_seen": c.objects_seen, "storages": len(c.storages),
        "host_bytes": sum(s.nbytes for s in cpu),
        "gpu_bytes": sum(s.nbytes for s in c.storages.values() if s.device != "cpu"),
        "pinned_bytes": sum(s.nbytes for s in cpu if s.pinned),
        "shared_bytes": sum(s.nbytes for s in cpu if s.shared),
        "unreachable_bytes": sum(g["bytes"] for g in out if not g["reachable"]) +
        other_unreachable,
        "model_bytes": c.model_bytes,
        "groups": out,
        "other_groups": other_groups,
        "other_bytes": other_bytes,
    }


def _census_watch(c: _Census, out: List[Dict[str, Any]],
                  watched: List[Tuple[int, List[_Storage]]]) -> None:
    """Each listed storage's objects, weakly (None for one that takes no weak reference): which
    of them a gc probe frees (_census_after_gc)."""
    refs: Dict[Any, List[Any]] = {}
    for _, storages in watched:
        for s in storages:
            refs[s.key] = []
    for obj, storage in c.found.values():
        held = refs.get(storage.key)
        if held is not None:
            try:
                held.append(weakref.ref(obj))
            except TypeError:
                held.append(None)
    for index, storages in watched:
        out[index]["_watch"] = [(s.address, s.nbytes, refs[s.key]) for s in storages]


def _census_text(text: str) -> str:
    """Printable (control characters written as escapes, as repr() does) and at most
    CENSUS_TEXT_BYTES of UTF-8: the daemon refuses anything else."""
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    data = text.encode("utf-8", "replace")
    if len(data) <= CENSUS_TEXT_BYTES:
        return text
    return data[:CENSUS_TEXT_BYTES - 3].decode("utf-8", "ignore") + "..."


def _census_wire(result: Dict[str, Any]) -> Dict[str, Any]:
    """census()'s result as the protocol's Census (proto/ramguard.proto): the listed groups
    with their address ranges, the totals; texts cut to CENSUS_TEXT_BYTES."""
    groups = [{"holder": _census_text(g["holder"]), "reachable": bool(g["reachable"]),
               "cycle": _census_text(g["cycle"]) or None, "kind": g["kind"],
               "bytes": int(g["bytes"]), "gpu_bytes": int(g["gpu_bytes"]) or None,
               "storages": int(g["storages"]), "objects": int(g["objects"]),
               "dtype": g["dtype"] or None, "pinned_bytes": int(g["pinned_bytes"]) or None,
               "shared_bytes": int(g["shared_bytes"]) or None,
               "ranges": [{"address": int(a), "nbytes": int(n)} for a, n in g["ranges"]]}
              for g in result["groups"]]
    return {"mode": result["mode"], "partial": _census_text(result["partial"]) or None,
            "duration_seconds": float(result["duration_seconds"]),
            "objects_seen": int(result["objects_seen"]), "storages": int(result["storages"]),
            "host_bytes": int(result["host_bytes"]), "gpu_bytes": int(result["gpu_bytes"]),
            "pinned_bytes": int(result["pinned_bytes"]),
            "shared_bytes": int(result["shared_bytes"]),
            "unreachable_bytes": int(result["unreachable_bytes"]), "groups": groups,
            "other_groups": int(result["other_groups"]),
            "other_bytes": int(result["other_bytes"])}
