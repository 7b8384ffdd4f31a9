"""The CPU stand-in for TorchTPU, activated by sitecustomize.py in a verify subprocess.

A test double, not TorchTPU: it lets a migrated program run unchanged where there is no
TPU, with every tensor computed on the CPU. How:

* "tpu" is made a real PyTorch device name the way torch_tpu itself does it (rename
  PrivateUse1, generate `.tpu()` / `.is_tpu`, register a device module, hooks and a
  device guard through torch's Python-backend hooks), so `torch.device("tpu")`, "tpu:0"
  strings, `device="tpu"`, `.to("tpu")`, `Module.to("tpu")` all parse and dispatch.
* One fallback kernel for the PrivateUse1 dispatch key catches every op that would
  allocate on "tpu" (factories, `_to_copy`, ...) and runs it with device=cpu instead.
  The result is an ordinary CPU tensor, so everything downstream is stock CPU PyTorch.
  `.to("tpu")` still copies, as it did on XLA.
* The Python entry points that choose a backend by name are mapped at the boundary:
  `torch.autocast("tpu")` -> CPU autocast (bf16), `torch.compile(backend="tpu")` -> a
  real CPU dynamo backend, `init_process_group("tpu")` -> gloo, FSDP2's `fully_shard`
  -> a CPU mesh of the same ranks (DeviceMesh and DTensor on "tpu" need nothing more);
  `torch.accelerator` reports the "tpu" devices and its synchronize is a no-op (CPU work
  is synchronous).
* `torch.tpu` mirrors the public names of torch_tpu 0.2.0 with CPU meanings, and, like
  TorchTPU on torch >= 2.11, the names it marks Internal raise when user code calls them.

Both modes ("cpu" and "guard") block torch_xla and optimum.tpu and record every attempt
to import them, so verify can prove the migrated program did not use them.
"""
from __future__ import annotations

import atexit
import contextlib
import enum
import importlib.abc
import importlib.machinery
import json
import os
import sys
import types
from typing import Any

_BLOCKED = ("torch_xla", "optimum.tpu")
_MODE = ""
_ATTEMPTS: list[dict[str, str]] = []


def _blocked(fullname: str) -> bool:
    return any(fullname == b or fullname.startswith(b + ".") for b in _BLOCKED)


def _caller() -> str:
    """file:line of the first frame outside the import machinery and this file."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<frozen") and name != __file__ and "importlib" not in name:
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


class _Blocker(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        raise ModuleNotFoundError(
            f"{module.__name__} is blocked by xla2tpu verify: the migrated program must "
            "not use torch_xla / optimum.tpu",
            name=module.__name__,
        )


class _TorchTpuStub(importlib.abc.Loader):
    """`import torch_tpu` (kept by IMP03) must not load the real runtime on CPU."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__name__ != "torch_tpu":
            raise ModuleNotFoundError(
                f"{module.__name__} is not provided by the xla2tpu CPU stand-in",
                name=module.__name__,
            )
        module.__version__ = "0.0+xla2tpu.cpu-standin"  # type: ignore[attr-defined]


class _After(importlib.abc.Loader):
    """Wraps a module's own loader so the stand-in patches it once its import finished:
    lazy, so programs that set environment variables before importing torch still work,
    and a module the program never imports costs nothing."""

    def __init__(self, inner: importlib.abc.Loader, patch: Any) -> None:
        self.inner = inner
        self.patch = patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.inner.exec_module(module)
        self.patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def _real_spec(self, fullname: str, path: Any, target: Any) -> Any:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if _blocked(fullname):
            _ATTEMPTS.append({"module": fullname, "from": _caller()})
            if self._real_spec(fullname, path, target) is None:
                return None  # absent anyway: behave exactly like absence
            return importlib.machinery.ModuleSpec(fullname, _Blocker())
        if _MODE != "cpu":
            return None
        if fullname == "torch_tpu" or fullname.startswith("torch_tpu."):
            return importlib.machinery.ModuleSpec(
                fullname, _TorchTpuStub(), is_package=fullname == "torch_tpu"
            )
        patch = _AFTER_IMPORT.get(fullname)
        if patch is not None:
            spec = self._real_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _After(spec.loader, patch)
            return spec
        return None


