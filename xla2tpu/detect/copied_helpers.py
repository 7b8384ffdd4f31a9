"""torch_xla helpers that become a copy in the user's module: small pure-Python code that
ships inside torch_xla (which cannot be installed next to TorchTPU) and that no one-line
replacement keeps exact. Where a call of one can become a call of the copy is decided on
CPython's tree before any edit (transforms/helpers.py builds it on LibCST's). Nothing here
imports LibCST.

- `xm.RateTracker`: a tracker is state (counts, the last smoothed rate) that examples hand to
  closures and helper functions, so only an object with the same methods keeps every use.
- `test_utils.get_summary_writer` / `write_to_summary` / `close_summary_writer` /
  `print_training_update`: the writer may be None (no log dir, or not the master), which
  every helper accepts; tensorboardX is imported only when a writer is made, as torch_xla
  did, so a run without a log dir needs no TensorBoard package.
- `pl.MpDeviceLoader`, where XLA501 cannot unwrap it (stored in an attribute, handed to a
  framework or a method): an object that iterates the loader again each time, moving every
  batch to the device, with its length.
- `pl.ParallelLoader(loader, [device])`, where XLA502 cannot unwrap it: an object whose
  `per_device_loader(device)` is an iterator over the loader's batches moved to the device,
  with torch_xla's length; for one device only (several shared the batches out).
"""

from __future__ import annotations

import ast
import functools
import io
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass

from xla2tpu.project.scope import Scope

TEMPLATE = "copied-helper"


@dataclass(frozen=True)
class Helper:
    """One copy: `name` is torch_xla's (the copy's too, unless the module uses the word),
    `text` its definition with `{name}` for its own name and `{<helper>}` for each helper it
    calls (`needs`, written above it)."""

    name: str
    text: str
    needs: tuple[str, ...] = ()
    module: str = "time"  # the module the copy calls, as this name: imported where unbound
    single: str = ""  # a parameter that must be a one-element list or tuple literal


# The explanation is a comment, not a docstring paragraph: comments take the module's
# indentation (two spaces in many torch_xla examples), a docstring's lines would not.
# Comments and docstrings fit 79 columns (pep8's and yapf's limit; torch_xla's own code
# is yapf at 80): the wrapper splits code, never text.
_RATE_TRACKER = '''\
class {name}:
    """Samples per second, as torch_xla's `xm.RateTracker` computed them."""

    # rate(): the rate since the previous rate() call, smoothed with the
    # previous one (smooth_factor of the old, the rest of the new);
    # global_rate(): every sample counted over the time since the tracker
    # was created.
    def __init__(self, smooth_factor=None):
        self._smooth_factor = 0.4 if smooth_factor is None else smooth_factor
        self._start_time = time.perf_counter()
        self._partial_time = self._start_time
        self._partial_count = 0.0
        self._partial_rate = None
        self._count = 0.0

    def add(self, count):
        self._count += count

    def rate(self):
        now = time.perf_counter()
        delta = now - self._partial_time
        report_rate = 0.0
        if delta > 0:
            report_rate = self._count / delta
            if self._partial_rate is not None:
                report_rate = (1 - self._smooth_factor) * report_rate + self._smooth_factor * self._partial_rate
            self._partial_count += self._count
            self._count = 0.0
            self._partial_time = now
            self._partial_rate = report_rate
        return report_rate

    def global_rate(self):
        delta = time.perf_counter() - self._start_time
        count = self._partial_count + self._count
        return count / delta if delta > 0 else 0.0
'''

_WRITE_TO_SUMMARY = '''\
def {name}(summary_writer, global_step=None, dict_to_write=None, write_xla_metrics=False):
    """Writes each scalar of `dict_to_write` to the writer, when there is one."""
    # torch_xla's `test_utils.write_to_summary`; its XLA metrics
    # (`write_xla_metrics`) do not exist under TorchTPU and are not written.
    if summary_writer is None:
        return
    for k, v in (dict_to_write or {{}}).items():
        summary_writer.add_scalar(k, v, global_step)
'''

_GET_SUMMARY_WRITER = '''\
def {name}(logdir):
    """A TensorBoard writer for `logdir`, or None without a log dir."""
    # torch_xla's `test_utils.get_summary_writer`.
    if logdir:
        from tensorboardX import SummaryWriter

        writer = SummaryWriter(log_dir=logdir)
        {write_to_summary}(writer, 0, dict_to_write={{"TensorboardStartTimestamp": time.time()}})
        return writer
'''

