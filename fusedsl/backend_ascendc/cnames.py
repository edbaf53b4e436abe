"""Make user strings safe to print into C++: comment text and identifiers.

Why a module of its own: every string the user controls (source file names, `loc` strings of
a text IR, source lines shown by FUSEDSL_DEBUG=1, parameter names) ends up in generated C++.
A newline in a comment starts a new C++ line (`"k.py\\n#define Relu Abs //"` would redefine
an API), a trailing backslash splices the next line into the comment, and a parameter named
`int`, `tiling` or `y0` collides with a keyword or with a name the printer uses itself.  The
printer calls these two functions at each place such a string is printed.
"""
from __future__ import annotations

import functools
import re

_PLAIN = re.compile(r"[A-Za-z0-9_]")


def comment(text) -> str:
    """`text` as the body of a `//` comment: printable ASCII only, no backslash, no trigraph.

    Everything else (newline, carriage return, form feed, backslash, non-ASCII, `??`) is
    written as a visible `\\xNN` / `\\uNNNN` escape, so the comment ends at the end of the
    line and shows the reader what the string contained.
    """
    text = str(text)
    if text.isascii() and text.isprintable() and "\\" not in text and "??" not in text:
        return text   # the common case, nothing to escape (isprintable: 0x20-0x7e among ASCII)
    out = []
    prev = ""
    for ch in text:
        code = ord(ch)
        if ch == "\\" or code < 0x20 or code > 0x7E or (ch == "?" and prev == "?"):
            out.append(f"\\x{code:02x}" if code < 0x100 else
                       f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
            prev = ""
        else:
            out.append(ch)
            prev = ch
    return "".join(out)


def ident(name: str) -> str:
    """An ASCII C++ identifier fragment for a Python identifier (to be used after a prefix).

    ASCII letters, digits and single underscores stay; any other character (and `U`, the
    escape letter) becomes `UXXXX_` (its code point), so different Python names give
    different C++ names.  An underscore that would follow another one is escaped too: C++
    reserves `__` anywhere in a name.
    """
    out: list[str] = []
    for ch in name:
        after_underscore = not out or out[-1].endswith("_")
        if _PLAIN.fullmatch(ch) and ch != "U" and not (ch == "_" and after_underscore):
            out.append(ch)
        else:
            out.append(f"U{ord(ch):04x}_")
    return "".join(out)


@functools.lru_cache(maxsize=1024)   # a pure function of the name: each printer asks it per input (a regex per character)
def param(name: str) -> str:
    """The C++ name of a kernel parameter: `p_` + ident(name), never a keyword nor a name the
    printer uses itself (`tiling`, `workspace`, `y0`, `t`, ...: those have no `p_` prefix)."""
    return "p_" + ident(name)
