"""Reading a user's files: the one place, so that every way a file cannot be read is an InputError that says why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kgplan.errors import InputError, NotFound


def read_text(path: Path, what: str = "file") -> str:
    """A user's text file (UTF-8, a byte-order mark allowed), or an InputError saying why it cannot be read;
    `what` names it in the message ("problem file")."""
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise NotFound(f"no {what} at {path}") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a folder: give the {what} itself") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path} is not UTF-8 text (byte {e.start}: {e.reason}): give the {what} as UTF-8 "
                         "text") from None
    except OSError as e:
        raise InputError(f"cannot read the {what} {path}: {e.strerror or e}") from None


def read_json(path: Path, what: str = "file") -> Any:
    """A user's JSON file, or an InputError saying why it cannot be read or is not JSON."""
    try:
        return json.loads(read_text(path, what))
    except json.JSONDecodeError as e:
        raise InputError(f"{path} is not JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    except RecursionError:
        raise InputError(f"{path} is not JSON: it is nested too deeply") from None