_CLOSE_SUMMARY_WRITER = '''\
def {name}(summary_writer):
    """Flushes and closes a TensorBoard writer, if there is one."""
    # torch_xla's `test_utils.close_summary_writer`.
    if summary_writer is not None:
        summary_writer.flush()
        summary_writer.close()
'''

_PRINT_TRAINING_UPDATE = '''\
def {name}(device, step, loss, rate, global_rate, epoch=None, summary_writer=None):
    """Prints a step's training figures; writes the rates to TensorBoard."""
    # torch_xla's `test_utils.print_training_update`, which printed the
    # device as `device/ordinal`; the device prints as passed.
    update_data = [
        "Training",
        "Device={{}}".format(device),
        "Epoch={{}}".format(epoch) if epoch is not None else None,
        "Step={{}}".format(step),
        "Loss={{:.5f}}".format(loss),
        "Rate={{:.2f}}".format(rate),
        "GlobalRate={{:.2f}}".format(global_rate),
        "Time={{}}".format(time.strftime("%H:%M:%S")),
    ]
    print("|", " ".join(item for item in update_data if item), flush=True)
    if summary_writer:
        {write_to_summary}(summary_writer, dict_to_write={{"examples/sec": rate, "average_examples/sec": global_rate}})
'''

_DEVICE_LOADER = '''\
class {name}:
    """The batches of `loader` on `device`, as `pl.MpDeviceLoader` gave."""

    # torch_xla moved each batch from background threads; here it moves when
    # it is taken (a DataLoader's num_workers still load the next batches in
    # the background).
    def __init__(self, loader, device, **kwargs):
        self._loader = loader
        self._device = device

    def __iter__(self):
        for batch in self._loader:
            yield torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(self._device), batch)

    def __len__(self):
        return len(self._loader)
'''

_PER_DEVICE_LOADER = '''\
class {name}:
    """One device's batches of a `ParallelLoader` copy (`PerDeviceLoader`)."""

    def __init__(self, loader, device):
        self._loader = loader
        self._device = device

    def __iter__(self):
        return self

    def __next__(self):
        return self._loader.next_item(self._device)

    def __len__(self):
        return self._loader.per_device_samples()
'''

_PARALLEL_LOADER = '''\
class {name}:
    """The batches of `cpu_loader` on its device, as `ParallelLoader` gave."""

    # torch_xla read the loader once, from background threads, as soon as it
    # was made; here each batch is read and moved to the device when taken.
    def __init__(self, cpu_loader, devices, **kwargs):
        self._cpu_loader = cpu_loader
        self._devices = devices
        self._batches = iter(cpu_loader)

    def per_device_loader(self, device):
        return {PerDeviceLoader}(self, device)

    def per_device_samples(self):
        return len(self._cpu_loader) // len(self._devices)

    def next_item(self, device):
        batch = next(self._batches)
        return torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), batch)
'''

_TEST_UTILS = "torch_xla.test.test_utils."
_LOADERS = "torch_xla.distributed.parallel_loader."
# torch_xla's qualified name -> the helper its calls become.
HELPERS: dict[str, Helper] = {
    "torch_xla.core.xla_model.RateTracker": Helper("RateTracker", _RATE_TRACKER),
    _TEST_UTILS + "write_to_summary": Helper("write_to_summary", _WRITE_TO_SUMMARY),
    _TEST_UTILS + "get_summary_writer": Helper("get_summary_writer", _GET_SUMMARY_WRITER, ("write_to_summary",)),
    _TEST_UTILS + "close_summary_writer": Helper("close_summary_writer", _CLOSE_SUMMARY_WRITER),
    _TEST_UTILS + "print_training_update": Helper("print_training_update", _PRINT_TRAINING_UPDATE, ("write_to_summary",)),
    _LOADERS + "MpDeviceLoader": Helper("MpDeviceLoader", _DEVICE_LOADER, module="torch"),
    _LOADERS + "PerDeviceLoader": Helper("PerDeviceLoader", _PER_DEVICE_LOADER, module="torch"),
    _LOADERS + "ParallelLoader": Helper("ParallelLoader", _PARALLEL_LOADER, ("PerDeviceLoader",), "torch", "devices"),
}
_BY_NAME = {helper.name: helper for helper in HELPERS.values()}


