"""Figures of an ecosystem run (per repository and in total), the generated Markdown tables
of docs/ecosystem.md, and the comparison of two runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

FIX_CLASSES = ("safe", "unsafe", "manual")


def figures(repo: dict) -> dict:
    """The recorded figures of one repository's run."""
    files = repo["files"].values()
    findings = [f for record in files for f in record["findings"]]
    legacy = [r for r in files if r["before"]["legacy_import"]]
    programs = [r for r in legacy if r["before"]["program"]]
    errors = [r["error"] for r in files if r["error"]]
    return {
        "files": repo["file_count"],
        "lines": repo["line_count"],
        "legacy_files": len(legacy),
        "legacy_files_freed": sum(1 for r in legacy if not r["after"]["legacy_import"]),
        "legacy_programs": len(programs),
        "programs_freed": sum(1 for r in programs if not r["after"]["legacy_import"]),
        "changed_files": sum(1 for r in files if r["changed"]),
        "findings": len(findings),
        "by_class": {c: sum(1 for f in findings if f[4] == c) for c in FIX_CLASSES},
        "by_code": dict(sorted(Counter(f[0] for f in findings).items())),
        "fixed": sum(1 for f in findings if f[5]),
        "internal_errors": sum(1 for e in errors if e.startswith("internal error")),
        "unreadable": sorted(Counter(_reason(e) for e in errors if not e.startswith("internal error")).items()),
        "crashes": sum(1 for step in ("check", "fix", "fix_again") if repo[step]["crashed"]),
        "no_longer_parse": sum(1 for r in files if r["before"]["parses"] and not r["after"]["parses"]),
        "non_idempotent": sum(1 for r in files if not r["idempotent"]),
        "promised_not_fixed": sum(1 for r in files if r["promised_fixes"] and not r["changed"]),
        "tpu_introduced": sum(1 for r in files if r["after"]["tpu_spellings"] > r["before"]["tpu_spellings"]),
        "check_wall": repo["check"]["wall"] or 0.0,
        "check_cpu": repo["check"]["cpu"] or 0.0,
        "fix_wall": repo["fix"]["wall"] or 0.0,
        "fix_cpu": repo["fix"]["cpu"] or 0.0,
    }


def _reason(error: str) -> str:
    """An error message without what is particular to one file (line numbers, names)."""
    first = error.splitlines()[0]
    return first.split(":")[0] if ":" in first else first


def total(rows: Iterable[dict]) -> dict:
    out: dict = {}
    for row in rows:
        for key, value in row.items():
            if isinstance(value, dict):
                bucket = out.setdefault(key, {})
                for k, v in value.items():
                    bucket[k] = bucket.get(k, 0) + v
            elif isinstance(value, list):
                merged = Counter(dict(out.get(key, [])))
                merged.update(dict(value))
                out[key] = sorted(merged.items())
            else:
                out[key] = round(out.get(key, 0) + value, 3)
    return out


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "–"


