"""Code the pruner may drop because running it does nothing the program needs (pruner.py
on LibCST's tree, detect/after_fixes.py on CPython's): calls that only read, contexts that
only switch autograd state, and unittest hooks whose base versions do nothing."""

# Contexts whose entry and exit only switch autograd / autocast state: `with` one of them
# around nothing does nothing.
STATE_CONTEXTS = frozenset({"no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "autocast", "nullcontext"})
# Builtins that only read their arguments.
READERS = frozenset({"len", "isinstance", "issubclass", "hasattr", "callable", "bool", "int", "float", "str", "abs",
                     "min", "max", "getattr", "os.environ.get", "os.getenv"})
# unittest's hooks: the base class's are no-ops, so an emptied override can go.
TEST_HOOKS = frozenset({"setUp", "tearDown", "setUpClass", "tearDownClass", "asyncSetUp", "asyncTearDown"})
MODULE_HOOKS = frozenset({"setUpModule", "tearDownModule"})
