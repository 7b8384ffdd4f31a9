"""Which environment variables a file reads: every reader's form is found, whichever of the
words that let a file through it holds alone."""

from __future__ import annotations

import pytest

from xla2tpu.project.env_reads import variables_read


@pytest.mark.parametrize("source", [
    'x = os.environ["XRT_HOST_ORDINAL"]\n',
    "if os.environ.get('PJRT_DEVICE') == 'TPU': pass\n",
    'n = getenv("TPU_NUM_DEVICES", 4)\n',
    'n = xu.getenv_as("XLA_USE_BF16", int)\n',
    'flag = xu.check_env_flag("XLA_USE_BF16")\n',
    'if "XRT_TPU_CONFIG" not in environ: pass\n',
])  # fmt: skip
def test_each_reader_is_found(source: str) -> None:
    assert len(variables_read(source)) == 1


def test_writes_and_other_text_read_nothing() -> None:
    assert variables_read('os.environ["PJRT_DEVICE"] = "TPU"\nenviron["A"] += "b"\n') == frozenset()
    assert variables_read('d = {"PJRT_DEVICE": "TPU"}\nprint(d["PJRT_DEVICE"])\n') == frozenset()
