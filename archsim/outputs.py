"""Safe outputs: archsim never deletes or overwrites a file it did not write.

Two kinds of output:

- a **folder** (``run --out``, ``rtl generate --out``, ``sweep --out``):
  :class:`OutputDir` claims it. A missing or empty folder becomes archsim's by
  writing a marker file (``.archsim-output``, a JSON list of the files
  archsim wrote there); a non-empty folder without the marker is refused with
  a one-line error. Inside an owned folder, a file is replaced only if the
  marker lists it (or it does not exist yet).
- a **single file** (``synth --json``, ``cosim --json``): :func:`write_owned_json`
  replaces an existing file only if it is a JSON object archsim wrote (it
  carries ``"written_by": "archsim ..."``).

Every file is written to a temporary name beside its target, flushed, and
renamed over it, so a crash or a full disk never leaves a half-written file
where a good one was. Temporary names are ``.archsim-tmp-<pid>-<random>-<name>``;
they are removed on an exception, on SIGTERM (see :func:`install_sigterm_cleanup`),
and, when a SIGKILL left some behind, by the next claim of the same folder
(those whose process is gone).

Several processes may write into one folder at once (two ``archsim run --out``
into the same place, sweep workers): each marker update is a read-merge-write
under a file lock (kept in archsim's cache folder, keyed by the folder's real
path, so the user's folder gains no lock file), so no process drops the files
another one recorded.
"""
from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from archsim.errors import ArchsimError

MARKER = ".archsim-output"
TMP_PREFIX = ".archsim-tmp-"
WRITTEN_BY_KEY = "written_by"

_live_temps: set[str] = set()
_live_lock = threading.Lock()


class OutputError(ArchsimError):
    """An output path is unusable or belongs to the user."""


def os_error_text(err: OSError) -> str:
    """A short reason for an OSError (``No space left on device``), without the path repeated."""
    if err.errno == errno.ENOSPC:
        return "no space left on device"
    return (err.strerror or str(err)).lower() if err.strerror else str(err)


# ----------------------------------------------------------------------------- temporary files

