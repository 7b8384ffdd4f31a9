"""What a file is, computed once before any rule runs: how its processes start, which
hardware it targets, whether it is SPMD code, whether a wrapper reduces its gradients.

A rewrite's correctness often depends on more than its own call: `xr.global_ordinal()`
→ `get_rank() if is_initialized() else 0` is right in a program that runs one process and
wrong in an `xmp.spawn` worker, which has no process group. Rule cases test these facts in
the catalogue (`fact:processes=one`, `not-fact:spmd`; see conditions.py), and every fact
carries the line it came from, so a withheld or downgraded fix can say why
(`check --show-facts`, the JSON output, the finding's own message).

Cost: the facts come from CPython's tree that decode() already built. A regex over the
text finds the lines that can hold evidence; only the top-level statements spanning such a
line are walked, so a long file with nothing to say costs one regex search.
"""

from __future__ import annotations

import ast
import bisect
import functools
import io
import os
import re
import tokenize
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from xla2tpu.trees.blocks import first_line, module_level
from xla2tpu.project.canonical import Canonicaliser
from xla2tpu.trees.order import child_nodes, walk
from xla2tpu.project.pins import forget_pins, transformers_pin


# The facts and the values each can take (the catalogue validates `fact:` conditions against it).
VALUES: dict[str, tuple[str, ...]] = {
    # spawn: an xmp.spawn / torch_xla.launch / run_multiprocess / torch.multiprocessing.spawn
    # launch that TorchTPU does not keep; process-group: the file creates one (or wraps the model
    # in DDP/FSDP, which needs one); one: a program that starts no other process and never asks
    # its rank; unknown: library code (no `__main__`, no launch), or a program that asks its rank but
    # starts no process (run alone, or by a launcher such as torchrun);
    # launched: this fix migrates the file's torch_xla launch (XLA601), whose worker joins the
    # "tpu" process group before it runs the program's code (never the fact of code as written).
    "processes": ("spawn", "process-group", "one", "unknown", "launched"),
    "hardware": ("tpu", "other", "unknown"),
    "spmd": ("yes", "no"),
    # The model is wrapped in DDP / FSDP (torch's or torch_xla's), which reduces the gradients.
    "data-parallel": ("yes", "no"),
    # The Transformers release the project holds the file to (pins.py): old is 4.x, where
    # `is_torch_tpu_available` meant torch_xla or was gone; new has TorchTPU support.
    "transformers": ("old", "new", "unknown"),
}

# The entry points torch_xla's launcher scripts import by module name and start in every
# process, with the launcher each convention comes from: `_mp_fn` (the `xla_spawn.py` of
# Transformers and accelerate), `_mp_entry` (timm's `launch_xla.py`).
ENTRY_POINTS = {"_mp_fn": "xla_spawn.py", "_mp_entry": "launch_xla.py"}
# The reason a module's `processes=spawn` starts with when it defines one (`defines `_mp_fn``):
# the project model hands such a module the launch of its launcher.
ENTRY = "defines `"


def entry_point(reason: str) -> str | None:
    """The entry point a `processes=spawn` reason says the module defines, or None."""
    return next((name for name in ENTRY_POINTS if reason.startswith(f"{ENTRY}{name}`")), None)
_XLA_LAUNCH = ("torch_xla.distributed.xla_multiprocessing.spawn", "torch_xla.launch", "torch_xla.torch_xla.launch")
_TORCH_LAUNCH = ("torch.multiprocessing.spawn", "torch.multiprocessing.start_processes")
_PROCESS_GROUP = ("torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group")
_DATA_PARALLEL = (
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel", "torch.distributed.fsdp.fully_shard",
    "torch.distributed._composable.fsdp.fully_shard",
)
_XLA_DATA_PARALLEL = "torch_xla.distributed.fsdp."
_RANK = (
    "torch_xla.core.xla_model.get_ordinal", "torch_xla.core.xla_model.xrt_world_size",
    "torch_xla.core.xla_model.get_local_ordinal", "torch_xla.core.xla_model.is_master_ordinal",
    "torch_xla.runtime.world_size", "torch_xla.runtime.global_ordinal", "torch_xla.runtime.local_ordinal",
    "torch_xla.runtime.process_index", "torch_xla.runtime.process_count",
    "torch.utils.data.DistributedSampler", "torch.utils.data.distributed.DistributedSampler",
    "torch.distributed.get_rank", "torch.distributed.get_world_size",
)
_SPMD = ("torch_xla.distributed.spmd", "torch_xla.runtime.use_spmd", "torch_xla.runtime.is_spmd",
         "optimum.tpu.fsdp_v2.use_fsdp_v2")  # Optimum TPU's FSDPv2 only turns SPMD on
