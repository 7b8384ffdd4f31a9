"""The one-line headline the default text output prints for a finding (report/headline.py)."""

from __future__ import annotations

import pytest

from xla2tpu.report.headline import headline


@pytest.mark.parametrize(("message", "expected"), [
    # A replacement says it all: the reason after it is one flag away.
    ('`xm.xla_device()` → `torch.device("tpu")`: TPU is a native PyTorch device under TorchTPU',
     '`xm.xla_device()` → `torch.device("tpu")`'),
    ("`xr.world_size()` → `torch.distributed.get_world_size()` (unsafe: exact once initialised)",
     "`xr.world_size()` → `torch.distributed.get_world_size()`"),
    # A clause of a few words beside the code.
    ("`met.metric_names` reads torch_xla's LazyTensor counters, which TorchTPU does not keep: delete it",
     "`met.metric_names` reads torch_xla's LazyTensor counters, which TorchTPU does not keep"),
    # The source alone says nothing: the headline runs on to the next boundary.
    ("`xr.use_spmd()`: TorchTPU has no SPMD mode; delete it, launch one process per chip",
     "`xr.use_spmd()`: TorchTPU has no SPMD mode"),
    # Boundaries inside code spans do not cut; the facts behind a case go.
    ("`f(a: int; b)` is torch_xla's, with no TorchTPU counterpart: drop it [because processes=spawn (line 3 `x: y`)]",
     "`f(a: int; b)` is torch_xla's, with no TorchTPU counterpart"),
    # A fix offered but not made says so.
    ("`xmp.spawn(fn)` → a TorchTPU launch (unsafe: spawned) (not rewritten: `xmp` is bound twice)",
     "`xmp.spawn(fn)` → a TorchTPU launch (not rewritten)"),
    ("remove `xm.mark_step()`", "remove `xm.mark_step()`"),
])
def test_headline(message: str, expected: str) -> None:
    assert headline(message) == expected
