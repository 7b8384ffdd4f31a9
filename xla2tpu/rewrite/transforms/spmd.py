"""A torch_xla SPMD program as TorchTPU's one process per chip with DTensor: the launch,
the mesh (and the replicated model), the sharded batch and the host reads
(detect/spmd_program.py decides, on CPython's tree, whether the whole program migrates,
and says why each piece is written as it is; this module builds the pieces on LibCST's).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

import libcst as cst

from xla2tpu.catalogue import templates
from xla2tpu.detect import spmd_program
from xla2tpu.detect.conditions import literal
from xla2tpu.detect.spmd_program import Program
from xla2tpu.rewrite.transforms.base import CallSite, Rewrite, transform
from xla2tpu.rewrite.transforms.forms import fresh_name, render_expression, render_statements, tuple_items


@transform(spmd_program.LAUNCH_TEMPLATE)
def spmd_launch(site: CallSite) -> Rewrite | None:
    if not isinstance(site.made, Program) or not isinstance(site.statement, cst.Expr):
        return None
    count = cst.Name(fresh_name(site, "tpu_processes"))
    return render_statements(site, [spmd_program.LAUNCH, spmd_program.JOIN], {"count": count})


@transform(spmd_program.MESH_TEMPLATE)
def spmd_mesh(site: CallSite) -> Rewrite | None:
    program = site.made
    if not isinstance(program, Program) or not {"mesh_shape", "axis_names"} <= set(site.args):
        return None
    imports: set[str] = set()
    expression = render_expression(site, spmd_program.DEVICE_MESH, imports,
                                   {"shape": site.args["mesh_shape"], "names": site.args["axis_names"]})
    line = next((p for p in reversed(site.parents) if isinstance(p, cst.SimpleStatementLine)), None)
    function = next((p for p in site.parents if isinstance(p, cst.FunctionDef)), None)
    if line is None or function is None:
        return None
    later: list[tuple[cst.CSTNode, Callable[[cst.CSTNode], cst.CSTNode]]] = []
    # The last sharded parameter's statement replicates the rest; FSDP2 shards them all.
    if not program.parameters and not program.fsdp:
        replicate = templates.render(spmd_program.REPLICATE, {"model": cst.Name(program.model),
                                                              "mesh": cst.Name(program.mesh)},
                                     {}, site.spell, statement=True)
        imports |= replicate.imports
        later.append((line, lambda node: cst.FlattenSentinel([node, replicate.node])))  # type: ignore[arg-type]
    reads = [s for s in _statements(function) if _has_read(s, program.derived)]
    if len(reads) != program.reads:
        return None  # not the statements the decision counted: build nothing rather than half
    mean = _mean_read(site, program, imports)
    later.extend((statement, _full_reads(program.derived, mean)) for statement in reads)
    return Rewrite(expression=expression, later=later, imports=imports)  # type: ignore[arg-type]


def _mean_read(site: CallSite, program: Program,
               imports: set[str]) -> Callable[[str, cst.BaseExpression], cst.BaseExpression | None]:
    """What a host read of a value of the FSDP2 program's batch shard reads first: for a loss
    (`program.losses`), the mean over the processes (None: the value itself is a DTensor)."""
    def mean(root: str, value: cst.BaseExpression) -> cst.BaseExpression | None:
        if root not in program.losses:
            return None
        rendered = templates.render(spmd_program.MEAN_READ, {"value": value, "mesh": cst.Name(program.mesh)}, {}, site.spell)
        assert isinstance(rendered.node, cst.BaseExpression)
        return rendered.node

    if program.losses:
        imports |= templates.render(spmd_program.MEAN_READ, {"value": cst.Name("_"), "mesh": cst.Name(program.mesh)},
                                    {}, site.spell).imports
    return mean


@transform(spmd_program.FSDP_TEMPLATE)
def spmd_fsdp(site: CallSite) -> Rewrite | None:
    program = site.made
    if not isinstance(program, Program) or not program.fsdp or "module" not in site.args:
        return None
    imports: set[str] = set()
    expression = render_expression(site, spmd_program.FULLY_SHARD, imports, {"mesh": cst.Name(program.mesh)})
    return Rewrite(expression=expression, imports=imports)


@transform(spmd_program.SHARD_TEMPLATE)
def spmd_shard(site: CallSite) -> Rewrite | None:
    program = site.made
    spec = site.args.get("partition_spec")
    items = None if spec is None else tuple_items(spec)
    if not isinstance(program, Program) or items is None or not {"t", "mesh"} <= set(site.args):
        return None
    shards = spmd_program.placements([_value(item) for item in items], program.axes)
    if shards is None:
        return None
    shard, replicate = spmd_program.PLACEMENTS
    text = ", ".join(replicate if dim is None else shard.format(dim=dim) for dim in shards)
    tensor = site.args["t"]
    if isinstance(tensor, cst.Name):
        shard = spmd_program.SHARD_LOCAL if program.fsdp else spmd_program.SHARD
        return render_statements(site, [shard.replace("{placements}", f"[{text}]")])
    parameter = _spelling(tensor)
    if parameter not in program.parameters:
        return None
    statements = [spmd_program.SHARD_PARAMETER.replace("{placements}", f"[{text}]")]
    if parameter == program.parameters[-1]:  # then every other parameter is replicated
        statements.append(spmd_program.REPLICATE)
    return render_statements(site, statements, {"model": cst.Name(program.model)})


def _spelling(node: cst.BaseExpression) -> str:
    """`node` as the decision spelled it (`ast.unparse`), whatever its spacing here."""
    return ast.unparse(ast.parse(cst.Module([]).code_for_node(node).strip(), mode="eval").body)


def _value(node: cst.BaseExpression) -> object:
    value = literal(node)
    return value if isinstance(value, (str, int)) or value is None else object()


def _statements(function: cst.FunctionDef) -> list[cst.SimpleStatementLine]:
    found: list[cst.SimpleStatementLine] = []

    class Lines(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
            found.append(node)
            return False

    function.body.visit(Lines())
    return found


def _root(node: cst.BaseExpression) -> str | None:
    """The name an attribute, call or subscript chain starts from (`loss` in `loss.detach().item`)."""
    while isinstance(node, (cst.Attribute, cst.Call, cst.Subscript)):
        node = node.value if isinstance(node, (cst.Attribute, cst.Subscript)) else node.func
    return node.value if isinstance(node, cst.Name) else None


def _read(call: cst.Call, derived: frozenset[str]) -> bool:
    """A host read of a DTensor: the first one in its chain (`out.cpu().tolist()` reads the
    DTensor once, at `.cpu()`)."""
    func = call.func
    return (isinstance(func, cst.Attribute) and func.attr.value in spmd_program.HOST_READS and not call.args
            and _root(func.value) in derived and not _read_below(func.value))


def _read_below(node: cst.BaseExpression) -> bool:
    """Whether the chain `node` ends already reads on the host (or reads the full tensor)."""
    while isinstance(node, (cst.Attribute, cst.Call, cst.Subscript)):
        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in (*spmd_program.HOST_READS, spmd_program.FULL)):
            return True
        node = node.value if isinstance(node, (cst.Attribute, cst.Subscript)) else node.func
    return False


def _has_read(statement: cst.SimpleStatementLine, derived: frozenset[str]) -> bool:
    found = False

    class Reads(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            found = found or _read(node, derived)

    statement.visit(Reads())
    return found


def _full_reads(derived: frozenset[str],
                mean: Callable[[str, cst.BaseExpression], cst.BaseExpression | None]) -> Callable[[cst.CSTNode], cst.CSTNode]:
    """An edit of a statement: each host read of a DTensor reads its full value first (of a
    plain loss, the DTensor `mean` makes of it)."""

    class Full(cst.CSTTransformer):
        def __init__(self) -> None:
            super().__init__()
            self.fstrings: list[cst.CSTNode] = []  # the f-strings around the call (their quotes)

        def visit_FormattedString(self, node: cst.FormattedString) -> None:
            self.fstrings.append(node)

        def leave_FormattedString(self, original_node: cst.FormattedString,
                                  updated_node: cst.FormattedString) -> cst.FormattedString:
            self.fstrings.pop()
            return updated_node

        def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
            if not _read(updated_node, derived):
                return updated_node
            func = updated_node.func
            assert isinstance(func, cst.Attribute)
            root = _root(func.value)
            averaged = mean(root, func.value) if root is not None else None
            value = templates.fit_quotes(self.fstrings, averaged) if averaged is not None else func.value
            full = cst.Call(cst.Attribute(value, cst.Name(spmd_program.FULL)))
            return updated_node.with_changes(func=func.with_changes(value=full))

    return lambda node: node.visit(Full())
