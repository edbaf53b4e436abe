"""`KernelTextMemo`: results remembered per TileKernel text (its name left out), printing a kernel only
when an earlier one may have the same text.

The kernel passes remember their result per lowered kernel text (tile/kernel_passes._PASSED): a
model's repeated layers and a cell run again take it without the walks.  Keyed by the text itself,
every lowered kernel was printed for its key -- as much as verifying it -- though a kernel's first
compile mostly finds no earlier kernel of its text.  This memo files its entries by a few figures of
a kernel that its text shows (`_shape`: its kind, note, tiling words and candidates, the stages'
names, lengths and steps, its fields, GM tensors and queues, how many members and parts, whether it
has a Process of its own): a kernel no entry shares them with is a miss without a print; otherwise
it is printed and compared with each entry's text, printed once (the first time that entry is
compared).  A hit is exactly an entry of the same text, as when the text was the key; a kernel
whose figures nothing shares costs a tuple of them.  The entries of one `context` and figures are a
list (at most PER_SHAPE, the oldest out), `limit` lists in all, the least recently used out.
"""
from __future__ import annotations

from ..lru import Lru
from .kernel import Step, TileKernel, print_kernel, walk_nodes

PER_SHAPE = 8


def _shape(k: TileKernel) -> tuple:
    """Figures of k that its text, name left out, shows (each is printed as it is): kernels of one
    text have the same.  Its fields, GM tensors, queues and steps' labels and tile ops tell apart
    the elementwise kernels, which have no tiling words."""
    return (k.kind, k.note, tuple(k.words), tuple(tuple(c) for c in k.candidates),
            tuple((st.name, len(st.body), _steps(st.body)) for st in k.stages),
            tuple((f.name, f.length) for f in k.fields), tuple((g.name, g.dtype.name, g.role) for g in k.gms),
            tuple((q.name, q.position, q.depth) for q in k.queues), len(k.members), len(k.parts), k.process is None)


class _Entry:
    """A remembered kernel's text (printed the first time it is compared: until then the kernel)
    and its result."""
    __slots__ = ("kernel", "text", "result")

    def __init__(self, kernel: TileKernel | None, text: str | None, result):
        self.kernel, self.text, self.result = kernel, text, result

    def printed(self) -> str:
        text = self.text
        if text is None:
            kernel = self.kernel
            if kernel is None:   # another thread printed it since (it sets the text first)
                return self.text
            text = self.text = print_kernel(kernel, name="")
            self.kernel = None   # (its text is what is compared from now on)
        return text


class KernelTextMemo:
    def __init__(self, limit: int):
        self._lists = Lru(limit)   # (context, _shape(k)) -> [_Entry, ...], oldest first

    def find(self, k: TileKernel, context) -> tuple:
        """(the result remembered under `context` for a kernel of k's text, its name left out, or
        None; the slot `put` files k's result in)."""
        key = (context, _shape(k))
        entries = self._lists.get(key)
        if not entries:
            return None, (key, k, None)
        text = print_kernel(k, name="")
        for entry in entries:
            if entry.printed() == text:
                return entry.result, (key, k, text)
        return None, (key, k, text)

    def put(self, slot: tuple, result) -> None:
        """Remember `result` for the kernel `find` gave the slot of."""
        key, k, text = slot
        entries = list(self._lists.get(key) or ())
        entries.append(_Entry(k if text is None else None, text, result))
        self._lists.put(key, entries[-PER_SHAPE:])

    def clear(self) -> None:
        self._lists.clear()


def _steps(body) -> tuple:
    """(label, its stmts' ops) of each step of a body, nested bodies too, in order."""
    return tuple((n.label, tuple(st.op for st in n.stmts)) for n in walk_nodes(body) if type(n) is Step)
