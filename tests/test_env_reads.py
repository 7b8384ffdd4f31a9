"""Which environment variables a file reads: every reader's form is found, whichever of the
words that let a file through it holds alone."""

from __future__ import annotations

import pytest

from xla2tpu.project.env_reads import variables_read, variables_written


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


def test_a_read_through_torch_xlas_constants_names_the_variable() -> None:
    assert variables_read("rank = getenv_as(xenv.HOST_ORDINAL, int, 0)\n") == {"XRT_HOST_ORDINAL"}
    assert variables_read("d = os.environ.get(xla_env_vars.PJRT_DEVICE)\n") == {"PJRT_DEVICE"}
    assert variables_read("os.environ[xenv.PJRT_DEVICE] = 'TPU'\n") == frozenset()  # a write


def test_each_writer_is_found() -> None:
    source = ('os.environ["PJRT_DEVICE"] = "TPU"\nos.environ.setdefault("XRT_TPU_CONFIG", "x")\n'
              'os.putenv("TPU_NAME", "t")\nos.environ.update(XRT_WORKERS="w", **{"COLAB_TPU_ADDR": "a"})\n'
              'os.environ[xenv.HOST_ORDINAL] = "1"\nif os.environ["XLA_USE_BF16"] == "1": pass\n')
    assert variables_written(source) == {"PJRT_DEVICE", "XRT_TPU_CONFIG", "TPU_NAME", "XRT_WORKERS", "COLAB_TPU_ADDR",
                                         "XRT_HOST_ORDINAL"}
