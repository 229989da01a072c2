"""IBM Streams (Open Streams) applications run natively on Kubernetes."""


def __getattr__(name: str) -> str:
    # Read on first use: importlib.metadata costs more than the whole `streams-k8s --help`.
    if name != "__version__":
        raise AttributeError(f"module 'streams_k8s' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("streams-k8s")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0+unknown"


__all__ = ["__version__"]