def _temp_name(target: Path) -> Path:
    return target.with_name(f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-{target.name}")


def _register(path: Path) -> None:
    with _live_lock:
        _live_temps.add(str(path))


def _forget(path: Path) -> None:
    with _live_lock:
        _live_temps.discard(str(path))


def _remove_quietly(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def remove_live_temps() -> None:
    """Remove every temporary file this process has open (called on SIGTERM)."""
    with _live_lock:
        paths = list(_live_temps)
        _live_temps.clear()
    for path in paths:
        _remove_quietly(path)


def _on_sigterm(signum, frame):  # noqa: ARG001 - signal handler signature
    remove_live_temps()
    raise SystemExit(128 + signum)


def install_sigterm_cleanup() -> None:
    """Turn SIGTERM into ``SystemExit(143)`` after removing live temporary files.

    Only from the main thread and only when SIGTERM still has its default action
    (a program embedding archsim keeps its own handler)."""
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):  # pragma: no cover - not the main interpreter
        pass


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_temps(folder: str | os.PathLike) -> list[str]:
    """Remove ``.archsim-tmp-<pid>-*`` entries of ``folder`` whose process is gone (a SIGKILL's leftovers)."""
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(TMP_PREFIX):
            continue
        pid_text = name[len(TMP_PREFIX):].split("-", 1)[0]
        if not pid_text.isdigit() or _pid_alive(int(pid_text)):
            continue
        path = os.path.join(folder, name)
        _remove_quietly(path)
        removed.append(path)
    return removed


@contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success rename it over ``target``.

    On any exception (SIGTERM included) the temporary file is removed and ``target``
    is left as it was."""
    target = Path(target)
    tmp = _temp_name(target)
    _register(tmp)
    install_sigterm_cleanup()
    try:
        yield tmp
        if tmp.is_file():
            with open(tmp, "rb") as handle:
                os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        _remove_quietly(str(tmp))
        raise
    finally:
        _forget(tmp)


def atomic_write(target: str | os.PathLike, data: str | bytes) -> Path:
    """Write ``data`` to ``target`` atomically (temporary file, fsync, rename)."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as handle:
            handle.write(payload)
            handle.flush()
    return Path(target)


# ----------------------------------------------------------------------------- owned folders

def _wrap(path: Any, what: str, err: OSError) -> OutputError:
    return OutputError(f"{path}: cannot {what}: {os_error_text(err)}")


class OutputDir:
    """A folder archsim owns (see the module doc). ``kind`` names the command, for the marker."""

    def __init__(self, path: str | os.PathLike, kind: str = "archsim", legacy: tuple[str, ...] = ()):
        if not os.fspath(path).strip():
            raise OutputError("--out: expected a folder name, got an empty one")
        self.path = Path(path)
        self.kind = kind
        self.legacy = legacy
        self.files: set[str] = set()
        self._claim()

    @staticmethod
    def check(path: str | os.PathLike, legacy: tuple[str, ...] = ()) -> None:
        """Raise :class:`OutputError` now if ``path`` could not be claimed later (creates nothing)."""
        if not os.fspath(path).strip():
            raise OutputError("--out: expected a folder name, got an empty one")
        path = Path(path)
        if path.is_symlink() and not path.exists():
            raise OutputError(f"{path}: is a broken symbolic link")
        if path.exists() and not path.is_dir():
            raise OutputError(f"{path}: exists and is not a folder")
        if path.is_dir():
            try:
                entries = os.listdir(path)
            except OSError as err:
                raise _wrap(path, "list the output folder", err) from None
            if entries and MARKER not in entries and not (legacy and _only_legacy(path, entries, legacy)):
                shown = ", ".join(sorted(entries)[:3]) + (", ..." if len(entries) > 3 else "")
                raise OutputError(f"{path}: folder is not empty and was not written by archsim ({shown}); "
                                  "choose a new or empty folder")
            return
        parent = path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if parent.exists() and not parent.is_dir():
            raise OutputError(f"{path}: {parent} is not a folder")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputError(f"{path}: cannot create the output folder in {parent}: permission denied")

    def _claim(self) -> None:
        path = self.path
        label = str(path)
        if path.is_symlink() and not path.exists():
            raise OutputError(f"{label}: is a broken symbolic link")
        if path.exists() and not path.is_dir():
            raise OutputError(f"{label}: exists and is not a folder")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise _wrap(label, "create the output folder", err) from None
        marker = path / MARKER
        try:
            entries = [e for e in os.listdir(path) if e != MARKER]
        except OSError as err:
            raise _wrap(label, "list the output folder", err) from None
        if marker.is_file():
            self.files = self._recorded_files()
            clean_stale_temps(path)
            for sub in {Path(f).parent for f in self.files if Path(f).parent != Path(".")}:
                clean_stale_temps(path / sub)
        elif entries and self.legacy and _only_legacy(path, entries, self.legacy):
            self.files = set(_legacy_files(path, entries))  # written by an archsim from before the marker
        elif entries:
            shown = ", ".join(sorted(entries)[:3]) + (", ..." if len(entries) > 3 else "")
            raise OutputError(f"{label}: folder is not empty and was not written by archsim ({shown}); "
                              "choose a new or empty folder")
        if not os.access(path, os.W_OK | os.X_OK):
            raise OutputError(f"{label}: cannot write to the output folder: permission denied")
        self._save_marker()

    def _recorded_files(self) -> set[str]:
        """The files the marker lists now (another process may have added some since we read it)."""
        marker = self.path / MARKER
        if not marker.is_file():
            return set()
        try:
            doc = json.loads(marker.read_text(encoding="utf-8"))
            return {str(f) for f in doc.get("files", []) if isinstance(f, str)}
        except (OSError, ValueError, AttributeError):
            raise OutputError(f"{self.path}: the marker file {MARKER} is unreadable; remove it only if "
                              "archsim wrote this folder") from None

    def _save_marker(self) -> None:
        """Merge our files with the marker's current list and write it, under the folder's lock."""
        from filelock import FileLock, Timeout

        try:
            with FileLock(_folder_lock_path(self.path), timeout=60):
                self.files |= self._recorded_files()
                doc = {WRITTEN_BY_KEY: f"archsim {self.kind}", "files": sorted(self.files)}
                atomic_write(self.path / MARKER, json.dumps(doc, indent=1) + "\n")
        except Timeout:
            raise OutputError(f"{self.path}: another archsim process has held this folder's marker for over 60 s") from None
        except OSError as err:
            raise _wrap(self.path / MARKER, "write", err) from None

    def _check_replaceable(self, name: str) -> Path:
        rel = Path(name)
        if rel.is_absolute() or ".." in rel.parts:
            raise OutputError(f"{name}: output names stay inside {self.path}")
        target = self.path / rel
        if (target.exists() or target.is_symlink()) and name not in self.files:
            self.files |= self._recorded_files()  # another process writing here may have recorded it
        if (target.exists() or target.is_symlink()) and name not in self.files:
            raise OutputError(f"{target}: exists and was not written by archsim; move it away or choose another folder")
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise OutputError(f"{target}: is not a regular file; archsim will not replace it")
        return target

    def _adopt(self, name: str) -> None:
        if name not in self.files:
            self.files.add(name)
            self._save_marker()

    @contextmanager
    def atomic(self, name: str) -> Iterator[Path]:
        """Yield a temporary path for output ``name`` (relative); rename it into place on success."""
        target = self._check_replaceable(name)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            self._adopt(name)  # recorded before it exists: a crash leaves no unowned file
            with atomic_path(target) as tmp:
                yield tmp
        except OSError as err:
            raise _wrap(target, "write", err) from None

    def write(self, name: str, data: str | bytes) -> Path:
        """Write output ``name`` atomically and return its path."""
        payload = data.encode("utf-8") if isinstance(data, str) else data
        with self.atomic(name) as tmp:
            with open(tmp, "wb") as handle:
                handle.write(payload)
                handle.flush()
        return self.path / name

    def install(self, name: str, src: str | os.PathLike) -> Path:
        """Move an already written file ``src`` (same file system) into place as ``name``."""
        with self.atomic(name) as tmp:
            shutil.move(os.fspath(src), tmp)
        return self.path / name

    def own(self, name: str) -> Path:
        """Record ``name`` as archsim's (for files appended to in place, e.g. results.jsonl)."""
        target = self._check_replaceable(name)
        self._adopt(name)
        return target

    @contextmanager
    def scratch(self) -> Iterator[Path]:
        """A temporary folder inside the output folder, removed afterwards (and on SIGTERM)."""
        tmp = self.path / f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-scratch"
        _register(tmp)
        install_sigterm_cleanup()
        try:
            tmp.mkdir()
            yield tmp
        except OSError as err:
            raise _wrap(self.path, "write", err) from None
        finally:
            _remove_quietly(str(tmp))
            _forget(tmp)


def _folder_lock_path(folder: Path) -> Path:
    """The lock file for ``folder``'s marker: in the cache folder, named by a hash of its real path."""
    import hashlib

    from archsim.cache import cache_root

    key = hashlib.sha256(os.path.realpath(folder).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    locks = cache_root() / "locks"
    try:
        locks.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _wrap(locks, "create the lock folder (set ARCHSIM_CACHE_DIR)", err) from None
    return locks / f"{key}.lock"


def _legacy_files(path: Path, entries: list[str]) -> list[str]:
    out = []
    for entry in entries:
        if (path / entry).is_dir():
            out += [f"{entry}/{name}" for name in os.listdir(path / entry)]
        else:
            out.append(entry)
    return out


def _only_legacy(path: Path, entries: list[str], legacy: tuple[str, ...]) -> bool:
    """Whether a folder without a marker holds only what an older archsim wrote there: the
    ``legacy`` names, and ``plots/`` holding only PNGs (such a folder is adopted)."""
    for entry in entries:
        full = path / entry
        if full.is_symlink():
            return False
        if entry == "plots" and full.is_dir():
            if not all(n.endswith(".png") and (full / n).is_file() and not (full / n).is_symlink()
                       for n in os.listdir(full)):
                return False
        elif entry not in legacy or not full.is_file():
            return False
    return True


# ----------------------------------------------------------------------------- single files

def _owned_by_archsim(path: Path) -> bool:
    try:
        if path.stat().st_size == 0:
            return True
        if path.stat().st_size > 64 * 1024 * 1024:
            return False
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and str(doc.get(WRITTEN_BY_KEY, "")).startswith("archsim")


def check_owned_file(path: str | os.PathLike, option: str = "--json") -> None:
    """Raise :class:`OutputError` unless ``path`` is new, empty or a JSON file archsim wrote, in an existing folder."""
    target = Path(path)
    label = f"{option} {path}"
    if str(path) == "":
        raise OutputError(f"{option}: expected a file name")
    if target.is_dir():
        raise OutputError(f"{label}: is a folder")
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise OutputError(f"{label}: is not a regular file; archsim will not replace it")
    if target.exists() and not _owned_by_archsim(target):
        raise OutputError(f"{label}: exists and was not written by archsim; choose another file")
    parent = target.parent
    if not parent.is_dir():
        raise OutputError(f"{label}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{label}: cannot write in {parent}: permission denied")


def write_owned_json(path: str | os.PathLike, doc: dict, kind: str, option: str = "--json") -> dict:
    """Write ``doc`` (plus ``written_by``) as JSON to ``path``, atomically, never over a user's file."""
    doc = {WRITTEN_BY_KEY: f"archsim {kind}", **doc}
    check_owned_file(path, option)
    clean_stale_temps(Path(path).parent)
    try:
        atomic_write(path, json.dumps(doc, indent=2) + "\n")
    except OSError as err:
        raise OutputError(f"{option} {path}: cannot write: {os_error_text(err)}") from None
    return doc


__all__ = ["MARKER", "OutputDir", "OutputError", "atomic_path", "atomic_write", "check_owned_file", "clean_stale_temps",
           "install_sigterm_cleanup", "remove_live_temps", "write_owned_json"]
