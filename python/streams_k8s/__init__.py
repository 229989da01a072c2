"""IBM Streams (Open Streams) applications run natively on Kubernetes."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("streams-k8s")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
