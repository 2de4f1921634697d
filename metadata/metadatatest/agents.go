package metadatatest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// testAgents: beats register agents with distinct node ids kept across
// beats, each row's gRPC address round-trips ("" for an agent that names
// none), a lapsed agent drops out, a left one at once, bad beats are
// refused.
func testAgents(t *testing.T, s metadata.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ids := func(live []metadata.AgentInfo) []string {
		var out []string
		for _, a := range live {
			out = append(out, a.ID)
		}
		return out
	}
	a := metadata.AgentInfo{ID: "a", Host: "10.0.0.1", Port: 9092, Zone: "z1", GRPCAddr: "10.0.0.1:7070"}
	b := metadata.AgentInfo{ID: "b", Host: "10.0.0.2", Port: 9092}
	la, err := s.BeatAgent(ctx, a, time.Minute)
	if err != nil || len(la) != 1 || la[0].ID != "a" || la[0].Host != a.Host || la[0].Port != 9092 || la[0].Zone != "z1" || la[0].GRPCAddr != "10.0.0.1:7070" {
		t.Fatalf("first beat: %+v %v", la, err)
	}
	lb, err := s.BeatAgent(ctx, b, 300*time.Millisecond)
	if err != nil || len(lb) != 2 || lb[0].ID != "a" || lb[1].ID != "b" || lb[0].NodeID == lb[1].NodeID {
		t.Fatalf("second agent: %+v %v", lb, err)
	}
	if lb[0].GRPCAddr != "10.0.0.1:7070" || lb[1].GRPCAddr != "" {
		t.Fatalf("gRPC addresses read back: a %q, b %q; want 10.0.0.1:7070 and none", lb[0].GRPCAddr, lb[1].GRPCAddr)
	}
	a.Host, a.GRPCAddr = "10.0.0.9", "[fd00::9]:7071"
	la2, err := s.BeatAgent(ctx, a, time.Minute)
	if err != nil || len(la2) != 2 || la2[0].NodeID != la[0].NodeID || la2[0].Host != "10.0.0.9" || la2[0].GRPCAddr != "[fd00::9]:7071" {
		t.Fatalf("a's second beat keeps its node id, takes its new addresses: %+v %v (first %+v)", la2, err, la)
	}
	if lb2, err := s.BeatAgent(ctx, b, 300*time.Millisecond); err != nil || len(lb2) != 2 || lb2[0].GRPCAddr != "[fd00::9]:7071" {
		t.Fatalf("b reads a's new gRPC address: %+v %v", lb2, err)
	}
	time.Sleep(400 * time.Millisecond) // b's ttl lapses
	if live, err := s.BeatAgent(ctx, a, time.Minute); err != nil || len(live) != 1 || live[0].ID != "a" {
		t.Fatalf("after b's ttl: %v %v", ids(live), err)
	}
	lb2, err := s.BeatAgent(ctx, b, time.Minute)
	if err != nil || len(lb2) != 2 || lb2[1].NodeID == lb[1].NodeID {
		t.Fatalf("b back after lapsing gets a new node id: %+v %v (was %d)", lb2, err, lb[1].NodeID)
	}
	if err := s.LeaveAgent(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.LeaveAgent(ctx, "nobody"); err != nil {
		t.Fatal(err)
	}
	if live, err := s.BeatAgent(ctx, a, time.Minute); err != nil || len(live) != 1 {
		t.Fatalf("after b left: %v %v", ids(live), err)
	}
	for _, bad := range []metadata.AgentInfo{{Host: "h", Port: 1}, {ID: "x", Port: 1}, {ID: "x", Host: "h"}, {ID: "x", Host: "h", Port: 70000},
		{ID: "x", Host: "h", Port: 1, GRPCAddr: "no-port"}, {ID: "x", Host: "h", Port: 1, GRPCAddr: ":7070"},
		{ID: "x", Host: "h", Port: 1, GRPCAddr: strings.Repeat("h", 253) + ":70"}} {
		if _, err := s.BeatAgent(ctx, bad, time.Minute); !errors.Is(err, metadata.ErrInvalidAgent) {
			t.Errorf("beat %+v: %v, want ErrInvalidAgent", bad, err)
		}
	}
	if _, err := s.BeatAgent(ctx, a, 0); !errors.Is(err, metadata.ErrInvalidAgent) {
		t.Errorf("ttl 0: %v, want ErrInvalidAgent", err)
	}
}