_LOADER = "torch_xla.distributed.parallel_loader.MpDeviceLoader"
OTHER_HARDWARE_MODULES = ("torch_neuronx", "torch_neuron", "neuronx_distributed", "optimum.neuron",
                           "libneuronxla", "tt_torch", "torchacc")
# Folders that hold another vendor's torch_xla package or samples: a file inside one is
# that vendor's code even when it names no vendor module itself (relative imports only).
_OTHER_HARDWARE_FOLDERS = ("torch_neuronx", "torch-neuronx", "torch_neuron", "neuronx_distributed",
                           "tt_torch", "vllm_tt", "torchacc")
# torch.compile backends of other vendors' XLA devices.
_OTHER_BACKENDS = ("tt", "neuron", "neuronx")
# Environment variables only another vendor's runtime reads.
_OTHER_ENV = {"AWS Neuron": re.compile(r"NEURON_[A-Z0-9_]+"), "Tenstorrent": re.compile(r"(?:TTXLA|TT_METAL|TT_MLIR)_[A-Z0-9_]+")}
_TPU_ENV = re.compile(r"(?:XRT_)?TPU_[A-Z0-9_]+|XRT_TPU_CONFIG")

# Lines that can hold evidence: only the statements spanning one are walked.
_CANDIDATE_WORDS = (
    "spawn", "launch", "run_multiprocess", "start_processes", "init_process_group", "DistributedDataParallel", "DDP",
    "FullyShardedDataParallel", "fully_shard", "FSDP", "fsdp", "ordinal", "world_size", "DistributedSampler", "get_rank",
    "process_index", "process_count", "set_device_type", "PJRT_DEVICE", "neuron", "tt_torch", "torchacc", "NEURON_",
    "TTXLA_", "TT_METAL_", "TT_MLIR_", "TPU_", "spmd", "sharding", "Sharding", "Mesh", "MpDeviceLoader", "XLA_USE_SPMD",
    "backend", "nprocs", *ENTRY_POINTS,
)


def _by_first_letter(words: tuple[str, ...]) -> re.Pattern[str]:
    """Any of `words`, grouped by their first letter: re tries an alternative at every
    position its first letter may start, so the grouped form scans a text in two thirds
    of the time."""
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault(word[0], []).append(re.escape(word[1:]))
    return re.compile("|".join(f"{re.escape(first)}(?:{'|'.join(rest)})" for first, rest in groups.items()))


_CANDIDATE = _by_first_letter(_CANDIDATE_WORDS)

_IMPORT = re.compile(r"import\b")  # without a leading \b: re then searches for the word itself, 20x faster


@dataclass(frozen=True)
class Evidence:
    line: int  # 1-based
    col: int  # 0-based
    end_col: int
    text: str  # the line, whitespace collapsed and shortened


@dataclass(frozen=True)
class Fact:
    name: str
    value: str
    evidence: Evidence | None = None
    reason: str = ""  # what the evidence shows, or why there is none

    def describe(self) -> str:
        """One line for messages and `--show-facts`: processes=spawn (what it shows, line 12 `xmp.spawn(...)`)."""
        where = f"line {self.evidence.line} `{self.evidence.text}`" if self.evidence else ""
        detail = ", ".join(part for part in (self.reason, where) if part)
        return f"{self.name}={self.value} ({detail})" if detail else f"{self.name}={self.value}"

    def as_json(self) -> dict[str, object]:
        data: dict[str, object] = {"value": self.value, "reason": self.reason}
        if self.evidence is not None:
            e = self.evidence
            data.update(line=e.line, column=e.col + 1, end_column=e.end_col + 1, text=e.text)
        return data


