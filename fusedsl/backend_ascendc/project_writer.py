"""Write a generated project into a directory without ever touching files fusedsl did not write.

The rules (issue: `k.save(".")` once renamed the current directory away and deleted it):
- a path that does not exist: the whole tree is built in a temporary sibling directory and
  renamed into place, so an interrupted save leaves nothing half-written;
- an empty directory: the files are written into it;
- a directory that holds a fusedsl project (it has the manifest below): refused unless
  `overwrite=True`, which replaces only the files the manifest lists, and only while they
  still hold what fusedsl wrote (an edited file is the user's now);
- any other non-empty directory, or a path that is a file: refused.
Every file is written to a temporary name in its own directory and renamed over the target.
The manifest `.fusedsl-project.json` lists each written file with its sha256; it is written
last, so a project without it was never completely written.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile

from ..errors import ProjectError, user_frame

MANIFEST = ".fusedsl-project.json"
_EXECUTABLE = (".sh",)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fail(message: str, hint: str) -> ProjectError:
    return ProjectError(message, loc=user_frame(), hint=hint)


def _write_file(root: str, rel: str, text: str) -> None:
    """Temp file in the target's folder, then rename: readers never see half a file."""
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".fusedsl-tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, 0o755 if rel.endswith(_EXECUTABLE) else 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _manifest_text(files: dict[str, str], version: str) -> str:
    listed = {rel: _digest(text.encode("utf-8")) for rel, text in sorted(files.items())}
    return json.dumps({"written_by": f"fusedsl {version}", "files": listed}, indent=1) + "\n"


def _write_all(root: str, files: dict[str, str], version: str) -> None:
    for rel, text in files.items():
        _write_file(root, rel, text)
    _write_file(root, MANIFEST, _manifest_text(files, version))


def _read_manifest(path: str) -> dict[str, str] | None:
    try:
        with open(os.path.join(path, MANIFEST), encoding="utf-8") as f:
            data = json.load(f)
        files = data["files"]
        if isinstance(files, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            return files
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _inside(root: str, rel: str) -> bool:
    full = os.path.realpath(os.path.join(root, rel))
    return full.startswith(os.path.realpath(root) + os.sep)


def _check_overwrite(path: str, old: dict[str, str], files: dict[str, str]) -> list[str]:
    """The old project's files that may be removed; raises if a file is not fusedsl's to replace."""
    edited, foreign = [], []
    for rel, digest in sorted(old.items()):
        full = os.path.join(path, rel)
        if not _inside(path, rel) or os.path.islink(full):
            foreign.append(rel)
            continue
        if not os.path.exists(full):
            continue
        with open(full, "rb") as f:
            if _digest(f.read()) != digest:
                edited.append(rel)
    for rel in files:
        full = os.path.join(path, rel)
        if rel not in old and os.path.lexists(full):
            foreign.append(rel)
    if edited or foreign:
        what = (", ".join(f"{r} (edited since fusedsl wrote it)" for r in edited)
                + (", " if edited and foreign else "")
                + ", ".join(f"{r} (not written by fusedsl)" for r in foreign))
        raise _fail(f"{path}: overwrite=True would replace {what}",
                    "move those files away, or save into a new directory")
    return [rel for rel in old if rel not in files and os.path.exists(os.path.join(path, rel))]


def write_tree(path: str, files: dict[str, str], *, version: str, overwrite: bool = False) -> str:
    """Write `files` (relative path -> text) as the project directory `path`; returns its absolute path."""
    try:
        return _write_tree(path, files, version, overwrite)
    except ProjectError:
        raise
    except (OSError, ValueError) as exc:   # permissions, a file where a folder should be, NUL in the name
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise _fail(f"cannot write the project to {path!r}: {reason}",
                    "choose a directory you can write to (a new or empty one)") from None


def _write_tree(path: str, files: dict[str, str], version: str, overwrite: bool) -> str:
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise _fail(f"the project path must be a non-empty string, got {path!r}",
                    "pass a directory name such as 'out/my_kernel'")
    path = os.path.abspath(os.fspath(path))
    if os.path.lexists(path) and not os.path.isdir(path):
        raise _fail(f"{path} exists and is not a directory",
                    "choose a new directory for the project; fusedsl never replaces a file it did not write")
    if not os.path.exists(path):
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".fusedsl-", dir=parent)
        try:
            _write_all(tmp, files, version)
            os.chmod(tmp, 0o755)
            # rename onto a path that appeared meanwhile fails unless it is an empty folder
            os.rename(tmp, path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)   # our own temporary folder only
            raise
        return path
    entries = os.listdir(path)
    if not entries:
        _write_all(path, files, version)
        return path
    old = _read_manifest(path)
    if old is None:
        raise _fail(f"{path} is not empty and is not a fusedsl project",
                    "save into a new or empty directory (fusedsl never deletes or overwrites files it did not write)")
    if not overwrite:
        raise _fail(f"{path} already holds a fusedsl project",
                    "pass overwrite=True to replace fusedsl's own files there, or choose a new directory")
    stale = _check_overwrite(path, old, files)
    _write_all(path, files, version)
    for rel in stale:
        os.unlink(os.path.join(path, rel))
    return path
