//go:build kafkabroker

package bench

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// The Apache Kafka peer's lifecycle and the franz-go workload against it:
// the harness starts a KRaft broker from the cached jars, runs an e2e run
// and a catch-up, and stops it (its process gone). Run by `make bench`
// (build tag kafkabroker): it needs Java 17 and the Maven cache.
func TestKafkaBrokerPeer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := testKafkaBrokerConfig(t, ctx)
	cfg.FlushEveryMessage = true
	b, err := StartKafkaBroker(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	sys, err := NewKafkaSystem(KafkaConfig{Name: "kafka", Brokers: []string{b.Addr}, Pid: b.Pid(), RecordSize: 256, MaxBuffered: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()

	rc := DefaultRunConfig()
	rc.Workload, rc.Topic, rc.Partitions, rc.Producers, rc.Consumers = WorkloadE2E, "kafka-e2e", 4, 2, 2
	rc.RecordSize, rc.Rate, rc.Warmup, rc.Duration, rc.Drain = 256, 500, 200*time.Millisecond, time.Second, 10*time.Second
	res, err := Run(ctx, sys, rc)
	if err != nil {
		t.Fatal(err)
	}
	if res.Acked == 0 || res.Failed != 0 || res.Produce.Count == 0 {
		t.Fatalf("e2e run: %d acknowledged, %d failed (%s)\n%s", res.Acked, res.Failed, res.FirstError, b.LogTail())
	}
	if res.E2E == nil || res.Consumed != res.Acked {
		t.Fatalf("consumers saw %d of %d records (%s)", res.Consumed, res.Acked, res.FirstError)
	}
	if res.Cost.CPUSeconds <= 0 || res.Cost.PeakRSSBytes <= 0 {
		t.Fatalf("no broker figures from /proc: %+v", res.Cost)
	}
	rc.Workload, rc.Topic, rc.BacklogBytes = WorkloadCatchup, "kafka-catchup", 2<<20
	if res, err = Run(ctx, sys, rc); err != nil {
		t.Fatal(err)
	}
	if res.Catchup == nil || res.Catchup.ReadRecords != res.Acked || res.Catchup.ReadMBPerSec <= 0 {
		t.Fatalf("catch-up: %+v (%s)", res.Catchup, res.FirstError)
	}

	pid := b.Pid()
	b.Stop()
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		if st, _ := ReadProcStat(pid); st.RSSBytes > 0 {
			t.Fatalf("broker %d still running after Stop", pid)
		}
	}
	if _, err := os.Stat(b.dir); err == nil {
		t.Fatalf("broker dir %s left behind", b.dir)
	}
}
