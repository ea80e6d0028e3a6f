"""The progress lines of a sweep's runs, collected in a Ray actor for the
sweep's process to print; apart from `sweep_runs`, so that the actor's
worker does not import TensorFlow."""


class Progress:
    """Collects the progress lines of the runs for the sweep to print."""

    def __init__(self):
        self._lines = []

    def put(self, *lines):
        """Add lines."""
        self._lines.extend(lines)

    def take(self):
        """The lines added since the last call."""
        lines, self._lines = self._lines, []
        return lines
