"""`k.save(dir)`: write the kernel's CANN project in the layout asked for.

The two layouts are built by `project.py` (kernel-launch sample) and `project_op.py` (op
project, which reuses project.py's shared files); this module only picks one and hands the
files to project_writer.write_tree, which never touches files fusedsl did not write.
"""
from __future__ import annotations

from ..errors import ProjectError, user_frame
from .printer import VERSION
from .printers import printer_for_plan
from .project import Program, kernel_launch_files, scalar_values, symbol_sizes
from .project_op import op_project_files
from .project_writer import write_tree

_LAYOUTS = ("kernel", "op")


def write_project(compiled, path: str, *, layout: str = "kernel", overwrite: bool = False,
                  sizes: dict | None = None, scalars: dict | None = None) -> str:
    if layout not in _LAYOUTS:
        raise ProjectError(f"layout={layout!r} is not a project layout", loc=user_frame(),
                           hint="use layout='kernel' (kernel-launch sample) or layout='op' (op project)")
    compiled.check_ascendc()
    printers = [printer_for_plan(p, compiled.target) for p in compiled.kernels]
    prog = Program(compiled, symbol_sizes(compiled, sizes), scalar_values(compiled, scalars))
    if layout == "op":
        viewed = next((p for p in compiled.kernels if p.schedule is not None and p.schedule.views is not None), None)
        if viewed is not None:
            raise ProjectError(f"kernel {viewed.name} reads its inputs through slice/concatenate/take views, "
                               "whose box table the op-project tiling (TILING_DATA_FIELD_DEF) does not carry yet",
                               loc=user_frame(), hint="save it with layout='kernel' (the kernel-launch project)")
        files = op_project_files(compiled, printers, prog)
    else:
        files = kernel_launch_files(compiled, printers, prog)
    return write_tree(path, files, version=VERSION, overwrite=overwrite)
