-- Example Spark SQL queries on a topic's table (catalog floe, namespace
-- floe). The topic orders.created is the table orders_dcreated
-- (docs/iceberg.md, "Table names").

-- Records per day (of the records' own timestamps).
SELECT date_trunc('DAY', `timestamp`) AS day, count(*) AS records
FROM floe.floe.orders_dcreated
GROUP BY 1
ORDER BY 1;

-- The latest value of each key (a null value is a tombstone).
SELECT CAST(key AS STRING) AS key, CAST(value AS STRING) AS value, `timestamp`
FROM (
  SELECT key, value, `timestamp`,
         row_number() OVER (PARTITION BY key ORDER BY `offset` DESC) AS rn
  FROM floe.floe.orders_dcreated
  WHERE key IS NOT NULL
)
WHERE rn = 1 AND value IS NOT NULL;

-- Lag between a record's timestamp and its append time, per hour.
SELECT date_trunc('HOUR', append_time) AS hour,
       count(*) AS records,
       avg(unix_millis(append_time) - unix_millis(`timestamp`)) AS avg_lag_ms,
       percentile_approx(unix_millis(append_time) - unix_millis(`timestamp`), 0.99) AS p99_lag_ms
FROM floe.floe.orders_dcreated
GROUP BY 1
ORDER BY 1;

-- Snapshots floe committed and their watermark.
SELECT committed_at, snapshot_id, summary['floe.watermark'] AS watermark
FROM floe.floe.orders_dcreated.snapshots
ORDER BY committed_at DESC;
