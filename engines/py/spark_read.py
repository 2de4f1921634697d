"""Spark (pyspark, local[2]) with Iceberg's Spark runtime. The catalog is
configured from spark-defaults.conf files (the shipped
deploy/spark/*.conf with hosts and ports substituted). Job: {"conf_files",
"jars", "conf", "catalog", "namespace", "tables", "filter",
"snapshots_table", "live": {"table", "seconds", "queries"}, "rest":
{"catalog", "namespace", "tables"}}."""
import time

from pyspark.sql import SparkSession

import common

job = common.read_job()
b = (SparkSession.builder.master("local[2]").appName("floe-engines")
     .config("spark.jars", ",".join(job["jars"]))
     .config("spark.sql.session.timeZone", "UTC")
     .config("spark.ui.enabled", "false")
     .config("spark.sql.shuffle.partitions", "2"))
for path in job["conf_files"]:
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            k, v = line.split(None, 1)
            b = b.config(k, v.strip())
for k, v in job.get("conf", {}).items():
    b = b.config(k, v)
spark = b.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
cat, ns = job["catalog"], job["namespace"]


def q(sql):
    return spark.sql(sql).collect()


def tname(t):
    return "%s.%s.`%s`" % (cat, ns, t)


out = {
    "namespaces": sorted(r[0] for r in q("SHOW NAMESPACES IN %s" % cat)),
    "tables": sorted(r["tableName"] for r in q("SHOW TABLES IN %s.%s" % (cat, ns))),
    "rows": {},
    "vectorized": {},
}
flat = "`partition`, `offset`, `timestamp`, append_time, key, value"
for vec in ("false", "true"):
    spark.conf.set("spark.sql.iceberg.vectorization.enabled", vec)
    for t in job["tables"]:
        if vec == "false":
            out["rows"][t] = [common.canon(r) for r in q("SELECT * FROM %s" % tname(t))]
        else:  # Iceberg's vectorized Parquet reader takes flat columns only
            out["vectorized"][t] = [common.canon(r) for r in q("SELECT %s FROM %s" % (flat, tname(t)))]
f = job.get("filter")
if f:
    t = tname(f["table"])
    out["day_counts"] = {r[0]: r[1] for r in q(
        "SELECT date_format(`timestamp`, 'yyyy-MM-dd'), count(*) FROM %s GROUP BY 1" % t)}
    out["filter"] = {"count": q("SELECT count(*) FROM %s WHERE `timestamp` >= timestamp_micros(%d) AND `timestamp` < timestamp_micros(%d)"
                                % (t, f["from_us"], f["to_us"]))[0][0]}
st = job.get("snapshots_table")
if st:
    t = tname(st)
    snaps = []
    for r in q("SELECT snapshot_id, operation, summary FROM %s.snapshots ORDER BY committed_at" % t):
        snaps.append({"id": r[0], "operation": r[1], "total_records": int(r[2].get("total-records", "-1")),
                      "watermark": r[2].get("floe.watermark", ""),
                      "count": q("SELECT count(*) FROM %s VERSION AS OF %d" % (t, r[0]))[0][0]})
    out["snapshots"] = snaps
    out["history"] = [r[0] for r in q("SELECT snapshot_id FROM %s.history ORDER BY made_current_at" % t)]
rest = job.get("rest")
if rest:
    spark.conf.set("spark.sql.iceberg.vectorization.enabled", "false")
    out["rest_rows"] = {t: [common.canon(r) for r in q("SELECT * FROM %s.%s.`%s`" % (rest["catalog"], rest["namespace"], t))]
                        for t in rest["tables"]}
live = job.get("live")
if live:
    t = tname(live["table"])
    counts = []
    start = time.time()
    # At least live["seconds"] and live["queries"] queries, at most 90 s.
    while (time.time() - start < live["seconds"] or len(counts) < live["queries"]) and time.time() - start < 90:
        spark.sql("REFRESH TABLE %s" % t)
        r = q("SELECT count(*), count(DISTINCT `partition`, `offset`) FROM %s" % t)[0]
        counts.append([r[0], r[1]])
    spark.sql("REFRESH TABLE %s" % t)
    totals = [int(r[0].get("total-records", "-1")) for r in q("SELECT summary FROM %s.snapshots" % t)]
    out["live"] = {"counts": counts, "totals": totals}
timed = job.get("timed")
if timed:  # each query twice: the second run's seconds are reported
    out["timings"] = []
    for sql in timed:
        q(sql)
        t0 = time.time()
        r = q(sql)
        out["timings"].append({"sql": sql, "seconds": time.time() - t0, "result": str(r[0][0])})
common.answer(out)
spark.stop()
