"""pyiceberg over floe's catalog: SqlCatalog on floe's PostgreSQL (or
floe dev's SQLite), or RestCatalog on floe's REST catalog. Job:
{"catalog": {pyiceberg properties}, "namespace", "tables", "filter":
{"table", "from_us", "to_us"}, "snapshots_table"}."""
from pyiceberg.catalog import load_catalog
from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan

import common

job = common.read_job()
props = dict(job["catalog"])
name = props.pop("name", "floe")
cat = load_catalog(name, **props)
ns = job["namespace"]
out = {
    "namespaces": sorted(".".join(n) for n in cat.list_namespaces()),
    "tables": sorted(t[-1] for t in cat.list_tables(ns)),
    "rows": {},
}
for t in job["tables"]:
    tbl = cat.load_table((ns, t))
    out["rows"][t] = common.rows_of_arrow(tbl.scan().to_arrow())
f = job.get("filter")
if f:
    tbl = cat.load_table((ns, f["table"]))
    out["day_counts"] = common.day_counts(common.rows_of_arrow(tbl.scan(selected_fields=("timestamp",)).to_arrow()))
    expr = And(GreaterThanOrEqual("timestamp", common.us_to_datetime(f["from_us"]).isoformat()),
               LessThan("timestamp", common.us_to_datetime(f["to_us"]).isoformat()))
    scan = tbl.scan(row_filter=expr)
    out["filter"] = {
        "count": scan.to_arrow().num_rows,
        "files_read": len(list(scan.plan_files())),
        "files_total": len(list(tbl.scan().plan_files())),
    }
st = job.get("snapshots_table")
if st:
    tbl = cat.load_table((ns, st))
    snaps = []
    for s in tbl.snapshots():
        summ = s.summary.additional_properties if s.summary else {}
        snaps.append({
            "id": s.snapshot_id,
            "operation": s.summary.operation.value if s.summary else "",
            "total_records": int(summ.get("total-records", "-1")),
            "watermark": summ.get("floe.watermark", ""),
            "count": tbl.scan(snapshot_id=s.snapshot_id).to_arrow().num_rows,
        })
    out["snapshots"] = snaps
    out["history"] = [h.snapshot_id for h in tbl.history()]
common.answer(out)
