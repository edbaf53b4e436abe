"""The error a lowering raises for a kernel it cannot express (a bug or a gap, not a user error).

It lives below the schedules and the backends because both raise it: the row plan when a
kernel's values do not fit its phases, the LLVM lowering when a tile instruction has no
native form. The compiler catches it and runs that kernel on the numpy reference.
"""


class LoweringError(Exception):
    """The schedule uses something this backend does not implement (a bug, not a user error)."""
