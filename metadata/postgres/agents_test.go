package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
)

// TestAgentRowOfEarlierRelease: an agent of an earlier release writes its
// row without grpc_addr (its INSERT names the old columns); the row reads
// back with no gRPC address and its id as written.
func TestAgentRowOfEarlierRelease(t *testing.T) {
	s := open(t, testenv.Postgres(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `INSERT INTO agents (id, host, port, zone, expires_at)
		VALUES ('old grpc=10.0.0.1:7070', '10.0.0.1', 9092, '', now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	live, err := s.BeatAgent(ctx, metadata.AgentInfo{ID: "new", Host: "10.0.0.2", Port: 9092, GRPCAddr: "10.0.0.2:7070"}, time.Minute)
	if err != nil || len(live) != 2 {
		t.Fatalf("beat: %+v %v", live, err)
	}
	if old := live[0]; old.ID != "old grpc=10.0.0.1:7070" || old.GRPCAddr != "" {
		t.Fatalf("the earlier release's row reads %+v, want its id as is and no gRPC address", old)
	}
	if live[1].GRPCAddr != "10.0.0.2:7070" {
		t.Fatalf("the new row reads %+v", live[1])
	}
}
