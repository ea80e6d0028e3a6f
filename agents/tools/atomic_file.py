"""Files written so that readers see the old or the new content, whole."""

import os
import uuid


def write_atomic(path, content):
    """Write text to a file so that readers see the old or the new content:
    a synced temporary file beside it (permissions 0666 less the umask) is
    renamed into place."""
    directory = os.path.dirname(os.path.abspath(path))
    temp_path = os.path.join(
        directory, f'.{os.path.basename(path)}.{uuid.uuid4().hex}')
    handle = os.open(temp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as file_:
            file_.write(content)
            file_.flush()
            os.fsync(file_.fileno())
        os.replace(temp_path, path)
    except BaseException:
        if os.path.exists(temp_path):
            os.remove(temp_path)
        raise
