"""xla2tpu verify: loaded at start-up of the program under test (this directory is put
first on its PYTHONPATH). Never imported by xla2tpu itself.

XLA2TPU_STANDIN selects what it does:
  cpu    the CPU stand-in: "tpu" becomes a device name whose tensors live on the CPU
  guard  (real TPU runs) only block torch_xla / optimum.tpu and record attempts
"""
import os
import sys

if os.environ.get("XLA2TPU_STANDIN"):
    import _xla2tpu_standin

    _xla2tpu_standin.activate(os.environ["XLA2TPU_STANDIN"])

# This file shadows any other sitecustomize (a venv's, a distro's): run the next one so
# the program sees the interpreter it would see without us.
def _chain() -> None:
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_chain()
del _chain