@dataclass(frozen=True)
class Facts:
    processes: Fact
    hardware: Fact
    spmd: Fact
    data_parallel: Fact
    transformers: Fact

    def get(self, name: str) -> Fact:
        return getattr(self, name.replace("-", "_"))

    def __iter__(self) -> Iterator[Fact]:
        return iter((self.processes, self.hardware, self.spmd, self.data_parallel, self.transformers))

    def as_json(self) -> dict[str, dict[str, object]]:
        return {fact.name: fact.as_json() for fact in self}

    @classmethod
    def from_json(cls, data: dict[str, dict]) -> Facts:
        """The inverse of `as_json` (the results cache stores facts so)."""
        facts = []
        for name in VALUES:
            entry = data[name]
            evidence = None
            if "line" in entry:
                col = int(entry["column"]) - 1
                evidence = Evidence(int(entry["line"]), col, int(entry.get("end_column", col + 1)) - 1, str(entry["text"]))
            facts.append(Fact(name, str(entry["value"]), evidence, str(entry["reason"])))
        return cls(*facts)


UNKNOWN = Facts(
    Fact("processes", "unknown", reason="not analysed"),
    Fact("hardware", "unknown", reason="not analysed"),
    Fact("spmd", "no", reason="not analysed"),
    Fact("data-parallel", "no", reason="not analysed"),
    Fact("transformers", "unknown", reason="not analysed"),
)


