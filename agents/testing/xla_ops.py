"""What XLA compiles in a graph, for tests that compiled code avoids the
operations that `agents.tools.compiled_ops` replaces."""

import collections

# The operations that XLA translates one at a time, through MLIR.
SLOW_TO_TRANSLATE = frozenset((
    'Select', 'Relu', 'ReluGrad', 'IsFinite', 'IsNan', 'Sqrt', 'Rsqrt',
    'CheckNumerics', 'Exp', 'Tanh', 'Cos', 'Abs', 'Sigmoid', 'Softmax',
    'LogSoftmax', 'Expm1', 'Log1p', 'Floor', 'Sign', 'Atan', 'Acos'))


def compiled_op_types(graph):
    """`collections.Counter` of the op types in the functions of `graph`
    that XLA compiles, and in those they call (loop bodies, branches)."""
    library = {
        function.signature.name: function
        for function in graph.as_graph_def().library.function}
    counts = collections.Counter()
    seen = set()

    def _visit(name):
        if name in seen or name not in library:
            return
        seen.add(name)
        for node in library[name].node_def:
            counts[node.op] += 1
            _visit(node.op)
            for value in node.attr.values():
                if value.HasField('func'):
                    _visit(value.func.name)
                for function in value.list.func:
                    _visit(function.name)

    for name, function in library.items():
        if function.attr['_XlaMustCompile'].b:
            _visit(name)
    return counts