def _write_report() -> None:
    path = os.environ.get("XLA2TPU_STANDIN_REPORT")
    if not path:
        return
    record = {
        "pid": os.getpid(),
        "mode": _MODE,
        "attempts": _ATTEMPTS,
        "loaded": sorted(m for m in sys.modules if _blocked(m)),
    }
    with open(path, "a", encoding="utf-8") as f:  # one line per process (spawned workers too)
        f.write(json.dumps(record) + "\n")


def activate(mode: str) -> None:
    global _MODE
    _MODE = mode
    sys.meta_path.insert(0, _Finder())
    atexit.register(_write_report)
    if mode == "cpu" and "torch" in sys.modules:  # imported by an earlier sitecustomize
        _install(sys.modules["torch"])


# ----------------------------------------------------------------------------- torch


def _install(torch: Any) -> None:
    if getattr(torch, "_xla2tpu_standin", False):
        return
    torch._xla2tpu_standin = True
    _register_device(torch)
    _patch_accelerator(torch)
    _patch_autocast(torch)
    _patch_compile(torch)
    _patch_distributed(torch)
    if "torch.distributed.fsdp" in sys.modules:  # imported while torch itself loaded
        _patch_fsdp(sys.modules["torch.distributed.fsdp"])


def _register_device(torch: Any) -> None:
    cpu = torch.device("cpu")

    class Hooks(torch._C._acc.PrivateUse1Hooks):  # what torch asks a backend before use
        def is_available(self) -> bool:
            return True

        def has_primary_context(self, dev_id: int) -> bool:
            return True

        def is_built(self) -> bool:
            return True

    class Guard(torch._C._acc.DeviceGuard):
        def type_(self) -> Any:
            return torch._C._autograd.DeviceType.PrivateUse1

    torch.utils.rename_privateuse1_backend("tpu")
    torch.utils.generate_methods_for_privateuse1_backend()  # as torch_tpu: no storage methods
    torch._register_device_module("tpu", _make_tpu_module(torch))
    torch._C._acc.register_python_privateuseone_hook(Hooks())
    torch._C._acc.register_python_privateuseone_device_guard(Guard())

    def to_cpu(value: Any) -> Any:
        if isinstance(value, torch.device) and value.type == "tpu":
            return cpu
        if isinstance(value, (list, tuple)):
            return type(value)(to_cpu(v) for v in value)
        return value

    def fallback(op: Any, *args: Any, **kwargs: Any) -> Any:
        # Reached only by ops whose dispatch key came from a "tpu" device argument
        # (no tensor ever lives on "tpu"): rerun them with that argument on the CPU.
        return op(*to_cpu(args), **{k: to_cpu(v) for k, v in kwargs.items()})

    lib = torch.library.Library("_", "IMPL")
    lib.fallback(fallback, dispatch_key="PrivateUse1")
    torch._xla2tpu_standin_lib = lib  # the registration lives as long as the Library
    _patch_host_paths(torch, to_cpu)


def _patch_host_paths(torch: Any, to_cpu: Any) -> None:
    # Storages are the one allocation that bypasses the dispatcher (a "tpu" storage has
    # no allocator and crashes), so torch.load's map_location is mapped instead.
    load = torch.load

    def map_location(loc: Any) -> Any:
        if isinstance(loc, str) and loc.split(":")[0] == "tpu":
            return "cpu"
        if isinstance(loc, dict):
            return {k: map_location(v) for k, v in loc.items()}
        return to_cpu(loc)

    def load_on_cpu(f: Any, map_location_: Any = None, *args: Any, **kwargs: Any) -> Any:
        if "map_location" in kwargs:
            map_location_ = kwargs.pop("map_location")
        return load(f, map_location(map_location_), *args, **kwargs)

    load_on_cpu.__doc__ = load.__doc__
    torch.load = load_on_cpu

    # Pinning asks the accelerator's allocator, which the stand-in does not have; pinned
    # memory only speeds host-to-device copies, and here host and device are one.
    torch.Tensor.pin_memory = lambda self, device=None: self
    torch.Tensor.is_pinned = lambda self, device=None: False


