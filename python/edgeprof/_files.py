"""Reading a file a user named (a report, a calibration file, a workload list): a regular file
of bounded size only, since a FIFO would block the open for ever and /dev/zero never end (the
C++ side's Fs::read_user_file does the same for device files and caches)."""
from __future__ import annotations

import os
import stat
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
