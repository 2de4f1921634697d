-- Example Trino queries on a topic's table (catalog floe, schema floe).
-- The topic orders.created is the table orders_dcreated (docs/iceberg.md,
-- "Table names"). timestamp, offset and partition are reserved words:
-- quote them.

-- Records per day (of the records' own timestamps).
SELECT date_trunc('day', "timestamp") AS day, count(*) AS records
FROM floe.floe.orders_dcreated
GROUP BY 1
ORDER BY 1;

-- The latest value of each key (a null value is a tombstone: the key is
-- deleted). Records of one key share a partition, where offsets order them.
SELECT key_text, value_text, "timestamp"
FROM (
  SELECT from_utf8(key) AS key_text, from_utf8(value) AS value_text, "timestamp",
         row_number() OVER (PARTITION BY key ORDER BY "offset" DESC) AS rn
  FROM floe.floe.orders_dcreated
  WHERE key IS NOT NULL
)
WHERE rn = 1 AND value_text IS NOT NULL;

-- Lag between a record's timestamp (its producer's clock) and its append
-- time (the broker's commit), per hour.
SELECT date_trunc('hour', append_time) AS hour,
       count(*) AS records,
       avg(to_milliseconds(append_time - "timestamp")) AS avg_lag_ms,
       approx_percentile(to_milliseconds(append_time - "timestamp"), 0.99) AS p99_lag_ms
FROM floe.floe.orders_dcreated
GROUP BY 1
ORDER BY 1;

-- Headers, one row each.
SELECT "partition", "offset", h.key, from_utf8(h.value) AS value
FROM floe.floe.orders_dcreated
CROSS JOIN UNNEST(headers) AS h (key, value)
LIMIT 20;

-- What floe committed: snapshots and their watermark.
SELECT committed_at, snapshot_id, summary['floe.watermark'] AS watermark
FROM floe.floe."orders_dcreated$snapshots"
ORDER BY committed_at DESC;
