// kafkajs against floe's Kafka listener.
//
// Usage: node check.js BOOTSTRAP TOPIC GROUP N
//
// Produces N records idempotently (key-i, value i, header i=<i>), then
// consumes them in GROUP from the start and prints each record consumed
// as one line: key TAB value TAB headers (k=v, comma-separated).
const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, topic, group, nArg] = process.argv.slice(2);
const n = Number(nArg);
const kafka = new Kafka({ clientId: 'floe-kafkajs-check', brokers: [bootstrap], logLevel: logLevel.WARN });

async function main() {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const messages = [];
  for (let i = 0; i < n; i++) {
    messages.push({ key: `key-${i}`, value: `value ${i}`, headers: { i: `${i}` } });
  }
  await producer.send({ topic, acks: -1, messages });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: group });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let got = 0;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${got} of ${n} records`)), 60000);
    consumer.run({
      eachMessage: async ({ message }) => {
        const hs = Object.entries(message.headers || {}).map(([k, v]) => `${k}=${v.toString()}`).join(',');
        process.stdout.write(`${message.key.toString()}\t${message.value.toString()}\t${hs}\n`);
        if (++got === n) {
          clearTimeout(timer);
          resolve();
        }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