def helper(qualname: str) -> Helper | None:
    """The helper a call of `qualname` becomes, or None."""
    return HELPERS.get(qualname)


def copyable(module: Scope, helper: Helper) -> bool:
    """Whether the module's top level leaves the module the copies call (`time`, `torch`) to
    that module (or unbound: the fix imports it): the copies call `time.perf_counter()` /
    `time.time()` / `time.strftime()` or `torch.utils._pytree`, and a module that binds the
    name to something else (`from time import time`) would make them call the wrong thing."""
    return all(module.bindings.get(each.module) in (None, {each.module}) for each in with_needs(helper))


def class_named_otherwise(helper: Helper, tree: ast.Module) -> bool:
    """Whether a copy for `helper` is a class and the module names torch_xla's class other
    than by calling it (`isinstance(loader, MpDeviceLoader)`, a base, a patch of
    `pl.PerDeviceLoader.__len__`): the copy's objects would not be what that code tests for
    or changes. Told by the name alone, whatever it is bound to."""
    named = _named_not_called(tree)
    return any(each.text.startswith("class") and each.name in named for each in with_needs(helper))


def fits(helper: Helper, args: Mapping[str, ast.AST] | None) -> bool:
    """Whether the call's arguments are ones the copy keeps exact: its `single` parameter a
    one-element list or tuple written out (`[device]`)."""
    if not helper.single:
        return True
    value = (args or {}).get(helper.single)
    return isinstance(value, (ast.List, ast.Tuple)) and len(value.elts) == 1 and not isinstance(value.elts[0], ast.Starred)


def _named_not_called(tree: ast.Module) -> frozenset[str]:
    """The names and attribute names the module reads other than as a callee."""
    callees = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    return frozenset(node.id if isinstance(node, ast.Name) else node.attr for node in ast.walk(tree)
                     if isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in callees)


def with_needs(first: Helper) -> list[Helper]:
    """`first` and the helpers it calls, each before its callers (the order to write them)."""
    ordered: list[Helper] = []

    def visit(helper: Helper) -> None:
        for need in helper.needs:
            visit(_BY_NAME[need])
        if helper not in ordered:
            ordered.append(helper)

    visit(first)
    return ordered


def fresh_names(helpers: list[Helper], source: str) -> dict[str, str]:
    """The name each copy takes in the module (`source`): torch_xla's, unless the module's
    code already uses that bare word (`from ... import RateTracker`, a function of its own),
    then with a number."""
    used = _bare_names(source)
    names = {}
    for helper in helpers:
        candidate, n = helper.name, 1
        while candidate in used:
            n += 1
            candidate = f"{helper.name}{n}"
        names[helper.name] = candidate
    return names


@functools.lru_cache(maxsize=8)
def _bare_names(source: str) -> frozenset[str]:
    """The names the code spells other than as an attribute (`x.name`): not its comments',
    nor its strings'."""
    names: set[str] = set()
    previous = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.NAME and previous != ".":
                names.add(token.string)
            if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
                previous = token.string
    except (tokenize.TokenError, SyntaxError):  # the fix only reaches sources that parse
        pass
    return frozenset(names)


def rank(name: str) -> int:
    """Where the copy of torch_xla's `name` goes among the others: as `HELPERS` lists them,
    so a helper comes before the helpers that call it."""
    return list(_BY_NAME).index(name)


def rendered(helper: Helper, names: dict[str, str]) -> str:
    """The copy's definition, with the names `fresh_names` gave it and the helpers it calls."""
    return helper.text.format(name=names[helper.name], **{need: names[need] for need in helper.needs})


@functools.lru_cache(maxsize=None)
def written(first: Helper) -> frozenset[str]:
    """Every name the copies for a call of `first` spell (the plain names: renamed copies add
    a number), the time module among them."""
    found: set[str] = set()
    for helper in with_needs(first):
        tree = ast.parse(rendered(helper, {h.name: h.name for h in with_needs(helper)}))
        found.update(node.id for node in ast.walk(tree) if isinstance(node, ast.Name))
        found.update(node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef)))
    return frozenset(found)
