"""The project's error types; the CLI prints their message on one line."""


class DriftbenchError(Exception):
    """Base of every error driftbench raises on purpose."""

    exit_code = 1


class ConfigError(DriftbenchError):
    """A configuration value (TOML field, --set key, CLI option) is invalid."""

    exit_code = 2


class UnknownNameError(ConfigError):
    """A trace, method, source or model name is not registered."""


class TraceFileError(DriftbenchError):
    """A trace file is missing, corrupted, of an unknown version or fails its hash."""

    exit_code = 2


class DataSourceError(DriftbenchError):
    """A data source cannot produce its pool (missing files, bad format)."""

    exit_code = 2


class RunError(DriftbenchError):
    """A run failed while training or evaluating."""


class RecordError(RunError):
    """A run record's file is damaged, foreign or of another schema version (bad input, like a damaged trace file)."""

    exit_code = 2


class WriteError(DriftbenchError):
    """A file could not be written (no space, read-only folder, no permission); what was written before is intact."""

    exit_code = 2


class RunLocked(DriftbenchError):
    """Another process holds the run folder's lock: it is running that run."""

    exit_code = 2


def one_line(exc: BaseException) -> str:
    """``Type: message`` on one line."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"
