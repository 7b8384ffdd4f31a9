"""The GitHub Action's step (action.yml): install xla2tpu from the action's own checkout, run
it with the workflow's `args`, and put the migration plan in the job summary.

Environment (set by action.yml from its inputs):
  INPUT_ARGS      the xla2tpu command line, e.g. "check src/" or "fix --diff --unsafe-fixes ."
  INPUT_SUMMARY   "true": append the plan to $GITHUB_STEP_SUMMARY
  ACTION_PATH     the action's checkout (installed with pip)
  XLA2TPU_PYTHON  an interpreter that already has xla2tpu (the test suite; skips the install)

`check` prints GitHub annotations unless `args` names another --output-format. The plan
comes from `fix --report`, which appends it to the job summary itself: added to a `fix` that
has no --report, and for `check` a dry run (`fix --diff --exit-zero`) on the same paths and
options after it. The step exits with the code of the command the workflow asked for.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import venv
from pathlib import Path

# Options of the requested command the plan's dry run must not repeat: their output belongs
# to the first run (an --output-file would be overwritten), or `fix` has no such option.
_NOT_FOR_THE_PLAN = {"--output-format": True, "--output-file": True, "--show-facts": False, "--statistics": False,
                     "--report": True, "--diff": False, "--exit-zero": False}


def _python(action_path: Path, temp: Path) -> str:
    given = os.environ.get("XLA2TPU_PYTHON")
    if given:
        return given
    env_dir = temp / "xla2tpu-venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", str(action_path)], check=True)
    return python


def _has(args: list[str], option: str) -> bool:
    return any(a == option or a.startswith(option + "=") for a in args)


def _without(args: list[str], options: dict[str, bool]) -> list[str]:
    kept, skip = [], False
    for arg in args:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in options:
            skip = options[name] and "=" not in arg
            continue
        kept.append(arg)
    return kept


def commands(args: list[str], summary: bool, plan: Path) -> list[tuple[list[str], bool]]:
    """The xla2tpu command lines to run, each with whether its exit code is the step's."""
    if not args or args[0] not in ("check", "fix"):
        return [(args, True)]
    command, rest = args[0], args[1:]
    if command == "check":
        first = args if _has(rest, "--output-format") else ["check", "--output-format", "github", *rest]
        runs = [(first, True)]
        if summary:
            runs.append((["fix", "--diff", "--exit-zero", "--report", str(plan), *_without(rest, _NOT_FOR_THE_PLAN)], False))
        return runs
    if summary and not _has(rest, "--report"):
        return [(["fix", "--report", str(plan), *rest], True)]
    return [(args, True)]


def main() -> int:
    args = shlex.split(os.environ.get("INPUT_ARGS", "check ."))
    summary = os.environ.get("INPUT_SUMMARY", "true").lower() == "true" and bool(os.environ.get("GITHUB_STEP_SUMMARY"))
    temp = Path(os.environ.get("RUNNER_TEMP") or "/tmp")
    python = _python(Path(os.environ.get("ACTION_PATH", Path(__file__).resolve().parents[1])), temp)
    code = 0
    for line, decides in commands(args, summary, temp / "xla2tpu-plan.md"):
        print(f"::group::xla2tpu {shlex.join(line)}" if not decides else f"xla2tpu {shlex.join(line)}", flush=True)
        # The plan's dry run repeats the findings the first run printed: only its report is wanted.
        quiet = None if decides else subprocess.DEVNULL
        done = subprocess.run([python, "-m", "xla2tpu", *line], stdout=quiet, stderr=quiet)
        if not decides:
            print("::endgroup::", flush=True)
        if decides:
            code = done.returncode
        elif done.returncode not in (0, 1):
            print(f"::warning::the migration plan could not be written (xla2tpu exited {done.returncode})", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
