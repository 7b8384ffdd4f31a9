"""The CPU stand-in and verify end to end: these run torch in subprocesses."""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

# Only the subprocesses import torch: in this process it would autoload torch_tpu.
if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed", allow_module_level=True)

from xla2tpu.catalogue import rules as catalogue  # noqa: E402
from xla2tpu.run.config import Config  # noqa: E402
from xla2tpu.run.engine import process_source  # noqa: E402
from xla2tpu.verify import Options, verify_paths  # noqa: E402
from xla2tpu.run.workflow import settings_for  # noqa: E402
from xla2tpu.verify.runner import Migration, migrated_env  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MLP = REPO / "fixtures" / "runnable" / "mlp_train"

SURFACE = r'''
import json, os, tempfile
import torch
import torch.distributed as dist

out = {}
dev = torch.device("tpu")
out["device"] = str(dev)
out["accelerator"] = str(torch.accelerator.current_accelerator())
out["acc"] = [torch.accelerator.is_available(), torch.accelerator.device_count(),
              torch.accelerator.current_device_index()]
torch.accelerator.synchronize()
m = torch.nn.Linear(3, 2).to("tpu")
x = torch.randn(4, 3, device="tpu:0")
y = torch.ones(4, 2).to(dev, non_blocking=True)
loss = torch.nn.functional.mse_loss(m(x), y)
loss.backward()
out["grad_device"] = m.weight.grad.device.type  # tensors live on the CPU
out["factories"] = [torch.zeros(2, device="tpu").sum().item(), torch.arange(3, device="tpu").tolist(),
                    torch.ones(2).tpu().tolist()]
src = torch.ones(2)
out["to_copies"] = src.to("tpu").data_ptr() != src.data_ptr()  # as on XLA: a new tensor
with torch.autocast("tpu"):
    out["autocast"] = str((torch.ones(2, 2, device="tpu") @ torch.ones(2, 2, device="tpu")).dtype)
f = torch.compile(lambda a: (a * 2).sin().sum(), backend="tpu")
out["compiled"] = round(f(torch.ones(3, device="tpu")).item(), 6)
torch.tpu.manual_seed(0)
a = torch.rand(2)
torch.manual_seed(0)
out["seeded"] = torch.equal(a, torch.rand(2))
try:
    torch.tpu.synchronize()
    out["internal"] = "allowed"
except RuntimeError as e:
    out["internal"] = str(e)
path = os.path.join(tempfile.mkdtemp(), "t.pt")
torch.save({"w": torch.ones(2)}, path)
out["load"] = torch.load(path, map_location="tpu")["w"].tolist()
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(torch.tpu.distributed.set_tpu_launch_env() or 29531))
dist.init_process_group("tpu", rank=0, world_size=1)
out["dist_backend"] = dist.get_backend()
t = torch.ones(2, device="tpu")
dist.all_reduce(t)
out["all_reduce"] = t.tolist()
dist.destroy_process_group()
try:
    import torch_xla  # noqa: F401
    out["torch_xla"] = "imported"
except ImportError:
    out["torch_xla"] = "blocked"
import torch_tpu  # IMP03 keeps it; must not load the real runtime
out["torch_tpu"] = torch_tpu.__version__
print(json.dumps(out))
'''


def _run(code: str, tmp_path: Path, backend: str = "cpu-standin") -> tuple[dict, list[dict]]:
    report = tmp_path / "standin.jsonl"
    script = tmp_path / "prog.py"
    script.write_text(code)
    env = migrated_env(backend, report)
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # even the guard test must not load torch_tpu here
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in report.read_text().splitlines()]
    return json.loads(proc.stdout.splitlines()[-1]), records


def test_standin_surface(tmp_path: Path) -> None:
    out, records = _run(SURFACE, tmp_path)
    assert out["device"] == "tpu" and out["accelerator"] == "tpu"
    assert out["acc"] == [True, 1, 0]
    assert out["grad_device"] == "cpu"
    assert out["factories"] == [0.0, [0, 1, 2], [1.0, 1.0]]
    assert out["to_copies"] is True
    assert out["autocast"] == "torch.bfloat16"
    assert out["compiled"] == pytest.approx(3 * 0.909297, abs=1e-5)
    assert out["seeded"] is True
    assert "internal to TorchTPU" in out["internal"] and "torch.accelerator.synchronize" in out["internal"]
    assert out["load"] == [1.0, 1.0]
    assert out["dist_backend"] == "gloo" and out["all_reduce"] == [1.0, 1.0]
    assert out["torch_xla"] == "blocked"
    assert out["torch_tpu"].endswith("cpu-standin")
    (rec,) = records
    assert rec["mode"] == "cpu" and rec["loaded"] == []
    assert [a["module"] for a in rec["attempts"]] == ["torch_xla"]
    line = SURFACE.splitlines().index("    import torch_xla  # noqa: F401") + 1
    assert rec["attempts"][0]["from"].endswith(f"prog.py:{line}")


