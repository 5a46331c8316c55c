// One KafkaJS session against Weir's Kafka listener, driven by tests/kafka_clients/test_kafkajs.py.
// Configuration comes from the environment; the result is one JSON line on stdout.
//   WEIR_KAFKA_BROKERS   comma-separated host:port list
//   WEIR_KAFKA_USERNAME / WEIR_KAFKA_PASSWORD   the tenant's cluster API key and secret
//   WEIR_KAFKA_TOPIC     a topic to create, produce to and consume from
//   WEIR_KAFKA_GROUP     the consumer group
//   WEIR_KAFKA_RECORDS   how many records to produce and read back
// Every wait is bounded: the whole flow gives up after WEIR_KAFKA_DEADLINE_MS.
const { Kafka, logLevel } = require("kafkajs");

const env = (name, fallback) => process.env[name] ?? fallback;
const brokers = env("WEIR_KAFKA_BROKERS", "").split(",").filter(Boolean);
const topic = env("WEIR_KAFKA_TOPIC", "kafkajs-orders");
const groupId = env("WEIR_KAFKA_GROUP", "kafkajs-group");
const count = Number(env("WEIR_KAFKA_RECORDS", "100"));
const deadlineMs = Number(env("WEIR_KAFKA_DEADLINE_MS", "90000"));

const kafka = new Kafka({
  clientId: "weir-kafkajs-test",
  brokers,
  sasl: { mechanism: "plain", username: env("WEIR_KAFKA_USERNAME", ""), password: env("WEIR_KAFKA_PASSWORD", "") },
  ssl: env("WEIR_KAFKA_SSL", "") === "1" ? { rejectUnauthorized: false } : false,
  connectionTimeout: 5000,
  requestTimeout: 15000,
  retry: { retries: 8, initialRetryTime: 200 },
  logLevel: logLevel.WARN,
});

async function main() {
  const result = { topic, created: false, produced: 0, consumed: [], committed: null, topics: [] };
  const admin = kafka.admin();
  await admin.connect();
  result.created = await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: -1 }], waitForLeaders: true });
  result.topics = (await admin.listTopics()).sort();

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const messages = Array.from({ length: count }, (_, i) => ({ key: `key-${i}`, value: `value-${i}`, headers: { index: String(i) } }));
  const acks = await producer.send({ topic, acks: -1, messages });
  result.produced = acks.length > 0 ? count : 0;
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed ${seen.length} of ${count} before the deadline`)), deadlineMs);
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        seen.push({ partition, offset: message.offset, key: message.key.toString(), value: message.value.toString(), index: message.headers.index.toString() });
        if (seen.length >= count) {
          clearTimeout(timer);
          resolve();
        }
      },
    }).catch(reject);
  });
  await consumer.commitOffsets([]); // eachMessage auto-commits; make sure the last ones are sent
  await consumer.disconnect();
  result.consumed = seen;
  result.committed = await admin.fetchOffsets({ groupId, topics: [topic] });
  await admin.disconnect();
  process.stdout.write(JSON.stringify(result) + "\n");
}

const overall = setTimeout(() => {
  process.stderr.write(`the KafkaJS flow did not finish within ${deadlineMs * 2} ms\n`);
  process.exit(3);
}, deadlineMs * 2);
main().then(
  () => { clearTimeout(overall); process.exit(0); },
  (error) => { process.stderr.write(`${error.stack || error}\n`); process.exit(1); },
);