class _Scan:
    """The first evidence of each kind in the walked statements."""

    def __init__(self, text: str, canonical: Canonicaliser) -> None:
        self.text = text
        self.canonical = canonical
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.aliases: dict[str, str] = {}
        self.found: dict[str, tuple[Evidence, str]] = {}  # kind -> first evidence, what it shows
        self._statement: ast.stmt | None = None  # the top-level statement walked now
        self._off_xla: set[int] | None = None
        self.types: set[int] = set()  # names of classes listed or tested for, not used (`isinstance(m, (DDP, DP))`)
        self.uses_xla = False
        # The lines that may show evidence (_CANDIDATE), or hold an import, which binds a name
        # the evidence after it may be spelled with: a statement spanning none is not walked.
        self.lines = sorted({bisect.bisect_right(self.starts, m.start()) for m in _CANDIDATE.finditer(text)})
        self._walked = sorted({*self.lines, *(bisect.bisect_right(self.starts, m.start()) for m in _IMPORT.finditer(text))})

    def may_hold(self, statement: ast.stmt) -> bool:
        """Whether `statement` spans a line that may show evidence or hold an import."""
        first = bisect.bisect_left(self._walked, first_line(statement))  # a definition's decorators too
        return first < len(self._walked) and self._walked[first] <= (statement.end_lineno or statement.lineno)

    def evidence(self, node: ast.AST) -> Evidence:
        line = node.lineno  # type: ignore[attr-defined]
        source = self.text[self.starts[line - 1]: self.starts[line] if line < len(self.starts) else None]
        text = " ".join(_without_comment(source).split())
        text = text if len(text) <= 80 else text[:77] + "..."
        end_col = node.end_col_offset if node.end_lineno == line else len(source.rstrip("\r\n"))  # type: ignore[attr-defined]
        return Evidence(line, node.col_offset, end_col or node.col_offset, text)  # type: ignore[attr-defined]

    def note(self, kind: str, node: ast.AST, what: str) -> None:
        if kind not in self.found:
            self.found[kind] = (self.evidence(node), what)

    def bind(self, node: ast.Import | ast.ImportFrom) -> None:
        module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
        if isinstance(node, ast.ImportFrom) and node.level:
            # The project's own module, resolved by the project model (or else not at all).
            module = self.canonical.absolute(node.level, module) or ""
            if not module:
                return
        for alias in node.names:
            qualname = f"{module}.{alias.name}" if module else alias.name
            if qualname.startswith("torch_xla"):
                self.uses_xla = True
            if alias.name == "*":
                continue
            bound = alias.asname or (alias.name if module else alias.name.split(".", 1)[0])
            full = qualname if (alias.asname or module) else bound
            self.aliases[bound] = self.canonical(full)
            if any(qualname == m or qualname.startswith(m + ".") for m in OTHER_HARDWARE_MODULES):
                self.note("other", node, f"imports `{qualname}`")
            if qualname == "torch_xla.distributed.spmd" or self.canonical(qualname).startswith("torch_xla.distributed.spmd"):
                self.note("spmd", node, "imports torch_xla's SPMD API")

    def resolve(self, node: ast.expr) -> str | None:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        return ".".join([self.aliases[node.id], *reversed(parts)])

    def reference(self, node: ast.expr, qualname: str) -> None:
        if qualname.startswith(_SPMD):
            self.note("spmd", node, f"uses `{qualname.rsplit('.', 1)[-1]}`")
        shown = []
        if qualname in _PROCESS_GROUP or qualname in _DATA_PARALLEL:
            shown.append(("process-group", "creates a process group"))
        if qualname in _DATA_PARALLEL or qualname.startswith(_XLA_DATA_PARALLEL):
            shown.append(("data-parallel", "wraps the model in DDP/FSDP"))
        if qualname in _RANK:
            shown.append(("rank", f"asks for the rank or world size (`{qualname.rsplit('.', 1)[-1]}`)"))
        shown = [(kind, what) for kind, what in shown if kind not in self.found]  # the first evidence is kept
        if not shown or id(node) in self.types or id(node) in self.off_xla():
            return  # a class tested for (isinstance), or on the branch the file takes off torch_xla
        for kind, what in shown:
            self.note(kind, node, what)

    def off_xla(self) -> set[int]:
        """The nodes of the statement walked now that are on a branch taken off XLA (worked
        out when first needed: most statements never ask)."""
        if self._off_xla is None:
            self._off_xla = _non_xla_branches(self._statement) if self._statement is not None else set()
        return self._off_xla

    def call(self, node: ast.Call, qualname: str | None) -> None:
        if qualname is not None:
            last = qualname.rsplit(".", 1)[-1]
            if qualname in _XLA_LAUNCH or (qualname.startswith("torch_xla.") and last in ("run_multiprocess", "spawn")):
                self.note("spawn", node, "starts its processes with a torch_xla launch")
            elif qualname in _TORCH_LAUNCH:
                self.note("torch-spawn", node, "starts its processes with torch.multiprocessing")
            elif qualname.startswith("torch_xla.") and last == "set_device_type" and node.args:
                self._device(node, node.args[0], "set_device_type")
            elif qualname == _LOADER and any(k.arg == "input_sharding" for k in node.keywords):
                self.note("spmd", node, "loads data with `input_sharding`")
            elif qualname == "torch.compile":
                backend = next((_string(k.value) for k in node.keywords if k.arg == "backend"), None)
                if backend in _OTHER_BACKENDS:
                    self.note("other", node, f"compiles for backend {backend!r}")
        if node.args and isinstance(node.args[0], ast.Name) and any(k.arg == "nprocs" for k in node.keywords):
            # A launch through a helper of the project's (a test fixture running xmp.spawn).
            helper = ast.unparse(node.func) if isinstance(node.func, (ast.Name, ast.Attribute)) else "a helper"
            self.note("helper-spawn", node, f"starts `{node.args[0].id}` in `nprocs` processes through `{helper}(...)`")
        # PJRT_DEVICE as a call argument: environ.setdefault / putenv / get("PJRT_DEVICE", "CPU").
        if len(node.args) >= 2 and _string(node.args[0]) == "PJRT_DEVICE":
            self._device(node, node.args[1], "PJRT_DEVICE")
        for keyword in node.keywords:
            if keyword.arg == "PJRT_DEVICE":
                self._device(node, keyword.value, "PJRT_DEVICE")

    def _device(self, node: ast.AST, value: ast.expr, how: str) -> None:
        device = _string(value)
        if not device:  # `os.environ.get("PJRT_DEVICE", "") != ""` asks whether one is set
            return
        if device.upper() == "TPU":
            self.note("tpu", node, f"{how} is TPU")
        else:
            self.note("other", node, f"{how} is {device!r}")

    def constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str):
            return
        vendor = next((v for v, pattern in _OTHER_ENV.items() if pattern.fullmatch(node.value)), None)
        if vendor is not None:
            self.note("other", node, f"sets or reads {node.value} ({vendor})")
        elif node.value == "XLA_USE_SPMD":
            self.note("spmd", node, "reads or sets XLA_USE_SPMD")
        elif _TPU_ENV.fullmatch(node.value):
            self.note("tpu", node, f"uses {node.value}")

    def walk(self, statement: ast.stmt) -> None:
        self._statement, self._off_xla = statement, None
        if isinstance(statement, ast.FunctionDef) and statement.name in ENTRY_POINTS:
            # The entry point torch_xla's launcher scripts (`xla_spawn.py`, `xla_dist`) import
            # and start in every process: the module runs under a launch of another file.
            launcher = ENTRY_POINTS[statement.name]
            self.note("entry-spawn", statement,
                      f"{ENTRY}{statement.name}`, which torch_xla launchers (`{launcher}`) start in every process")
        todo = deque([statement])
        while todo:  # breadth first: a node comes before its children
            node = todo.popleft()
            if isinstance(node, ast.stmt) and node is not statement and not self.may_hold(node):
                continue  # as a top-level statement: none of its nodes can show a fact
            todo.extend(child_nodes(node))
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.bind(node)
            elif isinstance(node, ast.Call):
                if isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                    self.types.update(id(inner) for inner in ast.walk(node.args[1]))
                self.call(node, self.resolve(node.func))
            elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                self.types.update(id(element) for element in node.elts)
            elif isinstance(node, ast.Attribute | ast.Name):
                qualname = self.resolve(node)
                if qualname is not None:
                    self.reference(node, qualname)
            elif isinstance(node, ast.Constant):
                self.constant(node)
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if key is not None and _string(key) == "PJRT_DEVICE":
                        self._device(key, value, "PJRT_DEVICE")
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Subscript) and _string(t.slice) == "PJRT_DEVICE" for t in node.targets
            ):
                self._device(node, node.value, "PJRT_DEVICE")


