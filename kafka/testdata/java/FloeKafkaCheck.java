// FloeKafkaCheck drives floe's Kafka listener with Apache Kafka's own Java
// client (org.apache.kafka:kafka-clients 4.x): the admin client creates a
// topic, idempotent producers send records with keys, headers and
// timestamps with every compression codec, a consumer group of two (the
// classic protocol, or KIP-848's with group.protocol=consumer)
// consumes and commits, a third member joins, more records are produced,
// and every record must come back exactly as sent; then the group's
// committed offsets must equal the log end, the admin client moves them
// back to the start (what kafka-consumer-groups --reset-offsets does) and
// a new consumer of the group reads everything again.
//
// Run by TestJavaClient (make test-kafka), as a single-file program:
//
//	java -cp <kafka-clients classpath> FloeKafkaCheck.java <bootstrap> [classic|consumer [client.properties]]
//
// The optional properties file is added to every client's configuration
// (security.protocol, sasl.*, ssl.*: TestJavaClientSASLSSL).
//
// It prints "OK <records>" and exits 0, or prints FAIL and exits 1.

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class FloeKafkaCheck {
    static String PROTOCOL = "classic"; // group.protocol: classic or consumer (KIP-848)
    static String TOPIC = "java-check";
    static String GROUP = "java-group";
    static final int PARTITIONS = 6;
    static final Properties EXTRA = new Properties(); // from the optional properties file

    /** A client configuration: the bootstrap servers and the extra properties. */
    static Properties props(String bootstrap) {
        Properties p = new Properties();
        p.putAll(EXTRA);
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static void check(boolean ok, String msg) {
        if (!ok) {
            System.out.println("FAIL: " + msg);
            System.exit(1);
        }
    }

    /** A consumer group member on its own thread (KafkaConsumer is not thread-safe). */
    static class Member extends Thread {
        final String bootstrap;
        final Map<String, String> got;
        final AtomicInteger count = new AtomicInteger();
        volatile boolean stop;
        volatile Throwable failure;

        Member(String bootstrap, Map<String, String> got) {
            this.bootstrap = bootstrap;
            this.got = got;
        }

        @Override
        public void run() {
            Properties cp = props(bootstrap);
            cp.put("group.id", GROUP);
            cp.put("group.protocol", PROTOCOL);
            cp.put("auto.offset.reset", "earliest");
            cp.put("enable.auto.commit", "false");
            if (PROTOCOL.equals("classic")) { // the broker sets them for KIP-848 groups
                cp.put("heartbeat.interval.ms", "300");
                cp.put("session.timeout.ms", "10000");
            }
            cp.put("key.deserializer", StringDeserializer.class.getName());
            cp.put("value.deserializer", StringDeserializer.class.getName());
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
                c.subscribe(List.of(TOPIC));
                while (!stop) {
                    ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<String, String> r : rs) {
                        got.put(r.value(), describe(r.key(), r.headers().lastHeader("codec"), r.timestamp()));
                        count.incrementAndGet();
                    }
                    if (!rs.isEmpty()) {
                        try {
                            c.commitSync();
                        } catch (Exception e) {
                            // a rebalance fenced the commit: the records are read again
                        }
                    }
                }
            } catch (Throwable t) {
                failure = t;
            }
        }
    }

    static String describe(String key, Header codec, long ts) {
        String h = codec == null ? "-" : new String(codec.value(), StandardCharsets.UTF_8);
        return key + "|" + h + "|" + ts;
    }

    static void await(String what, java.util.function.BooleanSupplier cond) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 60_000;
        while (!cond.getAsBoolean()) {
            check(System.currentTimeMillis() < deadline, "timed out waiting for " + what);
            Thread.sleep(50);
        }
    }

    static int produce(String bootstrap, String codec, int from, int n, Map<String, String> sent) throws Exception {
        Properties pp = props(bootstrap);
        pp.put("acks", "all");
        pp.put("enable.idempotence", "true");
        pp.put("compression.type", codec);
        pp.put("linger.ms", "5");
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = from; i < from + n; i++) {
                String v = "java " + codec + " " + i;
                String k = "k" + (i % 11);
                long ts = 1700000000000L + i;
                ProducerRecord<String, String> r = new ProducerRecord<>(TOPIC, null, ts, k, v);
                r.headers().add(new RecordHeader("codec", codec.getBytes(StandardCharsets.UTF_8)));
                sent.put(v, describe(k, r.headers().lastHeader("codec"), ts));
                fs.add(p.send(r));
            }
            for (Future<RecordMetadata> f : fs) {
                f.get();
            }
        }
        return from + n;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        if (args.length > 1) {
            PROTOCOL = args[1];
            TOPIC = TOPIC + "-" + PROTOCOL;
            GROUP = GROUP + "-" + PROTOCOL;
        }
        if (args.length > 2) {
            try (java.io.FileReader r = new java.io.FileReader(args[2], StandardCharsets.UTF_8)) {
                EXTRA.load(r);
            }
        }
        Properties ap = props(bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get();
            check(admin.describeCluster().nodes().get().size() == 1, "describeCluster: one broker");
            check(admin.listTopics().names().get().contains(TOPIC), "listTopics names the topic");

            Map<String, String> sent = new ConcurrentHashMap<>();
            int next = 0;
            for (String codec : new String[] {"none", "gzip", "snappy", "lz4", "zstd"}) {
                next = produce(bootstrap, codec, next, 60, sent);
            }

            Map<String, String> got = new ConcurrentHashMap<>();
            Member m1 = new Member(bootstrap, got), m2 = new Member(bootstrap, got);
            m1.start();
            m2.start();
            final int first = sent.size();
            await("the first records", () -> got.size() >= first);
            Member m3 = new Member(bootstrap, got);
            m3.start();
            await("three stable members", () -> {
                try {
                    ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(GROUP)).all().get().get(GROUP);
                    return d.members().size() == 3 && d.groupState().toString().equalsIgnoreCase("stable")
                        && d.members().stream().allMatch(m -> !m.assignment().topicPartitions().isEmpty());
                } catch (Exception e) {
                    return false;
                }
            });
            next = produce(bootstrap, "lz4", next, 120, sent);
            await("every record", () -> got.size() >= sent.size());
            check(m3.count.get() > 0, "the third member read nothing");
            for (Map.Entry<String, String> e : sent.entrySet()) {
                check(e.getValue().equals(got.get(e.getKey())), "record " + e.getKey() + ": sent " + e.getValue() + ", got " + got.get(e.getKey()));
            }
            check(got.size() == sent.size(), "read " + got.size() + " distinct records, sent " + sent.size());

            // Committed offsets reach the log end.
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                latest.put(new TopicPartition(TOPIC, p), OffsetSpec.latest());
            }
            long end = 0;
            for (ListOffsetsResult.ListOffsetsResultInfo i : admin.listOffsets(latest).all().get().values()) {
                end += i.offset();
            }
            check(end == sent.size(), "log end " + end + ", sent " + sent.size());
            final long want = end;
            await("commits at the log end", () -> {
                try {
                    long sum = 0;
                    for (OffsetAndMetadata o : admin.listConsumerGroupOffsets(GROUP).partitionsToOffsetAndMetadata().get().values()) {
                        sum += o.offset();
                    }
                    return sum == want;
                } catch (Exception e) {
                    return false;
                }
            });
            for (Member m : new Member[] {m1, m2, m3}) {
                m.stop = true;
                m.join();
                check(m.failure == null, "consumer failed: " + m.failure);
            }

            // Each member left as it closed (a classic member's LeaveGroup, a
            // KIP-848 member's epoch -1 heartbeat): the group is empty now,
            // not once the sessions expire.
            ConsumerGroupDescription left = admin.describeConsumerGroups(List.of(GROUP)).all().get().get(GROUP);
            check(left.members().isEmpty(), "the closed members are still in the group: " + left);
            // Reset the group to the start, as kafka-consumer-groups --reset-offsets does.
            await("an empty group", () -> {
                try {
                    return admin.describeConsumerGroups(List.of(GROUP)).all().get().get(GROUP).members().isEmpty();
                } catch (Exception e) {
                    return false;
                }
            });
            Map<TopicPartition, OffsetAndMetadata> zero = new HashMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                zero.put(new TopicPartition(TOPIC, p), new OffsetAndMetadata(0));
            }
            admin.alterConsumerGroupOffsets(GROUP, zero).all().get();
            Map<String, String> again = new ConcurrentHashMap<>();
            Member m4 = new Member(bootstrap, again);
            m4.start();
            await("every record again after the reset", () -> again.size() >= sent.size());
            m4.stop = true;
            m4.join();
            check(m4.failure == null, "consumer failed: " + m4.failure);
            System.out.println("OK " + sent.size());
        }
    }
}
