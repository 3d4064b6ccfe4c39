"""The `aqven` command."""
import sys


def main(argv: list[str] | None = None) -> int:
    print("aqven: no command yet", file=sys.stderr)
    return 2
