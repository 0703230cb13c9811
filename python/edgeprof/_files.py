"""Reading a file a user named (a report, a calibration file, a workload list): a regular file
of bounded size only, since a FIFO would block the open for ever and /dev/zero never end (the
C++ side's Fs::read_user_file does the same for device files and caches). Writing one: whole or
not at all where the file allows it."""
from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from typing import Optional, Union

from edgeprof import _core

MAX_BYTES = 64 << 20  # what edgeprof writes is kilobytes to a few megabytes


def read_text(path: Union[str, os.PathLike], what: str = "", newline: Optional[str] = None) -> str:
    """The file's UTF-8 text, or an edgeprof.Error naming the file and what is wrong with it.
    `what` names the file's kind in messages ("calibrations from"), `newline` is open()'s."""
    name = os.fsdecode(os.fspath(path))
    label = f"{what} {name}" if what else name
    try:
        # O_NONBLOCK: a FIFO without a writer opens at once, to be refused below.
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as e:
        raise _core.Error(f"cannot read {label}: {e.strerror} (errno {e.errno})") from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _core.Error(f"cannot read {label}: not a regular file (a directory, FIFO or "
                              "device); give the file edgeprof wrote")
        if st.st_size > MAX_BYTES:
            raise _core.Error(f"cannot read {label}: larger than {MAX_BYTES >> 20} MiB; give the "
                              "file edgeprof wrote")
        os.set_blocking(fd, True)  # for the read, as an ordinary open
        chunks = []
        size = 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError as e:
        raise _core.Error(f"cannot read {label}: {e.strerror} (errno {e.errno})") from e
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise _core.Error(f"cannot read {label}: larger than {MAX_BYTES >> 20} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _core.Error(f"{name} is not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset "
                          f"{e.start}): give the file edgeprof wrote") from None
    # A byte order mark (Excel's "CSV UTF-8", Notepad) is not text: a CSV's first column or a
    # report's first character would hold it, unseen in any message.
    text = text.removeprefix("\ufeff")
    if newline is None:  # universal newlines, as open() in text mode
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def write_text(path: Union[str, bytes, os.PathLike], text: str, what: str = "") -> None:
    """Writes `text` (UTF-8, ending in a newline) to a file the user named, or raises an
    edgeprof.Error naming it.
    A regular file of the user's own (or a new one) is whole or not at all: written beside it,
    then renamed over it (written in place, a full disk or a Ctrl-C left the file of every
    earlier calibration truncated), keeping its mode. It is written in place where a rename
    would change more than its text or cannot be done: another user's file (its owner), one
    with other hard links, a device or a pipe, or a file in a folder the user may not create
    files in. /dev/stdout, /dev/stderr and /dev/fd/N are the descriptor itself, written without
    truncating what it holds (`>> log`). A file the user may not write is refused, as open()
    would (a rename replaced a read-only file). `what` names the file's kind in messages
    ("calibrations to")."""
    name = os.fsdecode(os.fspath(path))
    label = f"{what} {name}" if what else name
    data = (text if text.endswith("\n") or not text else text + "\n").encode("utf-8")  # lines
    try:
        fd = _descriptor(name)
        if fd is not None:
            for stream in (sys.stdout, sys.stderr):  # what was printed before comes first
                if stream is not None and _fileno(stream) == fd:
                    stream.flush()
            _write_all(fd, data)
            return
        try:
            st: Optional[os.stat_result] = os.stat(name)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise _core.Error(f"cannot write {label}: a directory; give a file's path")
        if st is None or stat.S_ISREG(st.st_mode):
            target = os.path.realpath(name)  # a link's file is replaced, not the link
            folder = os.path.dirname(target)
            if st is not None and not os.access(target, os.W_OK):
                # The kernel's own reason (a read-only file system, a read-only file).
                os.close(os.open(target, os.O_WRONLY | os.O_CLOEXEC | os.O_NOCTTY |
                                 os.O_NONBLOCK))
            own = st is None or st.st_nlink == 1 and (
                st.st_uid == os.geteuid() or os.geteuid() == 0)
            if own and os.access(folder, os.W_OK | os.X_OK) and _replace(target, folder, data,
                                                                         st):
                return
        _write_in_place(name, data)
    except OSError as e:
        todo = ("create its folder, or give another path" if e.errno == errno.ENOENT else
                "make it writable, or give another path")
        raise _core.Error(f"cannot write {label}: {e.strerror} (errno {e.errno}): {todo}") from e


_STREAMS = {"/dev/stdout": 1, "/dev/stderr": 2}


def _descriptor(name: str) -> Optional[int]:
    """The descriptor a path of this process's own names (/dev/stdout, /dev/fd/3,
    /proc/self/fd/3): opened again it would be truncated, and renamed over when a file."""
    if name in _STREAMS:
        return _STREAMS[name]
    for prefix in ("/dev/fd/", "/proc/self/fd/"):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return int(name[len(prefix):])
    return None


def _fileno(stream: object) -> Optional[int]:
    try:
        return stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # a notebook's stream has none
        return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _umask() -> int:
    """The process's umask without setting it (os.umask sets it: a race with other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _replace(target: str, folder: str, data: bytes, st: Optional[os.stat_result]) -> bool:
    """Writes `target` beside it and renames; False (nothing written) where the file's owner
    cannot be kept, to write it in place instead."""
    # A name of its own (two writers of one file each rename their own), short enough for any
    # file name: 40 characters are at most 160 bytes of UTF-8 (the file's own name and a
    # suffix could pass NAME_MAX).
    fd, part = tempfile.mkstemp(prefix="." + os.path.basename(target)[:40] + ".",
                                suffix=".part", dir=folder)
    try:
        try:
            if st is not None:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
                if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                    try:
                        os.fchown(fd, st.st_uid, st.st_gid)  # root keeps a user's file theirs
                    except OSError:
                        return False  # root squashed, a user namespace: in place
            else:  # mkstemp's 0600: the mode open() gives a new file
                os.fchmod(fd, 0o666 & ~_umask())
            _write_all(fd, data)
            try:
                os.fsync(fd)  # on the disk before the rename: a crash leaves one file or the other
            except OSError as e:
                if e.errno not in (errno.EINVAL, errno.ENOTSUP):  # a file system without fsync
                    raise
        finally:
            os.close(fd)
        os.replace(part, target)
        part = None
        return True
    finally:
        if part is not None:
            try:
                os.unlink(part)
            except OSError:
                pass


def _write_in_place(name: str, data: bytes) -> None:
    # A FIFO waits for its reader, as the shell's `>` does (Ctrl-C ends the wait).
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOCTTY,
                 0o666)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)
