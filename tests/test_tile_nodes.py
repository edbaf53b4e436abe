"""The tile IR's node types are final -- no class derives from one: the cost walk, the verifier and
the printer dispatch on a node's exact type -- and every node type a body may hold is one the cost
walk knows (it counts it, or lists it as counting nothing), so a new node type cannot be walked as
free work by accident."""
from __future__ import annotations

import inspect

import fusedsl.backend_ascendc.printer  # noqa: F401  (every module that could derive a node type)
import fusedsl.backend_cpu.kernel_cpu  # noqa: F401
import fusedsl.compiler  # noqa: F401
import fusedsl.tile.parse  # noqa: F401
from fusedsl.tile import kernel as K
from fusedsl.tile import kernel_cost

# the tile IR's classes that are not nodes of a stage's or the Process's body (the kernel, its
# declarations, a Ref inside a node, and a kernel of parts' RunPart / Reset, which the walk takes
# part by part)
NOT_BODY_NODES = {"TileKernel", "Stage", "Field", "Gm", "Queue", "Member", "Matmul", "Operand", "Ref",
                  "RunPart", "Reset"}


def _classes() -> dict:
    return {n: c for n, c in vars(K).items() if inspect.isclass(c) and c.__module__ == K.__name__}


def test_every_body_node_type_is_one_the_cost_walk_knows():
    classes = _classes()
    assert NOT_BODY_NODES <= set(classes)
    body = {c for n, c in classes.items() if n not in NOT_BODY_NODES}
    assert body == set(kernel_cost._NODE), \
        "a tile IR node type the walk does not know (add it to kernel_cost._NODE or _NOTHING_TO_COUNT)"


def test_no_class_derives_from_a_tile_ir_type():
    assert {n: [s.__name__ for s in c.__subclasses__()] for n, c in _classes().items() if c.__subclasses__()} == {}
