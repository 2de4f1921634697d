"""DuckDB with its Iceberg extension (from PyPI): iceberg_scan of each
table's metadata file on S3, or ATTACH of floe's REST catalog. Job:
{"s3": {"endpoint": "host:port", "key", "secret", "region"},
"metadata": {table: s3 metadata location}, "filter", "snapshots_table",
"rest": {"uri", "namespace", "tables"}}."""
import importlib
import os

import duckdb

import common

job = common.read_job()
con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
# The extensions come from PyPI (duckdb-extension-NAME), whose packages
# hold the extension file: DuckDB's own download site is not used.
for ext in ("httpfs", "avro", "iceberg"):
    pkg = importlib.import_module("duckdb_extension_" + ext)
    path = os.path.join(os.path.dirname(pkg.__file__), "extensions", "v" + duckdb.__version__, ext + ".duckdb_extension")
    con.execute("LOAD '%s'" % path)
s3 = job["s3"]
con.execute("""CREATE SECRET floe_s3 (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?,
               URL_STYLE 'path', USE_SSL false)""".replace("?", "'%s'") % (
    s3["key"], s3["secret"], s3["region"], s3["endpoint"]))


def rows(sql, *args):
    return common.rows_of_arrow(con.execute(sql, list(args)).fetch_arrow_table())


out = {"rows": {}}
meta = job.get("metadata", {})
for t, loc in meta.items():
    out["rows"][t] = rows("SELECT * FROM iceberg_scan(?)", loc)
f = job.get("filter")
if f:
    loc = meta[f["table"]]
    r = con.execute("""SELECT strftime("timestamp" AT TIME ZONE 'UTC', '%Y-%m-%d') AS d, count(*)
                       FROM iceberg_scan(?) GROUP BY 1""", [loc]).fetchall()
    out["day_counts"] = {d: n for d, n in r}
    n = con.execute("""SELECT count(*) FROM iceberg_scan(?)
                       WHERE "timestamp" >= make_timestamptz(?::BIGINT) AND "timestamp" < make_timestamptz(?::BIGINT)""",
                    [loc, f["from_us"], f["to_us"]]).fetchone()[0]
    out["filter"] = {"count": n}
st = job.get("snapshots_table")
if st:
    loc = meta[st]
    snaps = []
    for sid, in con.execute("SELECT snapshot_id FROM iceberg_snapshots(?) ORDER BY sequence_number", [loc]).fetchall():
        n = con.execute("SELECT count(*) FROM iceberg_scan(?, snapshot_from_id => ?)", [loc, sid]).fetchone()[0]
        snaps.append({"id": sid, "count": n})
    out["snapshots"] = snaps
rest = job.get("rest")
if rest:
    con.execute("""ATTACH 'floe' AS floe_rest (TYPE iceberg, ENDPOINT '%s', AUTHORIZATION_TYPE 'none')""" % rest["uri"])
    out["rest_rows"] = {t: rows('SELECT * FROM floe_rest."%s"."%s"' % (rest["namespace"], t)) for t in rest["tables"]}
common.answer(out)