def markdown(result: dict) -> str:
    """The generated part of docs/ecosystem.md."""
    rows = [(repo, figures(repo)) for repo in result["repos"]]
    tpu = total(f for r, f in rows if r["kind"] == "tpu")
    control = total(f for r, f in rows if r["kind"] == "control")
    everything = total(f for _, f in rows)
    out = [
        f"Run of {result['date']} with xla2tpu {result['xla2tpu']} (`fix --unsafe-fixes`), "
        f"{len(rows)} repositories ({sum(1 for r, _ in rows if r['kind'] == 'tpu')} TPU, "
        f"{sum(1 for r, _ in rows if r['kind'] == 'control')} negative controls), on {result['machine']}.",
        "",
        "### Totals",
        "",
        "| | TPU repos | controls | all |",
        "|---|---:|---:|---:|",
    ]
    for label, key in [("files (.py, .ipynb)", "files"), ("lines", "lines"),
                       ("files importing torch_xla / Optimum TPU", "legacy_files"),
                       ("… with no such import left after fix", "legacy_files_freed"),
                       ("programs (`__main__`) importing it", "legacy_programs"),
                       ("… that no longer import it (could start)", "programs_freed"),
                       ("files changed by fix", "changed_files"), ("findings", "findings"),
                       ("findings fixed automatically", "fixed"),
                       ("internal errors", "internal_errors"), ("process crashes", "crashes"),
                       ("outputs that no longer parse", "no_longer_parse"),
                       ("non-idempotent files", "non_idempotent"),
                       ("files `check` promised a fix for, left unchanged", "promised_not_fixed"),
                       ("files where fix introduced a TPU spelling", "tpu_introduced")]:
        out.append(f"| {label} | {tpu.get(key, 0)} | {control.get(key, 0)} | {everything.get(key, 0)} |")
    out += [
        f"| share of findings fixed | {_pct(tpu.get('fixed', 0), tpu.get('findings', 0))} | "
        f"{_pct(control.get('fixed', 0), control.get('findings', 0))} | "
        f"{_pct(everything.get('fixed', 0), everything.get('findings', 0))} |",
        f"| share of torch_xla programs that could start | {_pct(tpu.get('programs_freed', 0), tpu.get('legacy_programs', 0))} | "
        f"{_pct(control.get('programs_freed', 0), control.get('legacy_programs', 0))} | "
        f"{_pct(everything.get('programs_freed', 0), everything.get('legacy_programs', 0))} |",
        f"| check wall / CPU s | {tpu.get('check_wall', 0):.1f} / {tpu.get('check_cpu', 0):.1f} | "
        f"{control.get('check_wall', 0):.1f} / {control.get('check_cpu', 0):.1f} | "
        f"{everything.get('check_wall', 0):.1f} / {everything.get('check_cpu', 0):.1f} |",
        f"| fix wall / CPU s | {tpu.get('fix_wall', 0):.1f} / {tpu.get('fix_cpu', 0):.1f} | "
        f"{control.get('fix_wall', 0):.1f} / {control.get('fix_cpu', 0):.1f} | "
        f"{everything.get('fix_wall', 0):.1f} / {everything.get('fix_cpu', 0):.1f} |",
        "",
        "Findings by fix class (all repositories): "
        + ", ".join(f"{c} {everything.get('by_class', {}).get(c, 0)}" for c in FIX_CLASSES) + ".",
        "",
        "### Per repository",
        "",
        "| repository | kind | files | lines | torch_xla files (freed) | programs (freed) | findings safe/unsafe/manual | fixed | int. err. | no parse | non-idem. | tpu in output | check s | fix s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for repo, f in rows:
        c = f["by_class"]
        out.append(
            f"| {repo['name']}@{repo['commit'][:8]} | {repo['kind']} | {f['files']} | {f['lines']} | "
            f"{f['legacy_files']} ({f['legacy_files_freed']}) | {f['legacy_programs']} ({f['programs_freed']}) | "
            f"{c['safe']}/{c['unsafe']}/{c['manual']} | {_pct(f['fixed'], f['findings'])} | {f['internal_errors']} | "
            f"{f['no_longer_parse']} | {f['non_idempotent']} | {f['tpu_introduced']} | "
            f"{f['check_wall']:.2f} | {f['fix_wall']:.2f} |")
    out += ["", "### Findings by code (all repositories)", "", "| code | findings | fixed |", "|---|---:|---:|"]
    fixed_by_code: Counter = Counter()
    for repo in result["repos"]:
        for record in repo["files"].values():
            fixed_by_code.update(f[0] for f in record["findings"] if f[5])
    for code, count in sorted(everything.get("by_code", {}).items(), key=lambda kv: (-kv[1], kv[0])):
        out.append(f"| {code} | {count} | {fixed_by_code.get(code, 0)} |")
    unreadable = everything.get("unreadable", [])
    problems = [(r["name"], p) for r in result["repos"] for p in r["problems"]]
    out += ["", "### Files that could not be read, and corpus problems", ""]
    out += [f"- {count} × {reason}" for reason, count in unreadable] or ["- no unreadable files"]
    out += [f"- {name}: {problem}" for name, problem in problems]
    missing = result.get("missing", [])
    out += [f"- snapshot missing from the cache: {name}" for name in missing]
    return "\n".join(out) + "\n"


def _finding_keys(record: dict | None) -> Counter:
    if record is None:
        return Counter()
    return Counter((f[0], f[1], f[2], f[3], f[4], f[5]) for f in record["findings"])


def compare(old: dict, new: dict) -> list[str]:
    """What changed between two runs: per file, output changed, findings that appeared or went."""
    lines: list[str] = []
    old_repos = {r["name"]: r for r in old["repos"]}
    for repo in new["repos"]:
        before = old_repos.get(repo["name"])
        if before is None:
            lines.append(f"{repo['name']}: new in this run")
            continue
        if before["commit"] != repo["commit"]:
            lines.append(f"{repo['name']}: commit changed {before['commit'][:12]} -> {repo['commit'][:12]}")
        for name in sorted(set(before["files"]) | set(repo["files"])):
            was, now = before["files"].get(name), repo["files"].get(name)
            where = f"{repo['name']}:{name}"
            if was is None or now is None:
                lines.append(f"{where}: file {'added' if was is None else 'gone'}")
                continue
            if was["output_sha"] != now["output_sha"]:
                lines.append(f"{where}: output changed")
            old_keys, new_keys = _finding_keys(was), _finding_keys(now)
            for key in sorted((new_keys - old_keys).elements(), key=str):
                lines.append(f"{where}: + {key[0]} {_at(key)} {key[4]}{' fixed' if key[5] else ''}")
            for key in sorted((old_keys - new_keys).elements(), key=str):
                lines.append(f"{where}: - {key[0]} {_at(key)} {key[4]}{' fixed' if key[5] else ''}")
    for name in sorted(set(old_repos) - {r["name"] for r in new["repos"]}):
        lines.append(f"{name}: not in this run")
    return lines


def _at(key: tuple) -> str:
    return (f"cell {key[1]}:" if key[1] is not None else "") + f"{key[2]}:{key[3]}"
