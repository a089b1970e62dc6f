"""One exception type for bad input, so the CLI can print one line instead of a traceback; and
the one line for a file operation the machine refused (permission, no space, not a directory,
a read-only file system), wherever in the code it happened."""

from __future__ import annotations

from pathlib import Path


class UserError(Exception):
    """Bad input from the user (file, field, option). The message is the whole story."""


# the innermost function of a failed file operation -> what it was doing
_OPERATIONS = {
    "mkdir": "create the directory",
    "makedirs": "create the directory",
    "mkstemp": "create a file in",
    "_mkstemp_inner": "create a file in",
    "touch": "create",
    "write_text": "write",
    "write_bytes": "write",
    "write": "write",
    "flush": "write",
    "read_text": "read",
    "read_bytes": "read",
    "replace": "rename",
    "rename": "rename",
    "unlink": "remove",
    "rmdir": "remove",
    "rmtree": "remove",
    "_rmtree_safe_fd": "remove",
    "copyfile": "copy to",
    "copy": "copy to",
    "copy2": "copy to",
    "iterdir": "list",
    "glob": "list",
}


def file_error(exc: OSError, operation: str, path: str | Path) -> OSError:
    """``exc`` marked as the failure to ``operation`` ``path`` (for ``os_error_line``), when
    the error itself names another file (a temporary one) or none (a write)."""
    exc.frugalzero_operation = operation  # type: ignore[attr-defined]
    exc.frugalzero_path = str(path)  # type: ignore[attr-defined]
    return exc


def os_error_line(exc: OSError) -> str:
    """``cannot OPERATION PATH: REASON``: the operation marked by ``file_error``, else the one
    the innermost function of the traceback does, else "open"."""
    operation = getattr(exc, "frugalzero_operation", None) or _operation(exc)
    path = getattr(exc, "frugalzero_path", None) or exc.filename
    reason = exc.strerror or str(exc) or type(exc).__name__
    target = f" {path}" if path is not None else ""
    if exc.filename2 is not None and not hasattr(exc, "frugalzero_path"):
        target += f" -> {exc.filename2}"
    return f"cannot {operation}{target}: {reason}"


def _operation(exc: OSError) -> str:
    tb, name = exc.__traceback__, ""
    while tb is not None:
        name, tb = tb.tb_frame.f_code.co_name, tb.tb_next
    return _OPERATIONS.get(name, "open")
