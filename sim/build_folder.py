"""A compiled build kept in the cache: a folder published whole, used only while intact.

tsim's library (:mod:`.tsim.build`) and upstream's simulator (:mod:`.upstream.build`) are each
one file compiled from sources the cache key hashes, kept in a folder of the cache
(``<cache>/<kind>/<key>``) with the files that built it. Such a folder is shared by every
process that uses the cache, so:

- a build runs in a private workspace beside the folder (``<key>.tmp<pid>``) and is published
  by renaming the workspace into place: the first rename wins, and a process that loses keeps
  the winner's build (when that one is intact);
- the artifact's SHA-256 is written beside it (``<artifact>.sha256``) before publishing, and a
  folder is used only while the two match (:func:`intact`): a truncated or corrupt artifact (a
  full disk, a killed copy) or a half-written folder is built again, never loaded;
- such a folder is moved aside before it is removed, so no process sees it half deleted; the
  workspaces of builds whose process died are removed by the next build.
"""

import contextlib
import hashlib
import os
import shutil

__all__ = ["intact", "building", "checksum_name"]


def checksum_name(artifact):
    """The name of the file that holds ``artifact``'s SHA-256, beside it."""
    return f"{artifact}.sha256"


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def intact(folder, artifact):
    """Whether ``folder`` holds ``artifact`` (a file name) matching the checksum written with it."""
    try:
        return (folder / checksum_name(artifact)).read_text().strip() == \
            _sha256(folder / artifact)
    except OSError:
        return False


@contextlib.contextmanager
def building(out, artifact, *, error, what):
    """A private workspace in which to build ``out`` (the folder to publish), whose
    ``artifact`` the body writes; when the body returns, the artifact's checksum is written
    and the workspace renamed to ``out``. The workspace is removed in any case.

    ``error`` is the exception class the caller's users see (its message says what to do) and
    ``what`` names the build in it (``"the tsim build"``): raised when the cache cannot be
    created or written, or when ``out`` exists, is not intact and cannot be replaced."""
    tmp = _workspace(out, artifact, error)
    try:
        yield tmp
        (tmp / checksum_name(artifact)).write_text(_sha256(tmp / artifact))
        try:
            tmp.rename(out)
        except OSError:
            # Another process published first: its build serves only if it is whole.
            if not intact(out, artifact):
                raise error(f"cannot publish {what} {out}: it exists and is not a complete "
                            f"build; remove it and try again") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _workspace(out, artifact, error):
    """A fresh private build folder beside ``out``; removes those of builds that died, and
    moves an ``out`` that is not intact out of the way."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as failure:
        raise error(f"the build cache {out.parent} cannot be created ({failure.strerror}); "
                    f"set AVTA_CACHE to a writable folder") from None
    for stale in out.parent.glob("*.tmp*"):
        pid = stale.name.rsplit(".tmp", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    if out.exists() and not intact(out, artifact):
        _discard(out)
    tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
    except OSError as failure:
        raise error(f"the build cache {out.parent} is not writable ({failure.strerror}); "
                    f"set AVTA_CACHE to a writable folder") from None
    return tmp


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _discard(folder):
    """Remove a corrupt or incomplete build; renamed first, so that no process sees it half
    deleted and two processes never delete the same folder."""
    aside = folder.with_name(f"{folder.name}.corrupt{os.getpid()}")
    try:
        folder.rename(aside)
    except OSError:
        return              # another process moved it first
    shutil.rmtree(aside, ignore_errors=True)
