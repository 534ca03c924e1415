"""headwater: Delta Lake tables, Auto Loader, COPY INTO and pipelines on plain PySpark."""

from headwater.session import install, session

__all__ = ["install", "session"]
__version__ = "0.1.0"
