"""Code the pruner may drop because running it only reads (pruner.py on LibCST's tree,
detect/after_fixes.py on CPython's): the calls and contexts it knows do nothing else."""

# Contexts whose entry and exit only switch autograd / autocast state: `with` one of them
# around nothing does nothing.
STATE_CONTEXTS = frozenset({"no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "autocast", "nullcontext"})
# Builtins that only read their arguments.
READERS = frozenset({"len", "isinstance", "issubclass", "hasattr", "callable", "bool", "int", "float", "str", "abs",
                     "min", "max", "getattr", "os.environ.get", "os.getenv"})
