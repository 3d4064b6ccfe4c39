"""pytest hooks only: the thin glue between pytest and the pytest_aqven library."""
