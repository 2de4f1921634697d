package metafault_test

import (
	"context"
	"testing"
	"time"

	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/metadatatest"
	"github.com/floe-broker/floe/metadata/metafault"
	"github.com/floe-broker/floe/metadata/sqlite"
)

// TestConformanceThroughWrapper runs the store conformance suite through the
// wrapper with no faults: every method passes through.
func TestConformanceThroughWrapper(t *testing.T) {
	metadatatest.Run(t, func(t *testing.T) metadata.Store {
		inner, err := sqlite.Open(context.Background(), ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		return metafault.Wrap(inner)
	})
}

// TestAuthFaults: the auth writes share one fault group, the reads another.
func TestAuthFaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inner, err := sqlite.Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	s := metafault.Wrap(inner)
	defer s.Close()
	a := auth.ACL{Principal: "User:a", Resource: auth.ResourceTopic, Pattern: auth.PatternLiteral, Name: "t", Operation: auth.OpRead, Permission: auth.Allow}
	s.Next(metafault.OpAuthWrite, 1, metafault.Fault{Mode: metafault.Refused})
	if err := s.CreateACLs(ctx, []auth.ACL{a}); !metadata.NotApplied(err) {
		t.Fatalf("refused CreateACLs: %v", err)
	}
	s.Next(metafault.OpAuthRead, 1, metafault.Fault{Mode: metafault.Refused})
	if _, err := s.ListACLs(ctx, auth.ACLFilter{}); !metadata.NotApplied(err) {
		t.Fatalf("refused ListACLs: %v", err)
	}
	if got, err := s.ListACLs(ctx, auth.ACLFilter{}); err != nil || len(got) != 0 {
		t.Fatalf("after a refused create: %v, %v", got, err)
	}
	if s.Calls(metafault.OpAuthWrite) != 1 || s.Calls(metafault.OpAuthRead) != 2 {
		t.Errorf("calls: %d writes, %d reads", s.Calls(metafault.OpAuthWrite), s.Calls(metafault.OpAuthRead))
	}
}
