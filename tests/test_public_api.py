"""Every `torch.tpu.*` / `torch.accelerator.*` name a fix emits exists and is callable from user code.

The names come from the catalogue's `replace` / `rename` templates and from the string
constants of the transforms. They are checked against the installed torch-tpu's own
public table, `torch_tpu._internal.public_api._PUBLIC_MODULES`, and each export's
`__tt_api_stage__`: an "Internal" name raises `RuntimeError` when user code calls it on
torch >= 2.11, and a "Deprecated" one is on its way out, so a rewrite may emit neither.

torch-tpu is a test extra, not a dependency: without torch and torch-tpu installed the
check skips. It runs in a subprocess with `TPU_SKIP_MDS_QUERY=1` and backend autoload off,
reading tables and annotations only, so no TPU runtime is ever initialised and the test
process never imports torch.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from xla2tpu.catalogue import rules as catalogue

EMITTED = re.compile(r"\btorch\.(?:tpu|accelerator)(?:\.[A-Za-z_]\w*)+")
TRANSFORMS = Path(catalogue.__file__).resolve().parents[1] / "rewrite" / "transforms"
# Stages a rewrite must never emit (torch_tpu._internal.utils.annotations.Stage values).
FORBIDDEN_STAGES = {"Internal", "Deprecated"}


def emitted_names() -> set[str]:
    """`torch.tpu.*` / `torch.accelerator.*` names the fixes can write into user code."""
    names: set[str] = set()
    for rule in catalogue.load():
        for case in rule.cases:
            if case.action in ("replace", "rename"):
                names.update(EMITTED.findall(case.template))
    for path in sorted(TRANSFORMS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.update(EMITTED.findall(node.value))
    return names


def test_emitted_names_are_found() -> None:
    # The extraction itself: a regression here would make the check below vacuous.
    names = emitted_names()
    assert "torch.tpu.distributed.topology_aware_mesh" in names  # XLA705's rename
    assert "torch.accelerator.synchronize" in names  # XLA201's replacement
    assert not any(n.endswith(".") for n in names)


# Runs in the subprocess: reads the public table and the stage annotations without
# calling anything or invoking a descriptor (some, like `default_generators`, touch the
# device when read).
_PROBE = r'''
import importlib, importlib.metadata, inspect, json, sys
import torch
import torch_tpu
from torch_tpu._internal import public_api

def resolve(target):
    module, _, path = target.partition(":")
    obj = importlib.import_module(module)
    for part in path.split(".") if path else ():
        obj = inspect.getattr_static(obj, part)
    return obj

def stage_of(obj):
    for candidate in (obj, getattr(obj, "__func__", None), getattr(obj, "fget", None)):
        stage = getattr(candidate, "__tt_api_stage__", None) if candidate is not None else None
        if stage is not None:
            return str(getattr(stage, "value", stage))
    return None

def check_tpu(name):
    if name in public_api._PUBLIC_MODULES:
        return "ok", None  # a public module itself, e.g. torch.tpu.distributed
    modules = [m for m in public_api._PUBLIC_MODULES if name.startswith(m + ".")]
    if not modules:
        return "missing", "no public torch.tpu module holds it"
    module = max(modules, key=len)
    spec = public_api._PUBLIC_MODULES[module]
    export = name[len(module) + 1:].split(".")[0]
    if export not in spec.exports:
        return "missing", f"{module} does not export {export!r}"
    stages = resolve(spec.stages) if spec.stages else {}
    if export in stages:
        return "ok", str(stages[export].stage.value)
    target = spec.exports[export]
    target = getattr(target, "target", target)
    try:
        obj = resolve(target)
    except Exception as exc:  # e.g. an export that needs jax
        return "missing", f"{target} cannot be imported: {exc!r}"
    return "ok", stage_of(obj)

def check_accelerator(name):
    obj = torch
    for part in name.split(".")[1:]:
        try:
            obj = inspect.getattr_static(obj, part)
        except AttributeError:
            return "missing", f"torch {torch.__version__} has no {name}"
    return "ok", None

names = json.load(sys.stdin)
out = {"torch": torch.__version__, "torch_tpu": importlib.metadata.version("torch-tpu"), "names": {}}
for name in names:
    check = check_tpu if name.startswith("torch.tpu.") else check_accelerator
    out["names"][name] = check(name)
json.dump(out, sys.stdout)
'''


def _probe(names: list[str]) -> dict:
    env = dict(os.environ, TPU_SKIP_MDS_QUERY="1", TORCH_DEVICE_BACKEND_AUTOLOAD="0", PYTHONWARNINGS="ignore")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE],
        input=json.dumps(names),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"the torch-tpu probe failed:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout)


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("torch_tpu") is None,
    reason="needs the test extra torch==2.13.0 + torch-tpu==0.2.0 (pip install -e '.[test]'); "
    "the emitted torch.tpu names are checked against the installed torch-tpu's public table",
)
def test_emitted_names_are_public_in_installed_torch_tpu() -> None:
    names = sorted(emitted_names())
    result = _probe(names)
    problems = []
    for name in names:
        status, detail = result["names"][name]
        if status != "ok":
            problems.append(f"{name}: {detail}")
        elif name.startswith("torch.tpu.") and detail in FORBIDDEN_STAGES:
            problems.append(f"{name}: stage {detail} (emit the torch.accelerator.* spelling instead)")
    versions = f"torch {result['torch']}, torch-tpu {result['torch_tpu']}"
    assert not problems, f"rules emit names user code cannot use ({versions}):\n" + "\n".join(problems)