def _non_xla_branches(statement: ast.stmt) -> set[int]:
    """The nodes on a branch taken only when the code is not on XLA: the body of
    `if backend != "xla":` / `if not is_torch_xla_available():` / `if kind == MULTI_CPU:`, the
    `else` of `if backend == "xla":`, and what follows `if is_xla(): ...; return` in its block.
    A process group created there says nothing of the XLA path (accelerate's, Lightning's and
    ignite's multi-backend setup code, the GPU half of a TPU-or-GPU script)."""
    off_xla: list[ast.stmt] = []
    sides = {id(node): _xla_side(node) for node in walk(statement) if isinstance(node, ast.If)}
    if not any(sides.values()):
        return set()
    for node in walk(statement):
        for block in (getattr(node, "body", None), getattr(node, "orelse", None)):
            if not isinstance(block, list):
                continue
            for index, inner in enumerate(block):
                if sides.get(id(inner)) == "body" and _leaves(inner.body) and not inner.orelse:  # type: ignore[attr-defined]
                    off_xla.extend(block[index + 1:])
                    break
        side = sides.get(id(node))
        if side is not None:
            off_xla.extend(node.orelse if side == "body" else node.body)  # type: ignore[attr-defined]
    return {id(inner) for branch in off_xla for inner in walk(branch)}


def _leaves(body: list[ast.stmt]) -> bool:
    return isinstance(body[-1], (ast.Return, ast.Raise))


# Spellings of a backend or distributed type that is not XLA: a branch testing for one of
# them runs off XLA.
_OTHER_BACKEND = re.compile(r"(?:MULTI_)?(?:GPU|CPU|NPU|XPU|MLU|HPU|SDAA|MUSA)|CUDA|NCCL|GLOO|MPI|MPS|DEEPSPEED|MEGATRON_LM|HOROVOD", re.I)