# The chips this host pretends to have (a case's `devices`): a launch spawns one process
# per chip, and each process still sees one "tpu" device, its own.
_DEVICES = int(os.environ.get("XLA2TPU_STANDIN_DEVICES", "1"))


def _patch_accelerator(torch: Any) -> None:
    acc = torch.accelerator
    acc.device_count = lambda: _DEVICES

    def synchronize(device: Any = None) -> None:
        """CPU kernels are synchronous: nothing is ever pending."""

    acc.synchronize = synchronize

    def current_stream(device: Any = None) -> Any:
        return torch.Stream(device="cpu")

    acc.current_stream = current_stream
    acc.set_stream = lambda stream: None
    acc.empty_cache = lambda: None
    acc.memory_allocated = lambda device=None: 0
    acc.max_memory_allocated = lambda device=None: 0

    def set_device_index(device: Any) -> None:
        index = device.index if isinstance(device, torch.device) else device
        if index not in (None, 0, -1):  # like TorchTPU: only the process's own device
            raise ValueError(f"cpu-standin has one tpu device per process, not {index}")

    acc.set_device_index = set_device_index
    acc.set_device_idx = set_device_index

    @contextlib.contextmanager
    def device_index(device: Any) -> Any:
        set_device_index(device)
        yield

    acc.device_index = device_index


def _patch_autocast(torch: Any) -> None:
    autocast = torch.amp.autocast_mode.autocast
    original = autocast.__init__

    # The same signature as the original: Dynamo binds autocast's arguments by name.
    def __init__(self: Any, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: Any = None) -> None:
        if device_type == "tpu":  # TPU autocast is bf16; run the CPU autocast policy
            device_type = "cpu"
            dtype = torch.bfloat16 if dtype is None else dtype
        original(self, device_type, dtype, enabled, cache_enabled)

    autocast.__init__ = __init__


def _compile_backend_name() -> str:
    """aot_eager: Dynamo capture, guards and AOTAutograd as on TPU, without Inductor's
    C++ build (~25 s for a first graph on two cores), which says nothing about XLA
    anyway. XLA2TPU_STANDIN_COMPILE_BACKEND=inductor selects torch_tpu's own CPU choice."""
    return os.environ.get("XLA2TPU_STANDIN_COMPILE_BACKEND") or "aot_eager"


def _patch_compile(torch: Any) -> None:
    original = torch.compile

    def tpu_backend(gm: Any, example_inputs: Any, **options: Any) -> Any:
        # TpuBackend options (async_compile, num_dynamic_buckets, ...) have no CPU meaning.
        from torch._dynamo.backends.registry import lookup_backend

        return lookup_backend(_compile_backend_name())(gm, example_inputs)

    def register() -> None:
        # Importing dynamo costs seconds, so only on the first compile that needs "tpu".
        from torch._dynamo.backends import registry

        registry._BACKENDS.pop("tpu", None)
        registry._COMPILER_FNS["tpu"] = tpu_backend

    def compile(model: Any = None, **kwargs: Any) -> Any:
        if kwargs.get("backend") == "tpu":
            register()
            kwargs["backend"] = tpu_backend
            kwargs.setdefault("dynamic", False)  # torch_tpu's default for its backend
            # options are TpuBackend options; inductor would reject them
            kwargs.pop("options", None)
        return original(model, **kwargs)

    compile.__doc__ = original.__doc__
    torch.compile = compile


