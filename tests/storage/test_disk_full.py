"""A full disk under the PostgreSQL store is one message, as under SQLite (tests/test_faults_storage.py): the
server's own error (SQLSTATE 53100, 'could not extend file ...: No space left on device') stops the run taking
attempts, and once space is freed the same command continues the series, paying no attempt twice."""
from __future__ import annotations

import pytest

from .. import faults

# what the server says when a table cannot grow: raised by a trigger once the attempts table holds `rows` rows
FULL_AFTER = '''
CREATE FUNCTION aqven_test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (SELECT count(*) FROM aqven_series_attempts) >= {rows} THEN
    RAISE EXCEPTION 'could not extend file "base/16384/16402": No space left on device'
      USING ERRCODE = '53100', HINT = 'Check free disk space.';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER aqven_test_disk_full BEFORE INSERT OR UPDATE ON aqven_series_attempts
  FOR EACH ROW EXECUTE FUNCTION aqven_test_disk_full();
'''


@pytest.mark.slow
def test_postgresql_a_disk_that_fills_up_mid_run_stops_it_with_one_message(tmp_path, postgres_url, xdist):
    import psycopg

    root = faults.make(tmp_path, cases=48)
    migrated = faults.aqven(tmp_path, "db", "migrate", "--store", postgres_url)
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(FULL_AFTER.format(rows=6))
    env = {"AQVEN_STORE": postgres_url}
    full = faults.run(tmp_path, *xdist, "--aqven-concurrency", "2", env=env)
    out = full.stdout + full.stderr
    assert full.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert out.count("is full (could not extend file \"base/16384/16402\": No space left on device): the run stops "
                     "here and takes no more attempts; what was committed is kept. Free space on the server's disk, "
                     "then run the same command: it continues the series.") == 1, out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    planned = faults.attempts_planned(root, "dev")
    assert len(faults.calls(root)) < planned
    with psycopg.connect(postgres_url, autocommit=True) as conn:        # space freed
        conn.execute("DROP TRIGGER aqven_test_disk_full ON aqven_series_attempts")
    again = faults.run(tmp_path, *xdist, "--aqven-concurrency", "2", env=env)
    assert again.returncode == 0, again.stdout
    assert len(set(faults.calls(root))) == planned