def test_guard_mode_only_blocks(tmp_path: Path) -> None:
    """The real-TPU leg: no stand-in, but torch_xla / optimum.tpu still fail and are recorded."""
    code = ("import json\nr = []\nfor m in ('torch_xla.core.xla_model', 'optimum.tpu'):\n"
            "    try:\n        __import__(m); r.append('imported')\n"
            "    except ImportError:\n        r.append('blocked')\nprint(json.dumps({'r': r}))\n")
    out, (rec,) = _run(code, tmp_path, backend="tpu")
    assert out == {"r": ["blocked", "blocked"]}
    assert rec["mode"] == "guard"
    # (without optimum installed, `optimum` itself fails first: blocked all the same)
    assert "torch_xla" in {a["module"] for a in rec["attempts"]}


# A faithful hand migration of mlp_train (what the engine emits for it), applied as text
# so these tests do not depend on the engine's progress.
HAND = [
    (r"^import torch_xla.*\n", ""),
    (r"xm\.set_rng_state\(0\)", "torch.tpu.manual_seed(0)"),
    (r"xm\.xla_device\(\)", 'torch.device("tpu")'),
    (r"xm\.optimizer_step\(opt\)", "opt.step()"),
    (r"^\s*xm\.mark_step\(\)\n", ""),
    (r"xm\.wait_device_ops\(\)", "torch.accelerator.synchronize()"),
]
# ... and a wrong one: optimizer_step dropped without adding opt.step().
WRONG = [(r"^\s*xm\.optimizer_step\(opt\)\n", ""), *HAND]


def _migrator(subs: list[tuple[str, str]]):
    def migrate(workdir: Path, unsafe_fixes: bool, target: str) -> Migration:
        main = workdir / "main.py"
        text = main.read_text()
        for pattern, repl in subs:
            text = re.sub(pattern, repl, text, flags=re.M)
        main.write_text(text)
        return Migration(0, "", 0.0)

    return migrate


def test_verify_mlp_against_recorded_torch_xla_results() -> None:
    (o,) = verify_paths([MLP], Options(migrator=_migrator(HAND), backend="cpu-standin"))
    assert o.status == "pass", (o.reasons, o.migrated.stderr if o.migrated else None)
    assert o.baseline == "recorded"
    assert o.comparison.leaves == 10 and o.comparison.max_rel < 1e-5


def test_wrong_migration_fails_with_a_diff(capsys: pytest.CaptureFixture[str]) -> None:
    from xla2tpu.verify import output as report

    (o,) = verify_paths([MLP], Options(migrator=_migrator(WRONG), backend="cpu-standin"))
    assert o.status == "fail"
    assert o.migrated.exit_code == 0  # it runs fine: only the numbers give it away
    assert any("results differ from the recorded baseline" in r for r in o.reasons)
    diffs = "\n".join(o.comparison.diffs)
    assert "$.losses[1]: expected 0.5145663" in diffs and "$.checksum" in diffs
    assert "$.losses[0]" not in diffs  # the first loss comes before any step
    report.print_table([o])
    printed = capsys.readouterr().out
    assert "FAIL" in printed and "result differences (baseline -> migrated)" in printed


LAUNCH = '''
import json
import os
import sys
import tempfile

import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr


def _mp_fn(index, outdir):
    with open(os.path.join(outdir, f"{xr.global_ordinal()}.json"), "w") as f:
        json.dump({"index": index, "rank": xr.global_ordinal(), "world": xr.world_size()}, f)
    xm.rendezvous("written")


if __name__ == "__main__":
    outdir = tempfile.mkdtemp()
    xmp.spawn(_mp_fn, args=(outdir,))
    print(json.dumps([json.load(open(os.path.join(outdir, n))) for n in sorted(os.listdir(outdir))]))
'''


def test_the_migrated_launch_runs_one_worker_per_chip(tmp_path: Path) -> None:
    """The engine's launch (XLA601) on the stand-in with two chips: two processes, each
    with its global rank, in one "tpu" (gloo) process group."""
    result = process_source("prog.py", LAUNCH.encode(), settings_for(Config(root=tmp_path), catalogue.load(), unsafe_fixes=True))
    assert result.new_source is not None and b"torch_xla" not in result.new_source
    assert all(d.fixed for d in result.diagnostics), [d for d in result.diagnostics if not d.fixed]
    (tmp_path / "prog.py").write_bytes(result.new_source)
    env = migrated_env("cpu-standin", tmp_path / "standin.jsonl", devices=2)
    proc = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    workers = json.loads(proc.stdout.splitlines()[-1])
    assert workers == [{"index": 0, "rank": 0, "world": 2}, {"index": 1, "rank": 1, "world": 2}]
