#!/usr/bin/env bash
# Build (once) the "legacy" interpreter that `xla2tpu verify --legacy-python` runs the
# original torch_xla programs with: torch_xla 2.9.0 needs exactly torch 2.9.0 (the CUDA
# build from PyPI, ~7 GB), so it lives in its own venv, never next to torch 2.13.
#
#   XLA2TPU_LEGACY_VENV   where to build it (default ~/.cache/xla2tpu/legacy-venv)
#   XLA2TPU_LEGACY_BASE   the base interpreter (default python3.11, else python3)
#
# Idempotent: a stamp file records the exact requirement set; a venv whose stamp matches
# and whose torch_xla imports is reused as is. Prints the venv's python path last.
set -euo pipefail

VENV="${XLA2TPU_LEGACY_VENV:-$HOME/.cache/xla2tpu/legacy-venv}"
BASE="${XLA2TPU_LEGACY_BASE:-$(command -v python3.11 || command -v python3)}"
# Pinned: the versions the reference was read against, and a transformers that supports
# both torch 2.9 (here) and torch 2.13 (the migrated side), so the LM fixture compares
# like with like.
REQS=(torch==2.9.0 torch_xla==2.9.0 numpy transformers==4.57.1)
STAMP="$VENV/.xla2tpu-legacy-stamp"
WANT="${REQS[*]}"

check() {
  # PJRT_DEVICE=CPU: never let torch_xla look for a TPU runtime.
  PJRT_DEVICE=CPU TPU_SKIP_MDS_QUERY=1 "$VENV/bin/python" -c \
    'import torch, torch_xla; assert torch.__version__.startswith("2.9.0"), torch.__version__' \
    >/dev/null 2>&1
}

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]] && check; then
  echo "$VENV/bin/python"
  exit 0
fi

start=$(date +%s)
mkdir -p "$(dirname "$VENV")"
[[ -x "$VENV/bin/python" ]] || "$BASE" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip >&2
"$VENV/bin/python" -m pip install --quiet "${REQS[@]}" >&2
check || { echo "legacy venv at $VENV: torch_xla does not import" >&2; exit 1; }
printf '%s' "$WANT" >"$STAMP"
echo "legacy venv built in $(( $(date +%s) - start ))s" >&2
echo "$VENV/bin/python"
