"""pytest-aqven: AQVEN experiments as pytest test suites."""
__version__ = "0.1.0"
