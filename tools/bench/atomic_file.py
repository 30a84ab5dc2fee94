"""The benchmark scripts' one way to write an output file: whole or not at all."""
import os
import tempfile


def write_atomic(path, text):
    """Writes text to path through a temporary file beside it and a rename, so a reader sees
    the old file or the new one, never part of it. Raises OSError (the temporary file removed)
    when the directory cannot be written."""
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
