"""mypy with a baseline that may only shrink: fails when a file has more errors than .ci/mypy-baseline.txt
allows (a new file has none), printing that file's errors; `--update` rewrites the baseline after mending.
Counts per file, not lines, so an edit elsewhere in a file never moves the baseline. The installed libraries'
versions move a few counts (pydantic 2.13 against 2.14: compat's events.py and modelgen.py by one): the baseline
holds the larger count of a fresh venv's and of CI's preinstalled environment for those files."""
from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

BASELINE = Path(__file__).with_name("mypy-baseline.txt")
ERROR = re.compile(r"^(?P<path>[^:\s]+\.py):\d+(?::\d+)?: error: ")


def main(argv: list[str]) -> int:
    run = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty"],
                         capture_output=True, text=True)
    if run.returncode not in (0, 1):          # 2: mypy itself failed (config, crash)
        sys.stderr.write(run.stdout + run.stderr)
        return 2
    errors = [line for line in run.stdout.splitlines() if ERROR.match(line)]
    found = Counter(ERROR.match(line)["path"] for line in errors)
    if "--update" in argv:
        BASELINE.write_text("".join(f"{n} {path}\n" for path, n in sorted(found.items())), encoding="utf-8")
        print(f"mypy: {sum(found.values())} errors in {len(found)} files written to {BASELINE.name}")
        return 0
    allowed = Counter({path: int(n) for n, path in (line.split() for line in
                                                    BASELINE.read_text(encoding="utf-8").splitlines() if line)})
    worse = sorted(path for path in found if found[path] > allowed[path])
    for path in worse:
        print(f"{path}: {found[path]} mypy errors, the baseline allows {allowed[path]}:")
        print("\n".join(f"  {line}" for line in errors if line.startswith(path + ":")))
    better = sorted(path for path in allowed if found[path] < allowed[path])
    print(f"mypy: {sum(found.values())} errors, baseline {sum(allowed.values())}"
          + (f"; fewer in {len(better)} files: run python .ci/mypy_ratchet.py --update" if better else ""))
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
