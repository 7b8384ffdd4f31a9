"""The notebook writer: new sources spliced into the JSON text, every other byte kept.

For any layout `json.dumps` can write, replacing sources in place must give exactly what
`json.dumps` writes for the changed notebook with the same options; the post-processed
layouts (`\\/`, upper-case `\\u` escapes, CRLF) are checked the same way.
"""

from __future__ import annotations

import copy
import json
import re

import pytest

from xla2tpu.sources.notebook_json import LayoutError, replace_sources, sources

NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["Cells hold \"source\": [\"not\", \"this\"] {x}\n", "é / 日本"]},
        {"cell_type": "code", "metadata": {"id": "a"}, "outputs": [{"text": ["\"source\": ["]}], "source": [
            "import torch_xla.core.xla_model as xm\n", "s = \"quote \\\" ] } [ {\"  # café\n", "device = xm.xla_device()"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["xm.mark_step()"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": "x = 1\ny = '\\t/'\n"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["one line"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": []},
    ],
    "metadata": {"kernelspec": {"name": "python3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}
NEW = {
    1: "import torch\ns = \"quote \\\" ] } [ {\"  # café\ndevice = torch.device(\"tpu\")  # é → 🚀 / \u2028\r\n",
    2: "",
    3: "x = 1\ny = '\\t/'\nz = \"→\"\n",
    4: "one line\nand a second\nand a third",
}
LAYOUTS = {
    "nbformat": {"indent": 1, "sort_keys": True, "ensure_ascii": False},
    "colab": {"indent": 2, "ensure_ascii": False},
    "indent-4-ascii": {"indent": 4, "ensure_ascii": True},
    "tab": {"indent": "\t", "ensure_ascii": False},
    "one-line": {"ensure_ascii": False},
    "compact": {"separators": (",", ":"), "ensure_ascii": False},
    "compact-ascii": {"separators": (",", ":"), "ensure_ascii": True},
}
POST = {
    "as-written": lambda text: text,
    "slashes-upper-hex-crlf": lambda text: re.sub(
        r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), text.replace("/", "\\/")).replace("\n", "\r\n"),
}


def _changed() -> dict:
    changed = copy.deepcopy(NOTEBOOK)
    for index, text in NEW.items():
        old = changed["cells"][index]["source"]
        changed["cells"][index]["source"] = text if isinstance(old, str) else re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+", text)
    return changed


@pytest.mark.parametrize("post", POST, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
@pytest.mark.parametrize("final", ["", "\n"], ids=["no-final-newline", "final-newline"])
def test_replacing_sources_writes_what_the_same_writer_would(layout: str, post: str, final: str) -> None:
    options = LAYOUTS[layout]
    write = POST[post]
    text = write(json.dumps(NOTEBOOK, **options)) + write(final)
    out = replace_sources(text, NEW)
    assert out == write(json.dumps(_changed(), **options)) + write(final)
    assert json.loads(out) == _changed()


def test_a_line_split_into_several_strings_keeps_them() -> None:
    # nbformat splits with str.splitlines, so at U+2028 too: the line is still one line.
    text = '{"cells": [{"source": ["s = \\"a\u2028", "b\\"\\n", "x = 1"]}]}'
    assert replace_sources(text, {0: 's = "a\u2028b"\nx = 2'}) == '{"cells": [{"source": ["s = \\"a\u2028", "b\\"\\n", "x = 2"]}]}'


def test_unchanged_lines_keep_their_own_escapes() -> None:
    # One writer's choices the document does not show everywhere (here: `\u00e9` in one
    # line, raw UTF-8 in another) stay as they were on the lines a fix leaves alone.
    text = '{"cells": [{"cell_type": "code", "source": ["a = \\"caf\\u00e9\\"\\n", "b = 1\\n", "c = \\"é\\""]}]}'
    out = replace_sources(text, {0: 'a = "café"\nb = 2\nc = "é"'})
    assert out == '{"cells": [{"cell_type": "code", "source": ["a = \\"caf\\u00e9\\"\\n", "b = 2\\n", "c = \\"é\\""]}]}'


def test_a_repeated_key_counts_as_json_loads_counts_it() -> None:
    text = '{"cells": [{"source": "first", "cell_type": "code", "source": "second"}], "cells": [{"source": "third"}]}'
    assert json.loads(replace_sources(text, {0: "new"})) == json.loads(text) | {"cells": [{"source": "new"}]}


def test_every_source_is_found_whatever_the_strings_hold() -> None:
    text = json.dumps(NOTEBOOK, indent=1)
    found = sources(text)
    assert [json.loads(text[s.start : s.end]) for s in found if s is not None] == [c["source"] for c in NOTEBOOK["cells"]]


@pytest.mark.parametrize(
    ("text", "index"),
    [
        ('{"cells": [{"cell_type": "code"}]}', 0),  # no source
        ('{"cells": [{"source": "x"}]}', 1),  # no such cell
        ('{"nbformat": 4}', 0),  # no cells
    ],
)
def test_a_source_that_is_not_there_is_an_error(text: str, index: int) -> None:
    with pytest.raises(LayoutError):
        replace_sources(text, {index: "x"})
