#!/usr/bin/env bash
# stored-bytes.sh: bytes stored per byte produced once retention.raw.ms has
# passed (docs/benchmarks.md, "Bytes stored per byte produced").
#
# Starts `floe dev` (bin/floe, free ports, a temporary -data folder),
# produces RECORDS JSON records of about 1 KiB with `floe produce` into a
# topic of 4 partitions with retention.raw.ms=1000 and iceberg.lag=0,
# waits until the raw files are gone (the table holds their offsets and
# the compactor deleted them), and prints the bytes of the object store
# (raw files, table data files, table metadata files) over the bytes
# produced (the lines' bytes).
#
#   bench/stored-bytes.sh            # 20,000 records
#   RECORDS=5000 bench/stored-bytes.sh
set -euo pipefail
cd "$(dirname "$0")/.."
FLOE=${FLOE:-bin/floe}
RECORDS=${RECORDS:-20000}
WAIT=${WAIT:-300}
dir=$(mktemp -d "${TMPDIR:-/tmp}/floe-stored-XXXXXX")
read -r g m k < <(python3 -c '
import socket
s=[socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
"$FLOE" dev -data "$dir/data" -listen 127.0.0.1:"$g" -metrics-listen 127.0.0.1:"$m" -kafka-listen 127.0.0.1:"$k" \
	-interval 2s -grace 2s -log-level warn >"$dir/floe.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 300); do
	curl -sf -m 1 "http://127.0.0.1:$m/readyz" >/dev/null && break
	sleep 0.2
done
export FLOE_ADDR=127.0.0.1:$g
"$FLOE" topic create stored -partitions 4 -config retention.raw.ms=1000 -config iceberg.lag=0 >/dev/null
# ~1 KiB JSON records: an id, a timestamp, a few fields, a text of words.
python3 - "$RECORDS" >"$dir/records.json" <<'PY'
import json, random, sys
random.seed(23)
words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega".split()
for i in range(int(sys.argv[1])):
    rec = {"id": i, "ts": 1764547200000 + i * 7, "user": "user-%05d" % random.randrange(50000),
           "kind": random.choice(["click", "view", "buy", "cart"]), "amount": round(random.random() * 1000, 2)}
    text = []
    while len(json.dumps(dict(rec, text=" ".join(text)))) < 1000:
        text.append(random.choice(words) + str(random.randrange(1000)))
    rec["text"] = " ".join(text)
    print(json.dumps(rec))
PY
produced=$(wc -c <"$dir/records.json")
"$FLOE" produce stored -file "$dir/records.json" 2>"$dir/produce.log"
# floe dev keeps the raw files under DATA/objects, the table under
# DATA/warehouse (data/*.parquet, metadata/*: the object store's share);
# DATA/*.db are the SQLite metadata store and catalog, not counted.
raw_bytes() { find "$dir/data/objects" -type f -printf '%s\n' 2>/dev/null | awk '{s+=$1} END {print s+0}'; }
for _ in $(seq 1 "$WAIT"); do
	[ "$(raw_bytes)" = 0 ] && break
	sleep 1
done
sleep 3 # the metadata files of the last commit
python3 - "$dir/data" "$produced" "$RECORDS" <<'PY'
import os, sys
root, produced, records = sys.argv[1], int(sys.argv[2]), sys.argv[3]
kinds = {"raw": 0, "table data": 0, "table metadata": 0}
files_of = {k: 0 for k in kinds}
for top in ("objects", "warehouse"):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in files:
            p = os.path.join(d, f)
            rel = os.path.relpath(p, os.path.join(root, top))
            if top == "objects":
                k = "raw"
            elif f.endswith(".parquet") and "/data/" in "/" + rel:
                k = "table data"
            else:
                k = "table metadata"
            kinds[k] += os.path.getsize(p)
            files_of[k] += 1
total = sum(kinds.values())
print("produced %s records, %d bytes" % (records, produced))
for k, v in kinds.items():
    print("%-15s %10d bytes  %.3f per byte produced  (%d files)" % (k, v, v / produced, files_of[k]))
print("%-15s %10d bytes  %.3f per byte produced" % ("stored", total, total / produced))
PY
