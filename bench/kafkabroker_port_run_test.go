//go:build kafkabroker

package bench

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/floe-broker/floe/internal/services"
)

// TestKafkaBrokerPortOfAnotherBroker: a broker whose first port is held
// by another Kafka broker (another run's) must not take that broker for
// its own: it comes up on another port, and the broker at its address
// answers with its cluster id, not the other's.
func TestKafkaBrokerPortOfAnotherBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := testKafkaBrokerConfig(t, ctx)
	other, err := StartKafkaBroker(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop()
	calls := 0
	kafkaFreeAddr = func() (string, error) {
		if calls++; calls == 1 {
			return other.Addr, nil
		}
		return services.FreeAddr()
	}
	defer func() { kafkaFreeAddr = services.FreeAddr }()
	b, err := StartKafkaBroker(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	if b.Addr == other.Addr {
		t.Fatalf("came up on the other broker's address %s", b.Addr)
	}
	select {
	case <-b.proc.Exited():
		t.Fatalf("the broker exited: %v\n%s", b.proc.Err(), b.LogTail())
	default:
	}
	clusterOf := func(addr string) string {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return m.Cluster
	}
	if own, theirs := clusterOf(b.Addr), clusterOf(other.Addr); own == theirs {
		t.Fatalf("the broker at %s answers as the other's cluster %s", b.Addr, theirs)
	}
	t.Logf("came up on %s after %d ports tried", b.Addr, calls)
}

// testKafkaBrokerConfig is a small broker (256 MiB heap) from the cached
// jars.
func testKafkaBrokerConfig(t *testing.T, ctx context.Context) KafkaBrokerConfig {
	t.Helper()
	cp, err := ResolveKafkaClasspath(ctx, KafkaClasspathFile(), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultKafkaBrokerConfig()
	cfg.Classpath, cfg.HeapBytes = cp, 256<<20
	return cfg
}
