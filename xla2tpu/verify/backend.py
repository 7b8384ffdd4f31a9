"""Which backend runs the migrated program: the real TPU, or the CPU stand-in.

Detection never initialises anything: it asks whether torch_tpu is installed (a spec
lookup, no import) and scans PCI devices the way torch_tpu's own hardware module does
(`torch_tpu/_internal/utils/hardware.py:_scan_pci_tpus`): a Google device (vendor
0x1ae0) of a known TPU generation whose IOMMU group is exposed under /dev/vfio.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

TPU = "tpu"
CPU_STANDIN = "cpu-standin"
BACKENDS = (TPU, CPU_STANDIN)

GOOGLE_PCI_VENDOR = "0x1ae0"
# torch_tpu 0.2.0 `_TOPOLOGY_BY_TPU_PCI_DEVICE_ID`: v4, v5p, v5e, v6e, v7.
TPU_PCI_DEVICE_IDS = frozenset({"0x005e", "0x0062", "0x0063", "0x006f", "0x0076"})

# Set to "cpu-standin" to use the stand-in even on a TPU host (e.g. to compare the two).
FORCE_ENV = "XLA2TPU_VERIFY_BACKEND"


def count_tpus(root: Path = Path("/")) -> int:
    """TPU chips exposed through VFIO, by sysfs alone (root is a fake tree in tests)."""
    count = 0
    try:
        devices = list((root / "sys/bus/pci/devices").iterdir())
    except OSError:
        return 0
    for dev in devices:
        try:
            if (dev / "vendor").read_text().strip() != GOOGLE_PCI_VENDOR:
                continue
            if (dev / "device").read_text().strip() not in TPU_PCI_DEVICE_IDS:
                continue
            group = os.readlink(dev / "iommu_group")
            (root / "dev/vfio" / os.path.basename(group)).stat()
        except OSError:
            continue
        count += 1
    return count


def torch_tpu_installed() -> bool:
    # The migrated program runs with this interpreter (sys.executable), so asking here
    # answers for it; find_spec reads metadata only and runs none of torch_tpu's code.
    try:
        return importlib.util.find_spec("torch_tpu") is not None
    except (ImportError, ValueError):
        return False


def select_backend(
    *,
    installed: bool | None = None,
    tpus: int | None = None,
    environ: dict[str, str] | None = None,
) -> str:
    """"tpu" only when torch_tpu is installed and a TPU is present; else the stand-in."""
    env = os.environ if environ is None else environ
    if env.get(FORCE_ENV) == CPU_STANDIN:
        return CPU_STANDIN
    installed = torch_tpu_installed() if installed is None else installed
    tpus = count_tpus() if tpus is None else tpus
    return TPU if installed and tpus > 0 else CPU_STANDIN
