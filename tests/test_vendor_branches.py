"""Which `if`s guard code that runs only on another vendor's XLA device."""

from __future__ import annotations

import ast

import pytest

from xla2tpu.detect.vendor_branches import other_vendor_branch


@pytest.mark.parametrize(("test", "guarded"), [
    ("is_torch_neuroncore_available()", True),
    ("is_neuron_available()", True),
    ("utils.is_torch_neuronx_available()", True),
    ("is_torch_neuroncore_available(check_device=False) and os.environ.get('X')", True),
    ("is_neuron_available() or is_tpu()", False),  # runs elsewhere too
    ("not is_neuron_available()", False),
    ("is_neuron_available", False),  # a function object is always true
    ("is_torch_xla_available()", False),
    ("neuron_enabled()", False),
])  # fmt: skip
def test_a_probe_of_another_vendor_guards_its_body(test: str, guarded: bool) -> None:
    node = ast.parse(f"if {test}:\n    pass\n").body[0]
    assert other_vendor_branch(node) is guarded
