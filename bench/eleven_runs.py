"""The eleven-runs experiment of issue 12: held-out runs of one experiment on identical data.

Writes a small project (tests/projects.py: 60 cases, a third of them flaky, 5 repeats, a threshold
whose edge, 0.79, sits where the betting interval decides) and runs `pytest --aqven-holdout` on it
N times: each run is a new series with a new random series id, on the same offline data. Prints, per
run, the verdict and the lower bound of the finding, next to what the same data give when the
betting interval's case order comes from the series id (decided again from the finding's own data
with the series id as the salt: the behaviour before the fix).

Run: PYTHONPATH=. python bench/eleven_runs.py [runs, default 11]
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_aqven.findings.verify import recompute  # noqa: E402


def main(runs: int = 11, experiment: str = "rate_ok") -> None:
    here = Path(__file__).resolve().parents[1]
    from tests import projects  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "proj"
        cases = [(f"case_{i:02d}", "flaky" if i % 3 == 0 else "fine") for i in range(60)]
        projects.write(project, {**projects.dataset(cases), **projects.experiment(above=0.77, margin=0.02, repeats=5)},
                       package="helpdesk")
        env = {**os.environ, "PYTHONPATH": str(here)}
        for i in range(runs):
            done = subprocess.run([sys.executable, "-m", "pytest", str(project), "--aqven-holdout", "-q", "-p",
                                   "no:cacheprovider", "--aqven-fail-on=invalid"], cwd=tmp, env=env, capture_output=True,
                                  text=True, check=False)
            verdict = [line for line in done.stdout.splitlines() if line.startswith(f"{experiment} (")]
            print(f"run {i + 1}: exit {done.returncode}: {verdict[0][:100] if verdict else done.stdout[-300:]}",
                  flush=True)
        files = sorted((project / "experiments" / experiment / "findings").glob("*.yaml"),
                       key=lambda p: yaml.safe_load(p.read_text())["scope"]["finished_at"])
        print(f"{len(files)} held-out runs of {experiment} on identical data")
        print(f"{'run':>3}  {'series':36}  {'now':12} {'low bound':>9}  | {'before (series id as salt)':26} {'low bound':>9}")
        now, before = Counter(), Counter()
        for i, path in enumerate(files, 1):
            doc = yaml.safe_load(path.read_text())
            low = doc["cells"][0]["estimate"]["low"]
            old = dict(doc, method={**doc["method"], "salt": doc["series"]})
            verdict = recompute(old)
            old_low = verdict.cells[0].estimate.low
            now[doc["state"]] += 1
            before[verdict.state] += 1
            print(f"{i:>3}  {doc['series']:36}  {doc['state']:12} {low:9.6f}  | {verdict.state:26} {old_low:9.6f}")
        print(f"now: {dict(now)}; statements identical: "
              f"{len({yaml.safe_load(p.read_text())['statement'] for p in files}) == 1}")
        print(f"before: {dict(before)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 11)
