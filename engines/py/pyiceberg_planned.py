"""A scan planned before maintenance, read after it (engines/maintain_test.go).

Reads a JSON job line on stdin, plans a scan of the table (plan_files),
writes {"snapshot": ID, "files": N} as a line, waits for a second stdin
line (the maintenance happened), then reads the planned files and time
travels to the planned snapshot, and writes the (partition, offset) pairs
of each, or the error each gave.
"""
import json
import sys

from pyiceberg.catalog import load_catalog
from pyiceberg.io.pyarrow import ArrowScan


def pairs(tbl):
    return sorted([p, o] for p, o in zip(tbl.column("partition").to_pylist(), tbl.column("offset").to_pylist()))


job = json.loads(sys.stdin.readline())
props = dict(job["catalog"])
cat = load_catalog(props.pop("name"), **props)
ident = (job["namespace"], job["table"])
tbl = cat.load_table(ident)
scan = tbl.scan()
tasks = list(scan.plan_files())
snap = tbl.current_snapshot().snapshot_id
print(json.dumps({"snapshot": snap, "files": len(tasks)}), flush=True)
sys.stdin.readline()

out = {}
try:
    read = ArrowScan(tbl.metadata, tbl.io, scan.projection(), scan.row_filter).to_table(tasks)
    out["planned"] = pairs(read)
except Exception as e:  # noqa: BLE001 - the answer says what failed
    out["planned_error"] = "%s: %s" % (type(e).__name__, e)
now = cat.load_table(ident)
out["snapshots"] = [s.snapshot_id for s in now.snapshots()]
out["files_now"] = len(list(now.scan().plan_files()))
try:
    out["travel"] = pairs(now.scan(snapshot_id=snap).to_arrow())
except Exception as e:  # noqa: BLE001
    out["travel_error"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out), flush=True)
