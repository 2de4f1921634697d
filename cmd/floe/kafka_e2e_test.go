package main_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDevServesKafka: floe dev serves the Kafka protocol on -kafka-listen:
// a topic created over Kafka, records produced by a Kafka client are
// consumed by `floe consume`, and the other way round.
func TestDevServesKafka(t *testing.T) {
	dev := startFloe(t, "dev", "-data", t.TempDir(), "-kafka-listen", "127.0.0.1:0")
	kaddr := dev.kafkaAddr(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kaddr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kf": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "kf", 1, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 20 {
		recs = append(recs, &kgo.Record{Topic: "kf", Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "kafka %d", i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(floeBin, "consume", "kf", "-addr", dev.addr, "-print-key", "-separator", ":").CombinedOutput()
	if err != nil {
		t.Fatalf("floe consume: %v\n%s", err, out)
	}
	if got := strings.Split(strings.TrimSpace(string(out)), "\n"); len(got) != 20 || got[0] != "k0:kafka 0" || got[19] != "k19:kafka 19" {
		t.Fatalf("floe consume printed %q", out)
	}
	cmd := exec.Command(floeBin, "produce", "kf", "-addr", dev.addr)
	cmd.Stdin = strings.NewReader("from grpc\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("floe produce: %v\n%s", err, out)
	}
	var got []*kgo.Record
	for len(got) < 21 && ctx.Err() == nil {
		got = append(got, cl.PollFetches(ctx).Records()...)
	}
	if len(got) != 21 || string(got[20].Value) != "from grpc" || got[20].Offset != 20 {
		t.Fatalf("the Kafka consumer read %d records, the last %+v", len(got), got[len(got)-1])
	}
}
