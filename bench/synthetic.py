"""A deterministic synthetic source tree: ordinary Python files, a few carrying torch_xla idioms.

The ordinary files are shaped like application code (docstrings, imports, classes, typed
functions, loops, comprehensions, f-strings, comments), with sizes drawn from a log-normal
law close to a real package's (median ~150 lines, long tail). They never contain a byte
sequence the engine's prefilter looks for, so they measure the cost of *not* parsing.
The idiom files are real fixture sources (`fixtures/XLA*/*.py`, their `.fixed.py`
excluded) followed by ordinary code, so the parser and the rules see realistic files.
"""

from __future__ import annotations

import ast
import json
import math
import random
import shutil
from pathlib import Path

# Bumped whenever the generated text changes, so a cached tree is rebuilt.
GENERATOR_VERSION = 1

_WORDS = (
    "account batch buffer cache config count data delta entry event field frame graph group "
    "handle index item key layer limit loader mask metric model node offset order packet page "
    "parser path point queue record region report result sample scale score segment session "
    "shape signal source state step store stream table task token total value vector weight "
    "window worker"
).split()
_VERBS = "build check compute load merge parse read render reset resolve scan split update validate write".split()
_STDLIB = (
    "import os", "import sys", "import json", "import math", "import re", "import time",
    "import logging", "import itertools", "import functools", "import collections",
    "from pathlib import Path", "from dataclasses import dataclass, field",
    "from typing import Any, Iterable, Optional", "import numpy as np", "import torch",
    "from torch import nn", "import torch.nn.functional as F",
)  # fmt: skip
_PROSE = (
    "This module keeps the bookkeeping for the pipeline in one place. "
    "Values are computed lazily and cached until the next reset. "
    "The caller owns the returned objects and may mutate them freely. "
    "Errors are raised early, with the offending value in the message."
).split()


class _Writer:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.lines: list[str] = []

    def name(self) -> str:
        return "_".join(self.rng.sample(_WORDS, self.rng.randint(1, 2)))

    def func_name(self) -> str:
        return f"{self.rng.choice(_VERBS)}_{self.name()}"

    def class_name(self) -> str:
        return "".join(w.capitalize() for w in self.rng.sample(_WORDS, 2))

    def prose(self, words: int) -> str:
        start = self.rng.randrange(len(_PROSE))
        return " ".join(_PROSE[(start + i) % len(_PROSE)] for i in range(words))

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def expression(self, names: list[str]) -> str:
        a, b = self.rng.choice(names), self.rng.choice(names)
        forms = (
            f"{a} + {b} * {self.rng.randint(2, 9)}",
            f"[{a} * i for i in range({self.rng.randint(2, 64)}) if i % {self.rng.randint(2, 5)}]",
            f"{{k: v for k, v in zip({a}, {b})}}",
            f'f"{{{a}}}-{{{b}!r:>{self.rng.randint(4, 12)}}}"',
            f"{self.func_name()}({a}, scale={self.rng.random():.3f})",
            f"max({a}, {b}, key=lambda item: item[{self.rng.randint(0, 3)}])",
            f"{a} if {b} is not None else {self.rng.randint(0, 99)}",
            f"np.asarray({a}, dtype=np.float32).sum(axis={self.rng.randint(0, 1)})",
            f"torch.tensor({a}).reshape(-1, {self.rng.randint(2, 16)})",
            f"'{self.prose(3)}'.split()",
        )
        return self.rng.choice(forms)

    def block(self, indent: int, names: list[str], depth: int) -> None:
        for _ in range(self.rng.randint(2, 6)):
            roll = self.rng.random()
            if roll < 0.08:
                self.emit(indent, f"# {self.prose(self.rng.randint(4, 10))}")
            if depth < 3 and roll < 0.18:
                self.emit(indent, f"for {self.name()} in {self.rng.choice(names)}:")
                self.block(indent + 1, names, depth + 1)
            elif depth < 3 and roll < 0.30:
                self.emit(indent, f"if {self.rng.choice(names)} > {self.rng.randint(0, 9)}:")
                self.block(indent + 1, names, depth + 1)
                self.emit(indent, "else:")
                self.block(indent + 1, names, depth + 1)
            elif depth < 3 and roll < 0.36:
                self.emit(indent, "try:")
                self.block(indent + 1, names, depth + 1)
                self.emit(indent, "except (KeyError, ValueError) as exc:")
                self.emit(indent + 1, f'raise RuntimeError(f"{self.prose(3)}: {{exc}}") from exc')
            elif depth < 3 and roll < 0.40:
                self.emit(indent, f"with open({self.rng.choice(names)}, encoding='utf-8') as handle:")
                self.block(indent + 1, names, depth + 1)
            elif roll < 0.48:
                self.emit(indent, f"logger.info('%s: %d', {self.rng.choice(names)}, len({self.rng.choice(names)}))")
            else:
                target = self.name()
                self.emit(indent, f"{target} = {self.expression(names)}")
                names.append(target)

    def function(self, indent: int, method: bool) -> None:
        params = [self.name() for _ in range(self.rng.randint(0, 4))]
        params = list(dict.fromkeys(params))
        decorator = self.rng.choice(("", "", "", "", "", "@functools.lru_cache(maxsize=None)", "@staticmethod", "@property"))
        if not method and decorator in ("@staticmethod", "@property"):
            decorator = ""
        if decorator == "@property":
            params = []
        own = ["self"] if method and decorator != "@staticmethod" else []
        signature = ", ".join(own + [f"{p}: Any = None" for p in params])
        if decorator:
            self.emit(indent, decorator)
        self.emit(indent, f"def {self.func_name()}({signature}) -> Any:")
        self.emit(indent + 1, f'"""{self.prose(self.rng.randint(5, 14))}"""')
        names = params or ["DEFAULTS"]
        self.block(indent + 1, names, 1)
        self.emit(indent + 1, f"return {self.rng.choice(names)}")
        self.emit(0, "")

    def klass(self) -> None:
        if self.rng.random() < 0.3:
            self.emit(0, "@dataclass")
        self.emit(0, f"class {self.class_name()}:")
        self.emit(1, f'"""{self.prose(self.rng.randint(6, 20))}"""')
        self.emit(0, "")
        for _ in range(self.rng.randint(1, 6)):
            self.function(1, method=True)

    def module(self, target_lines: int) -> str:
        self.emit(0, f'"""{self.prose(self.rng.randint(4, 12))}')
        self.emit(0, "")
        self.emit(0, f'{self.prose(self.rng.randint(10, 30))}"""')
        self.emit(0, "")
        for line in self.rng.sample(_STDLIB, self.rng.randint(3, 9)):
            self.emit(0, line)
        self.emit(0, "")
        self.emit(0, "logger = logging.getLogger(__name__)")
        self.emit(0, f"DEFAULTS = {{'{self.name()}': {self.rng.randint(1, 999)}, '{self.name()}': {self.rng.random():.4f}}}")
        self.emit(0, "")
        while len(self.lines) < target_lines:
            if self.rng.random() < 0.35:
                self.klass()
            else:
                self.function(0, method=False)
            self.emit(0, "")
        if self.rng.random() < 0.2:
            self.emit(0, 'if __name__ == "__main__":')
            self.emit(1, "logger.setLevel(logging.INFO)")
        return "\n".join(self.lines) + "\n"