def _patch_distributed(torch: Any) -> None:
    if not torch.distributed.is_available():
        return
    dist = torch.distributed
    c10d = dist.distributed_c10d
    tpu_names = {"tpu", "tpu_dist"}
    dist.Backend.default_device_backend_map["tpu"] = "gloo"

    def map_backend(backend: Any) -> Any:
        return "gloo" if isinstance(backend, str) and backend.lower() in tpu_names else backend

    def wrap(name: str) -> None:
        original = getattr(c10d, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if args and name == "init_process_group":  # backend is its first parameter
                args = (map_backend(args[0]), *args[1:])
            if "backend" in kwargs:
                kwargs["backend"] = map_backend(kwargs["backend"])
            return original(*args, **kwargs)

        wrapper.__name__ = name
        wrapper.__doc__ = original.__doc__
        setattr(c10d, name, wrapper)
        setattr(dist, name, wrapper)

    wrap("init_process_group")
    wrap("new_group")


def _patch_fsdp(fsdp: Any) -> None:
    """FSDP2 moves every parameter to the device of its mesh and checks that it got there;
    a "tpu" tensor of the stand-in lives on the CPU, so `fully_shard` shards over a CPU
    mesh of the same ranks (and dimension names) instead of the "tpu" one it is given."""
    import functools

    import torch.distributed as dist
    from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

    original = fsdp.fully_shard
    if getattr(original, "_xla2tpu_standin", False):
        return
    on_cpu: dict[int | None, Any] = {}  # one CPU mesh per mesh given: groups are made once

    def cpu_mesh(mesh: Any) -> Any:
        key = None if mesh is None else id(mesh)
        if key not in on_cpu:
            on_cpu[key] = (init_device_mesh("cpu", (dist.get_world_size(),)) if mesh is None
                           else DeviceMesh("cpu", mesh.mesh, mesh_dim_names=mesh.mesh_dim_names))
        return on_cpu[key]

    @functools.wraps(original)
    def fully_shard(module: Any, *args: Any, mesh: Any = None, **kwargs: Any) -> Any:
        if mesh is None or mesh.device_type == "tpu":
            mesh = cpu_mesh(mesh)
        return original(module, *args, mesh=mesh, **kwargs)

    fully_shard._xla2tpu_standin = True  # type: ignore[attr-defined]
    fsdp.fully_shard = fully_shard


# ----------------------------------------------------------------------------- torch.tpu

# torch_tpu 0.2.0 marks these Internal on torch >= 2.11: they raise from user code.
_INTERNAL = {
    "synchronize": "synchronize",
    "device_count": "device_count",
    "is_available": "is_available",
    "current_device": "current_device_index",
    "set_device": "set_device_index",
    "device": "device_index",
    "current_stream": "current_stream",
    "set_stream": "set_stream",
    "get_rng_state": "",
    "initial_seed": "",
}


class EagerMode(enum.Enum):
    DEFER_NEVER = 0
    DEFER_NEVER_AND_LAUNCH_BLOCKING = 1
    DEFER_AND_FUSE = 2


class Precision(enum.Enum):
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2


class _TpuModule(types.ModuleType):
    """`torch.tpu` with CPU meanings. eager_mode is a settable module property in torch_tpu."""

    _eager = EagerMode.DEFER_NEVER

    @property
    def eager_mode(self) -> EagerMode:
        return type(self)._eager

    @eager_mode.setter
    def eager_mode(self, mode: EagerMode) -> None:
        type(self)._eager = EagerMode(mode)


def _from_torch(depth: int = 2) -> bool:
    caller = sys._getframe(depth).f_globals.get("__name__", "")
    return caller == "torch" or caller.startswith(("torch.", "torch_tpu"))


def _make_tpu_module(torch: Any) -> types.ModuleType:
    mod = _TpuModule("torch.tpu", "TorchTPU device module (xla2tpu CPU stand-in)")
    gen = torch.default_generator  # tensors "on tpu" are CPU tensors: same generator

    def internal(name: str, impl: Any) -> Any:
        def f(*args: Any, **kwargs: Any) -> Any:
            if not _from_torch():
                instead = _INTERNAL[name]
                hint = f" Use torch.accelerator.{instead} instead." if instead else ""
                raise RuntimeError(f"torch.tpu.{name} is internal to TorchTPU.{hint}")
            return impl(*args, **kwargs)

        f.__name__ = name
        return f

    impls: dict[str, Any] = {
        "synchronize": lambda device=None: None,
        "device_count": lambda: _DEVICES,
        "is_available": lambda: True,
        "current_device": lambda: 0,
        "set_device": lambda device: None,
        "device": lambda device: contextlib.nullcontext(),
        "current_stream": lambda device=None: torch.Stream(device="cpu"),
        "set_stream": lambda stream: None,
        "get_rng_state": lambda device="tpu": gen.get_state(),
        "initial_seed": lambda: gen.initial_seed(),
    }
    for name, impl in impls.items():
        setattr(mod, name, internal(name, impl))

    def manual_seed(seed: int) -> None:
        gen.manual_seed(int(seed))

    @contextlib.contextmanager
    def set_eager_mode(mode: EagerMode) -> Any:
        old = mod.eager_mode
        mod.eager_mode = mode
        try:
            yield
        finally:
            mod.eager_mode = old

    @contextlib.contextmanager
    def precision(p: Precision) -> Any:  # CPU f32 matmuls are already full precision
        yield

    class Stream:  # TorchTPU streams are placeholders too
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def synchronize(self) -> None:
            pass

    class Event(Stream):
        def record(self, stream: Any = None) -> None:
            pass

    mod.__dict__.update(
        manual_seed=manual_seed,
        manual_seed_all=manual_seed,
        set_rng_state=lambda state, device="tpu": gen.set_state(state),
        default_generators=(gen,),
        EagerMode=EagerMode,
        set_eager_mode=set_eager_mode,
        Precision=Precision,
        precision=precision,
        allow_excess_precision=False,
        get_device_name=lambda device=None: "cpu-standin",
        get_device_properties=lambda device=None: types.SimpleNamespace(
            name="cpu-standin", total_memory=0
        ),
        is_initialized=lambda: True,
        get_amp_supported_dtype=lambda: [torch.bfloat16, torch.float16, torch.float32],
        Stream=Stream,
        Event=Event,
        stream=lambda s=None: contextlib.nullcontext(),
        default_stream=lambda device=None: Stream(),
        device_of=lambda t: contextlib.nullcontext(),
        _is_in_bad_fork=lambda: False,
    )

    distributed = types.ModuleType("torch.tpu.distributed")

    def set_tpu_launch_env(nproc_per_node: int | None = None, **kwargs: Any) -> None:
        # On one CPU host the only launch facts are the rendezvous address and size.
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(_free_port()))
        if nproc_per_node is not None:
            os.environ.setdefault("WORLD_SIZE", str(nproc_per_node))

    def topology_aware_mesh(mesh_shape: Any, dcn_mesh_shape: Any = None) -> Any:
        shape = tuple(mesh_shape)
        return torch.arange(int(torch.tensor(shape).prod())).reshape(shape)

    distributed.__dict__.update(
        set_tpu_launch_env=set_tpu_launch_env,
        spmd_safe=lambda fn=None, **kw: fn if fn is not None else (lambda f: f),
        topology_aware_mesh=topology_aware_mesh,
    )
    mod.topology_aware_mesh = topology_aware_mesh  # deprecated 0.2.0 spelling

    compiler = types.ModuleType("torch.tpu.compiler")
    compiler.custom_compiler_options = lambda options=None: contextlib.nullcontext()

    ops = types.ModuleType("torch.tpu.ops")
    ops.optimization_barrier = lambda tensors: list(tensors)

    profiler = types.ModuleType("torch.tpu.profiler")

    def TpuProfilerConfig(run_dir: str | None = None, **kwargs: Any) -> Any:
        return torch._C._profiler._ExperimentalConfig()

    profiler.TpuProfilerConfig = TpuProfilerConfig

    for sub in (distributed, compiler, ops, profiler):
        setattr(mod, sub.__name__.rsplit(".", 1)[1], sub)
        sys.modules[sub.__name__] = sub
    return mod


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# Modules the stand-in patches once they are imported.
_AFTER_IMPORT = {"torch": _install, "torch.distributed.fsdp": _patch_fsdp}
