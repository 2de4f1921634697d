// FloeKafkaRegex checks KIP-848 regex subscriptions with Apache Kafka's
// Java client (kafka-clients 4.x, group.protocol=consumer): the admin
// client creates jr-1 and jr-2 (matching) and jx-other (not), a producer
// sends records to each, and a consumer subscribed with
// SubscriptionPattern("jr-.*") (resolved by the broker, RE2/J) must read
// exactly the matching topics' records; then jr-3 is created and written,
// and the same consumer must read its records too.
//
// Run by TestJavaRegexSubscription (make test-kafka), as a single-file program:
//
//	java -cp <kafka-clients classpath> FloeKafkaRegex.java <bootstrap>
//
// It prints "OK <records>" and exits 0, or prints FAIL and exits 1.

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class FloeKafkaRegex {
    static final int PER_TOPIC = 25;

    static Properties props(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static void produce(KafkaProducer<String, String> producer, String topic) throws Exception {
        for (int i = 0; i < PER_TOPIC; i++) {
            producer.send(new ProducerRecord<>(topic, "k" + i, topic + " " + i)).get();
        }
    }

    /** Polls until every topic of want has its PER_TOPIC records; fails on any other topic. */
    static void consume(KafkaConsumer<String, String> consumer, Map<String, Integer> got, List<String> want) {
        long deadline = System.currentTimeMillis() + 90_000;
        while (true) {
            boolean done = true;
            for (String t : want) {
                done &= got.getOrDefault(t, 0) >= PER_TOPIC;
            }
            if (done) {
                return;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out; records by topic: " + got + ", want " + want);
            }
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                if (!r.topic().startsWith("jr-")) {
                    throw new IllegalStateException("a record of " + r.topic() + ", which the regex does not match");
                }
                got.merge(r.topic(), 1, Integer::sum);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        try (Admin admin = Admin.create(props(bootstrap));
             KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps(bootstrap))) {
            admin.createTopics(List.of(new NewTopic("jr-1", 2, (short) 1), new NewTopic("jr-2", 1, (short) 1),
                    new NewTopic("jx-other", 2, (short) 1))).all().get();
            for (String t : List.of("jr-1", "jr-2", "jx-other")) {
                produce(producer, t);
            }
            Properties cp = props(bootstrap);
            cp.put("group.id", "java-regex");
            cp.put("group.protocol", "consumer");
            cp.put("auto.offset.reset", "earliest");
            cp.put("key.deserializer", StringDeserializer.class.getName());
            cp.put("value.deserializer", StringDeserializer.class.getName());
            Map<String, Integer> got = new HashMap<>();
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
                consumer.subscribe(new SubscriptionPattern("jr-.*"));
                consume(consumer, got, List.of("jr-1", "jr-2"));
                System.out.println("first topics read: " + got);
                admin.createTopics(List.of(new NewTopic("jr-3", 2, (short) 1))).all().get();
                produce(producer, "jr-3");
                consume(consumer, got, List.of("jr-1", "jr-2", "jr-3"));
            }
            int total = 0;
            for (Map.Entry<String, Integer> e : got.entrySet()) {
                if (e.getValue() != PER_TOPIC) {
                    throw new IllegalStateException(e.getKey() + ": " + e.getValue() + " records, want " + PER_TOPIC);
                }
                total += e.getValue();
            }
            System.out.println("OK " + total);
        } catch (Exception e) {
            e.printStackTrace();
            System.out.println("FAIL " + e);
            System.exit(1);
        }
    }

    static Properties producerProps(String bootstrap) {
        Properties p = props(bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("enable.idempotence", "true");
        return p;
    }
}
