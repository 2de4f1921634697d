package bench

import (
	"context"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/services"
)

// The peer runs through the same harness: an open-loop e2e run and a
// catch-up against a real nats-server (built into .tools when missing).
func TestJetStreamPeer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	n, err := services.StartNATS(ctx, services.DefaultNATSConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	sys, err := NewJetStreamSystem(JetStreamConfig{URL: n.URL, Pid: n.Pid(), RecordSize: 256, MaxPending: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()

	rc := DefaultRunConfig()
	rc.Workload, rc.Topic, rc.Partitions, rc.Producers, rc.Consumers = WorkloadE2E, "peer-e2e", 4, 2, 2
	rc.RecordSize, rc.Rate, rc.Warmup, rc.Duration, rc.Drain = 256, 500, 200*time.Millisecond, time.Second, 5*time.Second
	res, err := Run(ctx, sys, rc)
	if err != nil {
		t.Fatal(err)
	}
	// No rate floor: under load the peer may not keep the schedule (a
	// timing assert); every record sent must be acknowledged.
	if res.Acked == 0 || res.Acked != res.Sent || res.Failed != 0 || res.Unacked != 0 || res.Produce.Count == 0 {
		t.Fatalf("e2e run: %+v", res)
	}
	if res.E2E == nil || res.E2E.Count == 0 || res.Consumed != res.Acked {
		t.Fatalf("consumers saw %d of %d records, e2e %+v", res.Consumed, res.Acked, res.E2E)
	}
	if res.Cost.CPUSeconds <= 0 || res.Cost.PeakRSSBytes <= 0 {
		t.Fatalf("no server figures from /proc: %+v", res.Cost)
	}

	rc.Workload, rc.Topic, rc.BacklogBytes = WorkloadCatchup, "peer-catchup", 2<<20
	res, err = Run(ctx, sys, rc)
	if err != nil {
		t.Fatal(err)
	}
	if res.Catchup == nil || res.Catchup.ReadRecords != res.Acked || res.Acked < 8000 || res.Catchup.ReadMBPerSec <= 0 {
		t.Fatalf("catch-up: %+v %+v", res, res.Catchup)
	}
}