def _xla_side(test_holder: ast.If) -> str | None:
    """Which branch of an `if` the XLA path takes, "body" or "orelse", when its test says:
    the test names XLA (`backend == "xla"`, `not is_torch_xla_available()`), or compares
    with another backend only (`kind == MULTI_CPU`, `x and bnd in (NCCL, GLOO)`)."""
    test = test_holder.test
    negative = (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)) or (
        isinstance(test, ast.Compare) and all(isinstance(op, (ast.NotEq, ast.IsNot, ast.NotIn)) for op in test.ops))
    if any("xla" in word.lower() for word in _words(test)):
        return "orelse" if negative else "body"
    conjuncts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for conjunct in conjuncts:
        inner = conjunct.operand if isinstance(conjunct, ast.UnaryOp) and isinstance(conjunct.op, ast.Not) else conjunct
        if isinstance(inner, ast.Compare) and any(_OTHER_BACKEND.fullmatch(word) for word in _words(inner)):
            return "body" if negative else "orelse"
    return None


def _words(test: ast.expr) -> list[str]:
    return [
        _string(node) or (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else "")
        for node in ast.walk(test)
    ]


def _without_comment(line: str) -> str:
    """`line` without its trailing comment (a `#` inside a string stays)."""
    if "#" not in line:
        return line
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return line[: token.start[1]]
    except (tokenize.TokenError, SyntaxError):
        pass  # a line of a longer statement: a comment (if any) stays
    return line


