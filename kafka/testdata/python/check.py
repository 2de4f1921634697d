"""confluent-kafka-python (librdkafka) against floe's Kafka listener.

Usage: check.py BOOTSTRAP TOPIC GROUP N

Produces N records idempotently (key-i, value i, header i=<i>), then
consumes them in GROUP from the start, committing, and prints each record
consumed as one line: key TAB value TAB headers (k=v, comma-separated),
then "COMMITTED <sum of committed offsets>".
"""
import sys

from confluent_kafka import Consumer, Producer, TopicPartition

bootstrap, topic, group, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
errors = []
p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
              "compression.type": "zstd", "linger.ms": 5})
for i in range(n):
    p.produce(topic, key=f"key-{i}", value=f"value {i}", headers=[("i", str(i).encode())],
              on_delivery=lambda err, msg: err and errors.append(err))
if p.flush(30) != 0 or errors:
    sys.exit(f"produce failed: {errors}")

c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
              "enable.auto.commit": False})
c.subscribe([topic])
got = 0
for _ in range(600):
    if got == n:
        break
    m = c.poll(0.5)
    if m is None:
        continue
    if m.error():
        sys.exit(f"consume failed: {m.error()}")
    hs = ",".join(f"{k}={v.decode()}" for k, v in (m.headers() or []))
    print(f"{m.key().decode()}\t{m.value().decode()}\t{hs}")
    got += 1
c.commit(asynchronous=False)
parts = c.committed(c.assignment(), timeout=10)
print("COMMITTED", sum(tp.offset for tp in parts if tp.offset >= 0))
c.close()
