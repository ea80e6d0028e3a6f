"""Errors of summary writers as one line that names the file."""


def write_error(directory, error):
    """One-line `OSError` for an error of a summary writer.

    TensorFlow's writers raise `RuntimeError`s that read 'PATH; CAUSE' and
    go on with lines about the events they lost.

    Args:
        directory: The writer's folder, named when the error names no path.
        error: The writer's error.

    Returns:
        `OSError` reading 'Cannot write PATH: CAUSE.'.
    """
    lines = str(error).strip().splitlines()
    first = lines[0].strip() if lines else type(error).__name__
    path, separator, cause = first.rpartition('; ')
    if not separator:
        path, cause = directory, first
    return OSError(f'Cannot write {path}: {cause}.')
