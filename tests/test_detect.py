"""Detection on CPython's tree: a file no fix rewrites never reaches LibCST, nor does one
`check` reads when the ast tells what its fixes leave; what either reports then is what the
LibCST path (parse, rewrite, import pass) reports for it."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from tests.fixture_cases import cases
from xla2tpu.catalogue import rules as catalogue
from xla2tpu.run import engine
from xla2tpu.catalogue.diagnostics import FileResult, FixClass
from xla2tpu.catalogue.settings import Settings

def _seen(result: FileResult) -> tuple:
    """What a user sees of a result: each finding whole (a Diagnostic compares by place,
    code and message only), and the file's error."""
    return [(d, d.fix, d.fixed, d.end_line, d.end_col) for d in result.diagnostics], result.error


_RULES = frozenset(rule.code for rule in catalogue.load().rules)
_MODES = {
    "safe": Settings(_RULES, frozenset({FixClass.SAFE}), "eager"),
    "unsafe": Settings(_RULES, frozenset({FixClass.SAFE, FixClass.UNSAFE}), "eager"),
    "compile": Settings(_RULES, frozenset({FixClass.SAFE}), "compile"),
}


def _through_libcst(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file takes the LibCST path, as if a fix rewrote it."""
    monkeypatch.setattr(engine, "findings_after_fixes", lambda *args: None)


@pytest.mark.parametrize("mode", sorted(_MODES))
@pytest.mark.parametrize("case", cases(), ids=lambda case: case.id)
def test_a_file_judged_on_cpythons_tree_alone_gets_the_findings_of_the_libcst_path(case, mode, monkeypatch) -> None:
    data = case.path.read_bytes()
    settings = _MODES[mode]
    fast = engine.process_source(str(case.path), data, settings)
    if fast.parsed or fast.error:
        return  # LibCST parsed it: nothing to compare
    _through_libcst(monkeypatch)
    slow = engine.process_source(str(case.path), data, settings)
    assert _seen(fast) == _seen(slow)
    assert slow.new_source is None


@pytest.mark.parametrize("mode", sorted(_MODES))
@pytest.mark.parametrize("case", cases(), ids=lambda case: case.id)
def test_check_reports_what_fix_reports(case, mode) -> None:
    data = case.path.read_bytes()
    settings = _MODES[mode]
    checked = engine.process_source(str(case.path), data, dataclasses.replace(settings, rewrite=False))
    fixed = engine.process_source(str(case.path), data, settings)
    assert _seen(checked) == _seen(fixed)


def test_check_tells_the_fixes_of_a_file_without_libcst() -> None:
    source = b"import torch_xla.core.xla_model as xm\nxm.mark_step()\nx = xm.xla_device()\n"
    result = engine.process_source("t.py", source, dataclasses.replace(_MODES["safe"], rewrite=False))
    assert not result.parsed and result.new_source is None
    assert [(d.code, d.fixed) for d in result.diagnostics] == [("XLA001", True), ("XLA201", True), ("XLA101", True)]


_LAUNCH = (b"import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n\n"
           b"def _mp_fn(index, flags):\n    print(xm.get_ordinal(), xm.xrt_world_size())\n\n\n"
           b"if __name__ == '__main__':\n    %s\n")


_IF_DEVICES = b"import torch_xla.core.xla_model as xm\nif len(xm.get_xla_supported_devices()) > 1:\n%sprint(1)\n"
_LOADER = b"import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.parallel_loader as pl\n\n\n%s"
# Plain functions: enough of the file for a reduced parse to pay (reduction.MIN_LEFT_OUT).
_PLAIN = b"".join(b"def plain%d(a):\n    return a + %d\n\n\n" % (i, i) for i in range(6))
_COLLECTIVE = (b"import torch\nimport torch_xla.core.xla_model as xm\ntorch.distributed.init_process_group('tpu')\n\n\n"
               b"def f(a, b, s, model):\n    %s\n    return y\n")


@pytest.mark.parametrize("source, parsed", [
    # The `if` goes with its test, and the finding for a human in it is resolved.
    (b"import torch_xla.core.xla_model as xm\nif len(xm.get_xla_supported_devices()) > 1:\n    xm.mark_step()\nprint(1)\n",
     False),
    # `if A: <emptied> else: B` -> `if not A: B`: the test stays.
    (b"import torch_xla.core.xla_model as xm\nif xm.get_xla_supported_devices():\n    xm.mark_step()\nelse:\n    f()\n",
     False),
    # A test that does something stays as a statement: only making the fix tells what of it.
    (b"import torch_xla.core.xla_model as xm\nif check(xm.get_xla_supported_devices()):\n    xm.mark_step()\nprint(1)\n",
     True),
    # A comment the pruner keeps (one pointing up, one set off by a blank line) keeps the
    # emptied block, and the `if` with it; the comment right above a deleted statement goes
    # with it, as does one above an `elif` that goes; a one-line block or one after a `;`
    # has no comment of its own.
    *((_IF_DEVICES % body, False) for body in (
        b"    # ^^ see above\n    xm.mark_step()\n",
        b"    # run the pending graph\n    xm.mark_step()\n",
        b"    # a note\n\n    xm.mark_step()\n",
        b"    # a\n    xm.mark_step()\n    # b\n    xm.mark_step()\n    # trailing\n",
        b"    # a\n    xm.mark_step()\n\n    # b\n\n    xm.mark_step()\n",
        b"    xm.mark_step()\n# c\n\nelif len(xm.get_xla_supported_devices()) > 2:\n    xm.mark_step()\n",
        b"    # note\n\n    a = 1; xm.mark_step()\n",
    )),
    (b"import torch_xla.core.xla_model as xm\n# note\n\nif len(xm.get_xla_supported_devices()) > 1: xm.mark_step()\n"
     b"print(1)\n", False),
    # An emptied unittest hook goes (undecorated but for classmethod, in a class or, for the
    # module's hooks, at the top level), and what its definition read with it.
    (b"import unittest\nimport torch_xla.core.xla_model as xm\nclass T(unittest.TestCase):\n    @classmethod\n"
     b"    def setUpClass(cls):\n        xm.mark_step()\n    def test(self):\n        print(xm.xla_device())\n", False),
    (b"import unittest\nimport torch_xla.core.xla_model as xm\nclass T(unittest.TestCase):\n    @with_module(xm)\n"
     b"    def setUp(self):\n        xm.mark_step()\n", False),
    (b"import torch_xla.core.xla_model as xm\ndef setUp(d=xm):\n    xm.mark_step()\n", False),
    (b"import torch_xla.core.xla_model as xm\ndef setUpModule(d=xm):\n    xm.mark_step()\n", False),
    # An import removal that empties a block: the pruner takes it (an emptied `try:` whose
    # handlers do nothing goes); the import pass runs again when an `if` with a finding for
    # a human in its test goes or has its branches become one: only making it tells.
    (b"import torch\nif is_torch_xla_available():\n    import torch_xla.core.xla_model as xm\nd = xm.xla_device()\n", False),
    (b"import torch\ndef f():\n    if x:\n        # why\n\n        import torch_xla.core.xla_model as xm\n    return 1\n",
     False),
    (b"import torch_xla.core.xla_model as xm\nif a:\n    import torch_xla.debug.metrics as met\n    f()\nelse:\n    f()\n", False),
    # The pass runs again when an `if` with a finding for a human in its test goes: where a
    # decision changes (the test held an import's last read) its finding replaces the
    # first's and its removal goes too; where the removals changed a `try:`, whose guard it
    # judges anew, only making them tells.
    (b"from accelerate.utils import is_tpu_available\nif is_tpu_available():\n"
     b"    import torch_xla.distributed.xla_multiprocessing as xmp\n", False),
    (b"import torch_xla.core.xla_model as xm\nif len(xm.get_xla_supported_devices()) > 1:\n"
     b"    import torch_xla.debug.metrics as met\nn = xm.get_xla_supported_devices()\n", False),
    (b"from transformers import is_torch_xla_available\nif is_torch_xla_available():\n"
     b"    import torch_xla.core.xla_model as xm\n", False),
    (b"import torch_xla.core.xla_model as xm\nfrom transformers import is_torch_xla_available\n"
     b"if len(xm.get_xla_supported_devices()) > 1:\n    if is_torch_xla_available():\n        import torch_xla.debug.metrics as met\n",
     False),
    (b"from transformers import is_torch_xla_available\nimport torch_xla.core.xla_model as xm\nif is_torch_xla_available():\n"
     b"    import torch_xla.debug.metrics as met\nif len(xm.get_xla_supported_devices()) > 1:\n"
     b"    import torch_xla.utils.utils as xu\nprint(1)\n", False),
    (b"from accelerate.utils import is_tpu_available\nif is_tpu_available():\n    try:\n"
     b"        import torch_xla.core.xla_model as xm\n    except ImportError:\n        pass\n", True),
    *((_IF_DEVICES % body, parsed) for body, parsed in (
        (b"    import torch_xla.debug.metrics as met\n", False),
        (b"    import torch_xla.debug.metrics as met\n    f()\nelse:\n    f()\n", True),
        (b"    try:\n        import torch_xla.debug.metrics as met\n    except ImportError:\n        pass\n", True),
        (b"    try:\n        import torch_xla.debug.metrics as met\n    except KeyError:\n        log()\n", False),
    )),
    # A step closure is called in place: what it is given stays read (the import stays).
    (b"import torch_xla.core.xla_model as xm\nxm.add_step_closure(log, args=(xm,))\n", False),
    # A statement that only prints a report goes with it; one that prints more stays.
    (b"import torch_xla.debug.metrics as met\nprint(met.metrics_report())\nprint('x', met.metrics_report())\n", False),
    # A lint's finding in the test of an `if` that goes stays as the LibCST pass leaves it
    # (unmigrated: the pruner resolves the findings of the sites it visits, and lints are
    # found on the ast only).
    (b"import torch_xla.core.xla_model as xm\nfor x in data:\n    loss = model(x)\n    loss.backward()\n"
     b"    optimizer.step()\n    if loss: xm.mark_step()\n    print(1)\n", False),
    # A launch the ast allows becomes TorchTPU's, and the rank fixes are found again with
    # the workers in a process group; one it does not allow stays for a human.
    (_LAUNCH % b"xmp.spawn(_mp_fn, args=(flags,), nprocs=flags.cores)", False),
    (_LAUNCH % b"xmp.spawn(_mp_fn, args=(xmp,))", False),  # what it keeps stays read: the import stays
    (_LAUNCH % b"xmp.spawn(lambda i: _mp_fn(i, flags), args=())", False),
    (_LAUNCH % b"dist.init_process_group('gloo'); xmp.spawn(_mp_fn, args=(flags,))", False),
    (_LAUNCH % b"xmp.spawn(_mp_fn, args=[*flags])", False),
    # A rate tracker becomes the class written into the module, its arguments kept, unless
    # the module's `time` is something else.
    (b"import torch_xla.core.xla_model as xm\nimport torch_xla.debug.metrics as met\n"
     b"tracker = xm.RateTracker(met)\nprint(tracker.rate())\n", False),
    (b"from datetime import time\nimport torch_xla.core.xla_model as xm\ntracker = xm.RateTracker()\n", False),
    # torch_xla's environment helpers spelled with `os`, reading the arguments they keep;
    # not where `os` is a local name (the rewriter refuses them: a manual finding).
    (b"import torch_xla.utils.utils as xu\nx = xu.getenv_as('A', int, 3)\ny = xu.check_env_flag(name, '0')\n", False),
    (b"import torch_xla.utils.utils as xu\nx = xu.getenv_as(xu, bool)\n", False),
    (b"import torch_xla.utils.utils as xu\ndef f(os):\n    return xu.getenv_as('A', int), xu.check_env_flag('B')\n", False),
    (b"import torch_xla.utils.utils as xu\nx = xu.getenv_as('A' 'B', int)\n", False),
    # torch_xla's collectives as torch.distributed code, each decided on the ast: a list
    # all-reduce as a loop, a tensor one as an expression (not when its result is dropped),
    # the data-exchange helpers as statements; not where `torch` is a local name.
    *((_COLLECTIVE % body, False) for body in (
        b"xm.all_reduce(xm.REDUCE_SUM, [a, b], scale=s)",
        b"y = xm.all_reduce('max', a, scale=1.0)",
        b"xm.all_reduce('sum', a)",
        b"xm.all_reduce(op, [a])",
        b"y = xm.reduce_scatter(xm.REDUCE_SUM, a, 0.5, 0, 8)",
        b"y = xm.mesh_reduce('tag', a, sum)",
        b"y = xm.rendezvous('tag', a)",
        b"xm.broadcast_master_param(model)",
        b"xm.collective_broadcast([a])",
        b"xm.optimizer_step(model)",
        b"torch = 1; y = xm.all_reduce('sum', a)",
        b"y = xm.mesh_reduce('tag', xm, sum)",  # what it keeps stays read: the import stays
        b"y = {}\n    y[xm] = xm.rendezvous('tag', a)",  # and the target it writes again
    )),
    (b"import torch_xla.distributed.xla_multiprocessing as xmp\ndef f(i, a):\n    pass\nxmp.spawn(f, args=(1,), nprocs=1)\n",
     False),
    # torch_xla's structured loops as Python loops (assignments of the shape each needs),
    # `with torch_xla.step():` unwrapped (not `as x`), Optimum TPU's loader as Transformers'.
    (b"from torch_xla.experimental.scan import scan\ncarry, ys = scan(f, init, xs)\nc = scan(f, init, xs)\n", False),
    (b"from torch_xla.experimental.scan_layers import scan_layers\nout = scan_layers(layers, x)\n"
     b"a, b = scan_layers(layers, x)\n", False),
    (b"import torch_xla\nwith torch_xla.step():\n    f()\nwith open(p), torch_xla.step():\n    g()\n"
     b"with torch_xla.step() as s:\n    h(s)\n", False),
    (b"import optimum.tpu\nm = optimum.tpu.AutoModelForCausalLM.from_pretrained(i, optimum, 8, 128, x)\n", False),
    (b"import optimum.tpu\nn = optimum.tpu.AutoModelForCausalLM.from_pretrained(i, device_map='auto')\n", False),
    (b"import optimum.tpu\nm = optimum.tpu.AutoModelForCausalLM.from_pretrained(i, torch_dtype=optimum)\n", False),
    # A name the import binds, written by the fix as an attribute's tail, reads no variable:
    # `transformers.AutoModelForCausalLM`, `torch.tpu.profiler.TpuProfilerConfig`.
    (b"from optimum.tpu import AutoModelForCausalLM\nm = AutoModelForCausalLM.from_pretrained(i, 't', 8, 128, x)\n", False),
    (b"from torch_tpu._internal.profiler import TpuProfilerConfig\nconfig = TpuProfilerConfig(run_dir='/tmp/prof')\n", False),
    # A device loader's consumers, found on the ast as the builder finds them: loops over
    # it, directly or through `enumerate`/`tqdm`, or over a variable, or in a function of
    # the module it is handed to; anything else (`iter()`, a keyword argument, a parameter
    # of the same name, a rebinding) leaves it for a human. A device that reads an import is
    # for LibCST's pass; a function only a statement the plan does not keep calls is in the
    # reduced parse (reduction.py), so the ast decides it as a whole parse would.
    *((_LOADER % body, parsed) for body, parsed in (
        (b"def train_loop_fn(loader):\n    for step, (data, target) in enumerate(loader):\n        xm.optimizer_step(opt)\n\n\n"
         b"def main():\n    device = xm.xla_device()\n    train_device_loader = pl.MpDeviceLoader(train_loader, device)\n"
         b"    train_loop_fn(train_device_loader)\n", False),
        (b"def main(device):\n    dl = pl.MpDeviceLoader(train_loader, device)\n    for x in dl:\n        xm.mark_step()\n"
         b"    print(len(dl))\n", False),
        (b"def main(device):\n    dl = pl.MpDeviceLoader(train_loader, device)\n    it = iter(dl)\n", False),
        (b"def main(dl, device):\n    dl = pl.MpDeviceLoader(train_loader, device)\n    for x in dl:\n        pass\n", False),
        (b"def main(device):\n    dl = pl.MpDeviceLoader(train_loader, device)\n    run(loader=dl)\n", False),
        (b"def run(loader):\n    for b in loader:\n        f(b)\n\n\ndef main(device):\n"
         b"    dl = pl.MpDeviceLoader(train_loader, device)\n    run(dl)\n", False),
        (_PLAIN + b"def run(loader):\n    for b in loader:\n        f(b)\n\n\n" + _PLAIN.replace(b"plain", b"other")
         + b"dl = pl.MpDeviceLoader(train_loader, dev)\nrun(dl)\n", False),
        (_PLAIN + b"dl = pl.MpDeviceLoader(train_loader, dev)\nprint('ready')\nfor x in dl:\n    f(x)\n" + _PLAIN, False),
        (b"dl = pl.MpDeviceLoader(train_loader, dev)\nfor x, _ in dl:\n    xm.mark_step()\n", False),
        (b"def main():\n    dl = pl.MpDeviceLoader(train_loader, xm.xla_device())\n    for x in dl:\n        f(x)\n", True),
        (b"def main(device):\n    dl = pl.MpDeviceLoader(train_loader, device)\n    dl = wrap(dl)\n    for x in dl:\n"
         b"        f(x)\n", False),
        (b"def main(device):\n    for i, (x, y) in enumerate(pl.MpDeviceLoader(train_loader, device)):\n        f(x)\n", False),
        (b"def main(device):\n    for _ in tqdm(pl.MpDeviceLoader(train_loader, device)):\n        f()\n", False),
        (b"def main(device):\n    if a:\n        dl = pl.MpDeviceLoader(train_loader, device)\n    else:\n"
         b"        dl = train_loader\n    for x in dl:\n        f(x)\n", True),
        # A parallel loader, used as `.per_device_loader(d)` at once or through a variable.
        (b"def train_loop_fn(loader):\n    for step, (data, target) in enumerate(loader):\n        xm.optimizer_step(opt)\n\n\n"
         b"def main():\n    device = xm.xla_device()\n    para_loader = pl.ParallelLoader(train_loader, [device])\n"
         b"    train_loop_fn(para_loader.per_device_loader(device))\n", False),
        (b"def main(d):\n    for x in pl.ParallelLoader(train_loader, [d]).per_device_loader(d):\n        xm.mark_step()\n", False),
        (b"def main(d):\n    p = pl.ParallelLoader(train_loader, [d])\n    for x in p.per_device_loader(xm.xla_device()):\n"
         b"        f(x)\n", False),
        (b"def main(d):\n    p = pl.ParallelLoader(train_loader, [d])\n    it = iter(p)\n", False),
        (b"class T:\n    def run(self, d):\n        p = pl.ParallelLoader(train_loader, [d])\n        def inner():\n"
         b"            for x in p.per_device_loader(d):\n                f(x)\n        inner()\n", False),
    )),
    # A deletion in a `try:` changes what guards the imports there.
    (b"try:\n    import torch_xla.core.xla_model as xm\n    xm.mark_step()\nexcept ImportError:\n    xm = None\n", True),
    # The branches may become the same: one of them replaces the `if`; not where a fix writes
    # an expression of another kind than the other branch has there (a call, a name).
    (b"import torch_xla.core.xla_model as xm\nif a:\n    d = xm.xla_device()\nelse:\n    d = torch.device('tpu')\n",
     True),
    (b"import torch_xla.core.xla_model as xm\nif a:\n    d = xm.xla_device()\nelse:\n    d = b\n", False),
    (b"import torch_xla.core.xla_model as xm\nif a:\n    f(xm.xla_device())\nelse:\n    f(7)\n", False),
    (b"import torch_xla.core.xla_model as xm\nif a:\n    r = xm.get_ordinal()\nelse:\n    r = 0\n", False),
    (b"import torch\nimport torch_xla.core.xla_model as xm\nif a:\n    t = xm.REDUCE_SUM\nelse:\n    t = s\n", True),
    (b"import torch\nimport torch_xla.core.xla_model as xm\nif a:\n    t = xm.xla_device()\nelse:\n    t = xm.REDUCE_SUM\n",
     True),
    # ... nor where what the fix writes differs from the other branch in what neither the
    # speller nor the site's arguments decide: a constant, the arguments' shape.
    (b"import torch\nimport torch_xla.core.xla_model as xm\nif a:\n    d = xm.xla_device()\nelse:\n    d = torch.device('cpu')\n",
     False),
    (b"import torch\nimport torch_xla\nif a:\n    y = t.tpu()\nelse:\n    y = t.to('cpu')\n", False),
    (b"import torch\nimport torch_xla\nif a:\n    y = t.tpu()\nelse:\n    y = t.to(device='tpu')\n", False),
    (b"import torch\nimport torch_xla\nif a:\n    y = t.tpu()\nelse:\n    y = s.to('tpu')\n", True),  # `s` may be what fills `{x}`
    # A variable whose write goes leaves `os.environ.update(...)`, which goes with the last
    # one (and what it read with it), emptying its block.
    (b"import os\nos.environ.update(XLA_HLO_DEBUG='1')\n", False),
    (b"import os\nimport torch_xla.core.xla_model as xm\nif len(xm.get_xla_supported_devices()) > 1:\n"
     b"    os.environ.update(XLA_HLO_DEBUG='1')\nprint(1)\n", False),
    (b"import os\nimport torch_xla.core.xla_model as xm\nif len(xm.get_xla_supported_devices()) > 1:\n"
     b"    os.environ.update(**{'XLA_HLO_DEBUG': '1'})\nprint(1)\n", False),  # a `**` dict is the dict's entries
    (b"import os\nos.environ.update(XLA_HLO_DEBUG='1', OTHER='2')\n", False),
    (b"import os\nos.environ.update({'XLA_HLO_DEBUG': '1', **extra})\n", False),
    (b"import os\nimport torch_xla.debug.metrics as met\nif a:\n    os.environ.update({'XLA_HLO_DEBUG': met.x})\nprint(1)\n",
     False),
    (b"import os\nimport torch_xla.debug.metrics as met\nos.environ.update(XLA_HLO_DEBUG=met.x, A=1)\n", False),
])
def test_check_tells_what_the_pruner_does_or_takes_libcst(source: bytes, parsed: bool) -> None:
    settings = _MODES["unsafe"]
    checked = engine.process_source("t.py", source, dataclasses.replace(settings, rewrite=False))
    assert checked.parsed is parsed
    assert _seen(checked) == _seen(engine.process_source("t.py", source, settings))


def test_a_fix_reads_an_import_where_it_writes_its_name_or_may_spell_a_name_with_it() -> None:
    from xla2tpu.detect import after_fixes

    # An import of `torch.tpu.synchronize` (XLA986 matches one) binds `synchronize`: the
    # speller writes `torch.tpu.synchronize` as `synchronize` where it holds. No rule's
    # template spells such a name today; the guard is for the one that will.
    left = object.__new__(after_fixes.Leftovers)
    left._names = frozenset({"synchronize", "TpuProfilerConfig"})
    left._imported = frozenset({"torch.tpu.synchronize", "torch_tpu._internal.profiler.TpuProfilerConfig"})
    left._writes(["torch.tpu.profiler.TpuProfilerConfig(run_dir={d})", "torch.accelerator.synchronize()"])
    for template in ("torch.tpu.synchronize()", "f({x?torch.tpu.synchronize})", "TpuProfilerConfig({d})",
                     "f({x?synchronize})"):
        with pytest.raises(after_fixes._CannotTell):
            left._writes([template])


@pytest.mark.parametrize("rebinding", [
    b"torch = make()\n", b"for torch in xs:\n    pass\n", b"with make() as torch:\n    pass\n", b"del torch\n",
    b"(torch := make())\n", b"try:\n    pass\nexcept E as torch:\n    pass\n",
])
def test_a_statement_that_rebinds_an_imported_name_is_read(rebinding: bytes) -> None:
    # It shows no token nor torch_xla name, yet `torch` below is no longer the module.
    source = b"import torch\n%smodel = torch.compile(model, backend='openxla')\n" % rebinding
    result = engine.process_source("t.py", source, dataclasses.replace(_MODES["safe"], rewrite=False))
    assert [d.code for d in result.diagnostics] == []
    plain = engine.process_source("t.py", b"import torch\nmodel = torch.compile(model, backend='openxla')\n", _MODES["safe"])
    assert [d.code for d in plain.diagnostics] == ["XLA301"]


@pytest.mark.parametrize("call", [b"f(xm=1)", b"f(xm=xm)", b"f(**{'xm': 1})"])
def test_a_keyword_named_as_an_import_is_no_read_of_it(call: bytes) -> None:
    # `f(xm=1)` once kept torch_xla imported, "still used"; its value is a read as ever.
    source = b"import torch_xla.core.xla_model as xm\nxm.mark_step()\n%s\n" % call
    checked = engine.process_source("t.py", source, dataclasses.replace(_MODES["safe"], rewrite=False))
    fixed = engine.process_source("t.py", source, _MODES["safe"])
    assert _seen(checked) == _seen(fixed)
    still_read = call == b"f(xm=xm)"
    found = [(d.code, d.fixed) for d in checked.diagnostics if d.code in ("XLA001", "XLA201")]
    assert found == [("XLA001", not still_read), ("XLA201", True)]
    assert fixed.new_source is not None and (b"import torch_xla" in fixed.new_source) is still_read


def test_a_file_with_a_fix_to_make_is_parsed_by_libcst() -> None:
    result = engine.process_source("t.py", b"import torch_xla.core.xla_model as xm\nxm.mark_step()\n", _MODES["safe"])
    assert result.parsed and result.new_source is not None


def test_a_file_with_only_findings_for_a_human_is_not_parsed_by_libcst() -> None:
    source = b"import torch_xla.core.xla_model as xm\nxm.get_xla_supported_devices()\n"
    result = engine.process_source("t.py", source, _MODES["safe"])
    assert result.diagnostics and not any(d.fixed for d in result.diagnostics)
    assert not result.parsed


def test_check_never_loads_libcst_where_the_ast_tells(tmp_path) -> None:
    # One process, as pre-commit runs it on a few files: LibCST's import alone costs more
    # than checking them.
    (tmp_path / "train.py").write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\ndevice = xm.xla_device()\n")
    (tmp_path / "plain.py").write_text("import os\nprint(os.getcwd())\n")
    program = (
        "import runpy, sys\n"
        "sys.argv = ['xla2tpu', 'check', '--no-cache', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('xla2tpu', run_name='__main__')\n"
        "except SystemExit as exit:\n    print('exit', exit.code, 'libcst' in sys.modules)\n"
    )
    env = {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "TPU_SKIP_MDS_QUERY": "1"}
    done = subprocess.run([sys.executable, "-c", program, str(tmp_path)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, check=False)
    assert "XLA201" in done.stdout, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "exit 1 False"


_PIPELINE = b"""from diffusers.utils import is_torch_xla_available

if is_torch_xla_available():
    import torch_xla.core.xla_model as xm

    XLA_AVAILABLE = True
else:
    XLA_AVAILABLE = False


def denoise(x):
    if XLA_AVAILABLE:
        xm.mark_step()
    return x
"""


def test_check_tells_an_unread_flag_on_the_ast_as_fix_makes_it() -> None:
    # A Diffusers pipeline's flag dies with its one read: `check` says so without LibCST
    # (after_fixes.flags_removed), and says what `fix` does (dead_flags.py).
    unsafe = _MODES["unsafe"]
    checked = engine.process_source("p.py", _PIPELINE, dataclasses.replace(unsafe, rewrite=False))
    fixed = engine.process_source("p.py", _PIPELINE, unsafe)
    assert not checked.parsed
    assert [(d.line, d.code, d.fixed) for d in checked.diagnostics] == [(d.line, d.code, d.fixed) for d in fixed.diagnostics]
    assert {d.code for d in checked.diagnostics if d.fixed} == {"XLA001", "XLA005", "XLA008", "XLA009", "XLA201"}
    assert fixed.new_source == b"def denoise(x):\n    return x\n"


_TRY_FLAG = b"""try:
    import torch_xla.core.xla_model as xm
    import torch_xla
%s
def step(x):
    if _HAS_XLA:
        xm.mark_step()
    return x
"""


@pytest.mark.parametrize("rest, told", [
    # CLIPA's probe: the flag goes from the body and the handler, which keeps only fallbacks;
    # the `try:` guards nothing the code reads any more, and goes whole.
    (b"    _HAS_XLA = True\nexcept ImportError as e:\n    xm = None\n    torch_xla = None\n    _HAS_XLA = False\n", True),
    (b"    _HAS_XLA = True\nexcept ImportError:\n    _HAS_XLA = False\n", True),
    # The handler does more than fall back: the guard still decides, as written.
    (b"    _HAS_XLA = True\nexcept ImportError:\n    _HAS_XLA = False\n    print('no xla')\n", True),
    (b"    _HAS_XLA = True\nexcept ImportError:\n    _HAS_XLA = False\nelse:\n    print('xla')\n", True),
    # The flag outside the `try:`: nothing changes what the `try:` guards.
    (b"except ImportError:\n    pass\n_HAS_XLA = True\n", True),
])
def test_check_tells_a_flag_in_an_import_guard_on_the_ast_as_fix_makes_it(rest: bytes, told: bool) -> None:
    # Removing the flag changes what the `try:` guards; the import pass judges the guard on
    # what the flags left, and so does `check` (after_fixes.Leftovers.guard), without LibCST.
    source = _TRY_FLAG % rest
    for mode in ("safe", "unsafe"):
        checked = engine.process_source("p.py", source, dataclasses.replace(_MODES[mode], rewrite=False))
        fixed = engine.process_source("p.py", source, _MODES[mode])
        assert _seen(checked) == _seen(fixed), (mode, checked.diagnostics, fixed.diagnostics)
    assert not checked.parsed if told else checked.parsed


_PROFILE = b"import torch_xla.debug.profiler as xp\n\n\ndef f(d, a):\n%s"


@pytest.mark.parametrize("body, fixed", [
    (b"    xp.start_trace(d)\n    work()\n    xp.stop_trace()\n", True),
    (b"    xp.start_trace(log_dir=d)\n    g(lambda: xp.stop_trace())\n    xp.stop_trace()\n", True),  # not in a lambda
    (b"    a = 1; xp.start_trace(d)\n    work()\n    xp.stop_trace()\n", False),  # a line shared: neither half
    (b"    xp.start_trace(d)\n    work()\n    xp.stop_trace(); a = 1\n", False),
    (b"    if a: xp.start_trace(d)\n    xp.stop_trace()\n", False),
    (b"    xp.stop_trace()\n    xp.start_trace(d)\n", False),
    (b"    xp.start_trace(d)\n    xp.start_trace(d)\n    xp.stop_trace()\n", False),
    (b"    xp.start_trace(d)\n    def g():\n        xp.stop_trace()\n    g()\n", False),
    (b"    xp.start_trace(d)\n    y = [xp.stop_trace() for _ in a]\n", False),
    (b"    xp.start_trace(d)\n    y = xp.stop_trace()\n", False),
    (b"    xp.start_trace()\n    xp.stop_trace()\n", False),  # where to?
    (b"    class C:\n        xp.start_trace(d)\n        xp.stop_trace()\n", False),
])
def test_a_trace_pair_is_made_both_halves_or_neither(body: bytes, fixed: bool) -> None:
    # A stop made alone would stop a profiler that was never created.
    source = _PROFILE % body
    result = engine.process_source("t.py", source, _MODES["unsafe"])
    found = [d.fixed for d in result.diagnostics if d.code == "XLA925"]
    assert [found[0], found[-1]] == [fixed, fixed], result.diagnostics  # the pair's halves (a lambda's is not one)
    checked = engine.process_source("t.py", source, dataclasses.replace(_MODES["unsafe"], rewrite=False))
    assert not checked.parsed and _seen(checked) == _seen(result)


@pytest.mark.parametrize("source, code, fixed", [
    (b"from torch_xla.experimental.scan_layers import scan_layers\nout = scan_layers(layers, x)\n", "XLA949", True),
    (b"from torch_xla.experimental.scan_layers import scan_layers\na, b = scan_layers(layers, x)\n", "XLA949", False),
    (b"from torch_xla.experimental.scan import scan\ncarry, ys = scan(f, init, xs)\n", "XLA949", True),
    (b"from torch_xla.experimental.scan import scan\nc = scan(f, init, xs)\n", "XLA949", False),
    (b"import torch_xla\nwith torch_xla.step():\n    f()\n", "XLA203", True),
    (b"import torch_xla\nwith torch_xla.step() as s:\n    f(s)\n", "XLA203", False),
    (b"import torch_xla.core.xla_model as xm\ny = xm.all_reduce('sum', a)\n", "XLA640", True),
    (b"import torch_xla.core.xla_model as xm\nxm.all_reduce('sum', a)\n", "XLA640", False),
    (b"import torch_xla.core.xla_model as xm\ny = xm.all_reduce(op, a)\n", "XLA640", False),
    (b"import torch_xla.core.xla_model as xm\nxm.all_reduce('sum', [a])\n", "XLA640", True),
    (b"import torch_xla.core.xla_model as xm\ny = xm.mesh_reduce('t', a, sum)\n", "XLA616", True),
    (b"import torch_xla.core.xla_model as xm\nxm.mesh_reduce('t', a, sum)\n", "XLA616", False),
    (b"import torch_xla.utils.utils as xu\nx = xu.getenv_as('A', int)\n", "XLA813", True),
    (b"import torch_xla.utils.utils as xu\ndef f(os):\n    return xu.getenv_as('A', int)\n", "XLA813", False),
    (b"import torch_xla.core.xla_model as xm\nt = xm.RateTracker()\n", "XLA408", True),
    (b"from datetime import time\nimport torch_xla.core.xla_model as xm\nt = xm.RateTracker()\n", "XLA408", False),
    (_LOADER % b"def main(d):\n    dl = pl.MpDeviceLoader(train_loader, d)\n    for x in dl:\n        f(x)\n", "XLA501", True),
    (_LOADER % b"def main(d):\n    dl = pl.MpDeviceLoader(train_loader, d)\n    it = iter(dl)\n", "XLA501", True),
    (_LOADER % b"def main(d):\n    dl = pl.MpDeviceLoader(train_loader, d)\n    run(loader=dl)\n", "XLA501", True),
    (_LOADER % b"def main(dl, d):\n    dl = pl.MpDeviceLoader(train_loader, d)\n    for x in dl:\n        f(x)\n", "XLA501", True),
    (_LOADER % b"def main(d):\n    for _, _ in pl.MpDeviceLoader(train_loader, d):\n        f()\n", "XLA501", True),
    (_LOADER % b"def main(d):\n    dl = pl.MpDeviceLoader(train_loader, d)\n    for x in dl:\n        f(x, dl=1)\n", "XLA501", True),
    (_LOADER % b"def main(d):\n    dl = pl.MpDeviceLoader(train_loader, d)\n    for x in dl:\n        f(x)\n    print(len(dl))\n",
     "XLA501", True),
    (_LOADER % b"def main(d):\n    for x in dl:\n        f(x)\n    dl = pl.MpDeviceLoader(train_loader, d)\n    for x in dl:\n"
               b"        f(x)\n", "XLA501", True),
    (_LOADER % b"def run(loader):\n    xm.mark_step(len(loader))\n\n\ndef main(d):\n    run(pl.MpDeviceLoader(train_loader, d))\n",
     "XLA501", True),
    (_LOADER % b"def main(d):\n    print(dl)\n    dl = pl.MpDeviceLoader(train_loader, d)\n    for x in dl:\n        f(x)\n",
     "XLA501", True),
    (_LOADER % b"def main(d):\n    dl = pl.MpDeviceLoader(train_loader, d)\n    for x in dl:\n        f(x)\n    dl = None\n",
     "XLA501", True),
    (_LOADER % b"def run(loader):\n    for b in loader:\n        xm.mark_step()\n\n\ndef main(d):\n"
               b"    run(pl.MpDeviceLoader(train_loader, d))\n", "XLA501", True),
    (_LOADER % b"def run(loader):\n    for b in loader:\n        xm.mark_step()\n    n = len(loader)\n    loader.x\n\n\n"
               b"def main(d):\n    run(pl.MpDeviceLoader(train_loader, d))\n", "XLA501", True),
    (_LOADER % b"def main(d):\n    for _, b in enumerate(pl.MpDeviceLoader(train_loader, d)):\n        f(b)\n", "XLA501", True),
    (_LOADER % b"def main(d):\n    p = pl.ParallelLoader(train_loader, [d])\n    for x in p.per_device_loader(d):\n        f(x)\n",
     "XLA502", True),
    (_LOADER % b"def main(d):\n    p = pl.ParallelLoader(train_loader, [d])\n    for x in p:\n        f(x)\n", "XLA502", True),
    (_LOADER % b"def main(d):\n    p = pl.ParallelLoader(train_loader, [d])\n", "XLA502", True),
    (_LOADER % b"def main(d):\n    p = pl.ParallelLoader(train_loader, [d, e])\n    for x in p.per_device_loader(d):\n        f(x)\n",
     "XLA502", False),
    (_LOADER % b"def main(d):\n    p = pl.ParallelLoader(train_loader, [d])\n    for x in p.per_device_loader(pl):\n        f(x)\n",
     "XLA502", True),
    (_LOADER % b"def main(d):\n    for x in p.per_device_loader(d):\n        f(x)\n    p = pl.ParallelLoader(train_loader, [d])\n"
               b"    for x in p.per_device_loader(d):\n        f(x)\n", "XLA502", True),
    (_LOADER % b"def main(d):\n    p = pl.ParallelLoader(train_loader, [d])\n    for x in p.per_device_loader(d):\n        f(x)\n"
               b"    g(p=1)\n", "XLA502", True),
    (_LAUNCH % b"xmp.spawn(_mp_fn, args=(flags,))", "XLA601", True),
    (_LAUNCH % b"xmp.spawn(_mp_fn, args=[*flags])", "XLA601", False),
    (_LAUNCH % b"print(xmp.spawn(_mp_fn, args=(flags,)))", "XLA601", False),
])
def test_a_transform_decided_on_the_ast_is_made_only_where_it_can_be(source: bytes, code: str, fixed: bool) -> None:
    """The LibCST builders trust the detector's decision (the device loaders' still make
    their own, the same): what it refuses stays for a human, in the code `fix` writes as in
    what `check` reports."""
    result = engine.process_source("t.py", source, _MODES["unsafe"])
    assert [d.fixed for d in result.diagnostics if d.code == code][:1] == [fixed], result.diagnostics
    assert result.new_source is not None or not fixed
    assert _seen(engine.process_source("t.py", source, dataclasses.replace(_MODES["unsafe"], rewrite=False))) == _seen(result)


def test_a_device_loader_the_transform_refuses_becomes_the_copy_of_torch_xlas_class() -> None:
    # The loop that consumes it is out of reach (`iter()`): the rule's fallback case writes a
    # copy of `pl.MpDeviceLoader` into the module (copied_helpers), as check says too.
    source = _LOADER % b"def main(d):\n    dl = pl.MpDeviceLoader(train_loader, d)\n    it = iter(dl)\n"
    result = engine.process_source("t.py", source, _MODES["unsafe"])
    finding = next(d for d in result.diagnostics if d.code == "XLA501")
    assert finding.fixed and "a copy in this module" in finding.message
    assert result.new_source is not None and b"class MpDeviceLoader:" in result.new_source
    assert b"dl = MpDeviceLoader(train_loader, d)" in result.new_source
    checked = engine.process_source("t.py", source, dataclasses.replace(_MODES["unsafe"], rewrite=False))
    assert _seen(checked) == _seen(result)
