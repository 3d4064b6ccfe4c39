"""pytest-aqven's stand-in for the `aqven` engine package: only the names user code imports
(docs/compat.md lists them)."""