def _string(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def is_main(node: ast.stmt) -> bool:
    """Whether the statement is the `if __name__ == "__main__":` block."""
    test = node.test if isinstance(node, ast.If) else None
    return (
        isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
        and any(_string(c) == "__main__" for c in test.comparators)
    )


def _script_code(node: ast.stmt, scan: _Scan) -> bool:
    """A top-level statement that does work when the module runs: a call of the module's own
    code (`train()`, `trainer.fit()`, `print(...)`), a loop, a `with`, or a torch_xla call,
    also as the value of an assignment (`device = xm.xla_device()`). Library modules bind
    names and configure libraries at import time (`logger = logging.getLogger(...)`,
    `warnings.filterwarnings(...)`, `sys.path.append(...)`): calls of an imported module
    other than torch_xla say nothing of how the module's processes start."""
    if isinstance(node, ast.Expr):
        value = node.value
        if isinstance(value, ast.Await):
            return True
        if not isinstance(value, ast.Call):
            return False
        qualname = scan.resolve(value.func)
        return qualname is None or qualname.startswith("torch_xla")
    if isinstance(node, (ast.For, ast.While, ast.With, ast.AsyncFor, ast.AsyncWith)):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
        return any(
            isinstance(call, ast.Call) and (scan.resolve(call.func) or "").startswith("torch_xla")
            for call in ast.walk(node.value)
        )
    return False


def compute(tree: ast.Module | None, text: str, canonical: Canonicaliser, path: str = "") -> Facts:
    """The facts of one file (UNKNOWN when CPython has no tree of it); `path` is where it
    lives, which can show the hardware (a file inside another vendor's package, or beside
    modules that run torch_xla on other hardware)."""
    if tree is None:
        return UNKNOWN
    scan = _scan(tree, text, canonical)
    main = next((node for node in tree.body if is_main(node)), None)
    script = main or next((node for node in tree.body if _script_code(node, scan)), None)
    return Facts(_processes(scan, main, script), _hardware(scan, path), _flag(scan, "spmd", "spmd"),
                 _flag(scan, "data-parallel", "data-parallel"), _transformers(text, path, canonical))


def _scan(tree: ast.Module, text: str, canonical: Canonicaliser) -> _Scan:
    scan = _Scan(text, canonical)
    for found in module_level(tree.body):  # imports first: later statements resolve through them
        if isinstance(found, (ast.Import, ast.ImportFrom)):
            scan.bind(found)
    lines = scan.lines
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        first = bisect.bisect_left(lines, node.lineno)
        if first < len(lines) and lines[first] <= (node.end_lineno or node.lineno):
            scan.walk(node)
    return scan


def _fact(name: str, value: str, found: tuple[Evidence, str]) -> Fact:
    return Fact(name, value, found[0], found[1])


def _processes(scan: _Scan, main: ast.stmt | None, script: ast.stmt | None) -> Fact:
    found = scan.found
    if "spawn" in found:
        return _fact("processes", "spawn", found["spawn"])
    for launch in ("torch-spawn", "helper-spawn"):  # in a torch_xla file: its workers have no process group
        if launch in found and scan.uses_xla:
            return _fact("processes", "spawn", found[launch])
    if "process-group" in found:
        return _fact("processes", "process-group", found["process-group"])
    if "entry-spawn" in found:  # a torch_xla launch by convention, in another file
        return _fact("processes", "spawn", found["entry-spawn"])
    if "rank" in found:
        evidence, what = found["rank"]
        how = "run as one process, or by a launcher such as torchrun" if script is not None else "launched from elsewhere"
        return Fact("processes", "unknown", evidence, f"{what} but starts no processes: {how}")
    if script is not None:
        what = "a `__main__` block" if script is main else "script code at module level"
        return Fact("processes", "one", scan.evidence(script), f"a program that starts no other process: {what}")
    return Fact("processes", "unknown", None, "library code: no `__main__` block and no launch; any number of processes may call it")


def _hardware(scan: _Scan, path: str) -> Fact:
    if "other" in scan.found:
        return _fact("hardware", "other", scan.found["other"])
    vendor = _vendor_folder(path)
    if vendor is not None:
        return vendor
    if "tpu" in scan.found:
        return _fact("hardware", "tpu", scan.found["tpu"])
    return _neighbours(path) or Fact("hardware", "unknown", None, "no hardware named in the code")


def _vendor_folder(path: str) -> Fact | None:
    folders = path.replace("\\", "/").split("/")[:-1]
    vendor = next((f for f in folders if f in _OTHER_HARDWARE_FOLDERS), None)
    if vendor is None and any(a == "optimum" and b == "neuron" for a, b in zip(folders, folders[1:])):
        vendor = "optimum/neuron"
    if vendor is None:
        return None
    return Fact("hardware", "other", None, f"the file lives in a {vendor} folder, another vendor's torch_xla code")


def location_key(path: str, data: bytes, transformers: bool = False) -> str:
    """What the file's facts depend on beyond its bytes, for the results cache: its folder,
    the modules beside it that import it (by name, size and time: never parsed here), the
    project's Transformers pin (read when the bytes name Transformers, or `transformers`:
    the project resolves some import of the file into it)."""
    vendor = _vendor_folder(path)
    importers = [f"{name}:{size}:{mtime}" for name, _, size, mtime in _importers(path)]
    pin = transformers_pin(path) if transformers or b"transformers" in data else None
    return "|".join((vendor.reason if vendor is not None else "", *importers, *(pin or ())))


def _transformers(text: str, path: str, canonical: Canonicaliser) -> Fact:
    if "transformers" not in text and not canonical.reaches("transformers"):
        return Fact("transformers", "unknown", None, "the file does not use Transformers")
    pin = transformers_pin(path)
    if pin is None:
        return Fact("transformers", "unknown", None, "no pin of the project holds the release")
    return Fact("transformers", pin[0], None, pin[1])


# Bytes without which a module cannot show its hardware: most of a folder is never parsed.
_HARDWARE_MARKERS = re.compile(
    rb"set_device_type|PJRT_DEVICE|neuron|tt_torch|torchacc|TTXLA_|TT_METAL_|TT_MLIR_|TPU_"
    rb"|backend\s*=\s*[\"'](?:tt|neuron|neuronx)[\"']"
)
# The modules beside it a module may import: `import utils`, `from utils import f`,
# `from .utils import f`, `from . import utils, other`.
_SIBLING_IMPORT = re.compile(rb"^[ \t]*(?:import[ \t]+(\w+)|from[ \t]+\.?(\w+)[ \t]+import|from[ \t]+\.[ \t]+import[ \t]+([\w, \t]+))", re.M)
_LARGEST_NEIGHBOUR = 1 << 20
# Each alternative of _HARDWARE_MARKERS holds one of these: a plain search for them skips
# most modules faster than the regex (which tries every alternative at every byte).
_MARKER_LITERALS = (b"set_device_type", b"PJRT_DEVICE", b"neuron", b"tt_torch", b"torchacc", b"TTXLA_", b"TT_METAL_",
                    b"TT_MLIR_", b"TPU_", b"backend")


def _neighbours(path: str) -> Fact | None:
    """Other hardware shown by the modules of the file's folder that import it, when none of
    them shows TPU: a helper of another vendor's samples names no vendor itself, the
    scripts that import it do."""
    shown = [(other, fact) for other, full, size, mtime in _importers(path)
             if (fact := _sibling_hardware(full, size, mtime)).value != "unknown"]
    if not shown or any(fact.value == "tpu" for _, fact in shown):
        return None
    other, fact = shown[0]
    where = f", line {fact.evidence.line} `{fact.evidence.text}`" if fact.evidence else ""
    return Fact("hardware", "other", None, f"{other}, which imports it, runs torch_xla on other hardware ({fact.reason}{where})")


def _importers(path: str) -> list[tuple[str, str, int, int]]:
    """(name, path, size, time) of the modules beside the file that import it and can show
    hardware: what `_neighbours` reads, and what the results cache is keyed by."""
    if not path:
        return []
    directory, name = os.path.split(path)
    module = name.rsplit(".", 1)[0]
    return [entry for entry in _importers_of(directory or ".").get(module, ()) if entry[0] != name]


_IMPORTERS: dict[str, dict[str, list[tuple[str, str, int, int]]]] = {}


def _importers_of(directory: str) -> dict[str, list[tuple[str, str, int, int]]]:
    """Module name -> the modules of `directory` that import it and can show hardware (name,
    path, size, time); the folder is listed once per run (`forget_folders`)."""
    found = _IMPORTERS.get(directory)
    if found is None:
        found = _IMPORTERS[directory] = {}
        try:
            listing = sorted(
                (e.name, e.path, e.stat().st_size, e.stat().st_mtime_ns)
                for e in os.scandir(directory) if e.name.endswith(".py") and e.is_file()
            )
        except OSError:
            listing = []
        for entry in listing:
            imported, marked = _sibling(*entry[1:])
            if marked:
                for module in imported:
                    found.setdefault(module, []).append(entry)
    return found


def forget_folders() -> None:
    """Drop the folders listed and the modules read so far: each run sees the disk anew."""
    _IMPORTERS.clear()
    _sibling.cache_clear()
    _sibling_hardware.cache_clear()
    forget_pins()


@functools.lru_cache(maxsize=4096)
def _sibling(full: str, size: int, mtime: int) -> tuple[frozenset[str], bool]:
    """What a module beside the file imports by name, and whether it can show hardware at
    all; keyed by size and time, so an edit is seen."""
    if size > _LARGEST_NEIGHBOUR:
        return frozenset(), False
    try:
        with open(full, "rb") as handle:
            data = handle.read()
    except OSError:
        return frozenset(), False
    if not any(literal in data for literal in _MARKER_LITERALS) or _HARDWARE_MARKERS.search(data) is None:
        return frozenset(), False
    names: set[str] = set()
    for match in _SIBLING_IMPORT.finditer(data):
        plain, source, relative = match.groups()
        names.update(n.strip().decode("ascii", "replace") for n in (relative or plain or source).split(b",") if n.strip())
    return frozenset(names), True


@functools.lru_cache(maxsize=512)
def _sibling_hardware(full: str, size: int, mtime: int) -> Fact:
    """A module's hardware from its own evidence only (no folder, no neighbours), read
    without the catalogue's module renames: the hardware evidence does not use them."""
    unknown = Fact("hardware", "unknown")
    try:
        with open(full, "rb") as handle:
            text = handle.read().decode("utf-8")
        tree = ast.parse(text)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return unknown
    return _hardware(_scan(tree, text, Canonicaliser({})), "")


def _flag(scan: _Scan, name: str, kind: str) -> Fact:
    if kind in scan.found:
        return _fact(name, "yes", scan.found[kind])
    return Fact(name, "no")
