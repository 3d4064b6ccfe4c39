"""The library face the pytest layer (plugin/) and the `aqven` command (cli/) both call: check.py (`aqven check`),
plan.py (the launch plans of `aqven plan`), decide.py (deciding a series)."""
