"""`Lru`: a bounded memo, the least recently used entry out first, safe to share between threads.

The compiler remembers what it worked out for the process -- a fused kernel's lowering
(lower/kinds.py), the kernel passes' result (tile/kernel_passes.py), the cube kinds' tiling choices
(lower/cube.py, lower/conv.py) -- so that a kernel compiled again (a notebook cell run again, a
model's repeated layers) costs a lookup.  Each memo says what its key covers; this class only
keeps the entries: at most `limit`, in order of last use, behind a lock (two threads compiling at
once must not see an entry half evicted).
"""
from __future__ import annotations

import threading


class Lru:
    def __init__(self, limit: int):
        self.limit = limit
        self._entries: dict = {}   # in order of last use
        self._lock = threading.Lock()

    def get(self, key):
        """The entry for `key` (now the most recently used), or None."""
        with self._lock:
            hit = self._entries.pop(key, None)
            if hit is not None:
                self._entries[key] = hit
            return hit

    def put(self, key, value) -> None:
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = value
            while len(self._entries) > self.limit:
                del self._entries[next(iter(self._entries))]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
