"""Shared by the engine scripts of floe's engine suite (engines/*_test.go).

Each script reads one JSON job on stdin and writes one JSON answer on
stdout. Values are written in the suite's canonical form, which the Go
side builds too from what it produced: bytes as {"$b": hex}, timestamps as
{"$t": microseconds since the epoch, UTC}, structs as objects, lists as
arrays, everything else as JSON.
"""
import datetime
import decimal
import json
import sys

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def canon(v):
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"$b": bytes(v).hex()}
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:  # Spark hands out naive times in the session zone, UTC here
            v = v.replace(tzinfo=datetime.timezone.utc)
        d = v - EPOCH
        return {"$t": (d.days * 86400 + d.seconds) * 1000000 + d.microseconds}
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if hasattr(v, "asDict"):  # a pyspark Row (a tuple too)
        return canon(v.asDict(recursive=False))
    if isinstance(v, (list, tuple)):
        return [canon(x) for x in v]
    raise TypeError("canon: %s %r" % (type(v), v))


def day_of(v):
    """The UTC day (YYYY-MM-DD) of a timestamp as canon writes it."""
    return datetime.datetime.fromtimestamp(v["$t"] / 1e6, datetime.timezone.utc).strftime("%Y-%m-%d")


def us_to_datetime(us):
    return EPOCH + datetime.timedelta(microseconds=us)


def read_job():
    return json.load(sys.stdin)


def answer(obj):
    json.dump(obj, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()


def rows_of_arrow(tbl):
    return [canon(r) for r in tbl.to_pylist()]


def day_counts(rows):
    out = {}
    for r in rows:
        d = day_of(r["timestamp"])
        out[d] = out.get(d, 0) + 1
    return out