# A real package's median module length; a tree of another is named and stamped for it.
MEDIAN_LINES = 150


def ordinary(rng: random.Random, median_lines: int = MEDIAN_LINES) -> str:
    """One ordinary module, its length drawn from a log-normal law around `median_lines`."""
    lines = int(min(3000, max(8, rng.lognormvariate(math.log(median_lines), 0.9))))
    return _Writer(rng).module(lines)


def idiom_sources(repo: Path) -> list[str]:
    """Fixture sources that parse: real torch_xla / Optimum TPU idioms, every import style."""
    found = []
    for path in sorted(repo.glob("fixtures/XLA*/*.py")):
        if path.name.endswith(".fixed.py"):
            continue
        text = path.read_text(encoding="utf-8")
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        found.append(text)
    return found


def generate(root: Path, files: int, idiom_share: float, repo: Path, seed: int = 0, median_lines: int = MEDIAN_LINES) -> Path:
    """Create (or reuse, when the same parameters made it) a tree of `files` files under `root`."""
    stamp = {"version": GENERATOR_VERSION, "files": files, "idiom_share": idiom_share, "seed": seed}
    if median_lines != MEDIAN_LINES:  # a tree made before the option keeps its stamp
        stamp["median_lines"] = median_lines
    marker = root / ".bench-tree.json"
    if marker.exists() and json.loads(marker.read_text()) == stamp:
        return root
    if root.exists():
        shutil.rmtree(root)
    rng = random.Random(seed)
    idioms = idiom_sources(repo)
    carriers = set(rng.sample(range(files), round(files * idiom_share)))
    for number in range(files):
        folder = root / f"pkg{number // 200:03d}" / f"sub{number // 25 % 8}"
        folder.mkdir(parents=True, exist_ok=True)
        text = ordinary(rng, median_lines)
        if number in carriers:
            text = idioms[number % len(idioms)].rstrip("\n") + "\n\n\n" + text.split('"""', 2)[2].lstrip("\n")
        (folder / f"mod{number:05d}.py").write_text(text, encoding="utf-8")
    marker.write_text(json.dumps(stamp))
    return root
