"""Writing a finding's YAML: findings/emit.py against PyYAML's libyaml emitter and its pure-Python one, with the
findings' representers, on the finding of bench_session_end.py's held-out series (3 variants × 200 cases × 20
repeats, about 500 KB), side by side in one process (CPU time, medians), after checking all three give the
same bytes as the file the session wrote.

    python bench/bench_findings_yaml.py [--cases 200] [--repeats 20] [--variants 3] [--rounds 5]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import projects  # noqa: E402
from sidebyside import private_temproot, pytest_cmd  # noqa: E402

from pytest_aqven.findings import emit, files  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--variants", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        projects.write(Path(tmp, "proj"), kind="agents", cases=args.cases, repeats=args.repeats,
                       variants=args.variants, split="holdout")
        with Path(tmp, "proj", "aqven.yaml").open("a") as f:
            f.write('research:\n  spend_cap_usd: "1000"\n')
        subprocess.run(pytest_cmd("--aqven-holdout", "--aqven-fail-on", "invalid", "proj"), cwd=tmp,
                       env=private_temproot(tmp), stdout=subprocess.DEVNULL, check=False)
        [path] = Path(tmp, "proj", "experiments").glob("*/findings/*.yaml")
        text = path.read_text(encoding="utf-8")
    document = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    writers = {"findings/emit.py": emit.dump, "PyYAML, libyaml's emitter": lambda d: files._yaml(d, files._CDumper),
               "PyYAML, pure Python": lambda d: files._yaml(d, files._Dumper)}
    if files._CDumper is None:
        del writers["PyYAML, libyaml's emitter"]
    times: dict[str, list[float]] = {name: [] for name in writers}
    for name, write in writers.items():
        assert write(document) == text, f"{name} writes other bytes than the finding file"
    for _ in range(args.rounds):
        for name, write in writers.items():
            cpu = time.process_time()
            write(document)
            times[name].append(time.process_time() - cpu)
    print(f"a finding of {len(text):,} bytes ({args.variants} variants × {args.cases} cases × {args.repeats} "
          f"repeats, held out); CPU ms, medians of {args.rounds} (range); every writer gives the file's bytes:")
    base = statistics.median(times["findings/emit.py"])
    for name, ts in times.items():
        print(f"  {name:<28} {statistics.median(ts) * 1000:7.1f} ms ({min(ts) * 1000:.1f}-{max(ts) * 1000:.1f})   "
              f"x{statistics.median(ts) / base:.1f}")


if __name__ == "__main__":
    main()
