"""Index ops as composites of fs ops (numpy / PyTorch names and argument conventions; ONE
definition each, which `fs.*` and the importers call).

  index_select   torch.index_select: fs.take of a 1-D index along `dim` (a gather view: the
                 kernel reads the rows it names; negative indices count from the end)
"""
from __future__ import annotations

from .. import dtypes as dt
from .composite import composite


def _fail(F, message, hint=None, kind="ArgumentError"):
    raise getattr(F, kind)(message, loc=F.user_frame(), hint=hint)


def _int_index(F, index, name):
    if not isinstance(index, F.Tensor):
        _fail(F, f"{name} needs a tensor of indices, got {type(index).__name__}", hint="pass an integer array")
    if index.dtype.is_float or index.dtype == dt.bool_:
        _fail(F, f"{name} indices must be integers, got {index.dtype}", kind="DTypeError",
              hint="cast them with .astype(fs.int32)")
    return index if index.dtype == dt.int32 else F.cast(index, dt.int32)


@composite("index_select", "index", dtypes="any", aten=("aten.index_select.default",),
           doc="the slices of x at a 1-D integer `index` along `dim` (torch.index_select; np.take with a 1-D "
               "index): a gather view, every dtype exact",
           example="fs.index_select(x, 0, idx)")
def index_select(F, x, dim, index):
    if not isinstance(x, F.Tensor):
        _fail(F, f"index_select needs a tensor, got {type(x).__name__}")
    index = _int_index(F, index, "index_select")
    if index.ndim != 1:
        _fail(F, f"index_select needs a 1-D index, got shape {tuple(index.shape)}", kind="ShapeError",
              hint="use fs.take for an index of any shape")
    if not isinstance(dim, int) or not -max(x.ndim, 1) <= dim < max(x.ndim, 1):
        _fail(F, f"index_select dim {dim!r} is out of range for a tensor of rank {x.ndim}")
    return F.take(x, index, axis=dim % max(x.ndim, 1))

