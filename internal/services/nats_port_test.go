package services

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNATSPortOfAnotherServer: a nats-server whose first port is held by
// another nats-server (another test process's) must not take that server
// for its own: it comes up on another port, and the server greeting at
// its URL is itself.
func TestNATSPortOfAnotherServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	other, err := StartNATS(ctx, DefaultNATSConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop()
	port, err := strconv.Atoi(other.URL[strings.LastIndexByte(other.URL, ':')+1:])
	if err != nil {
		t.Fatal(err)
	}
	calls := takenFirst(t, &natsFreePort, port, FreePort)
	n, err := StartNATS(ctx, DefaultNATSConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	if n.URL == other.URL {
		t.Fatalf("came up on the other server's URL %s", n.URL)
	}
	served, err := natsServerName(ctx, strings.TrimPrefix(n.URL, "nats://"))
	if err != nil {
		t.Fatal(err)
	}
	if served != n.name || served == other.name {
		t.Fatalf("the server at %s is %q, want its own %q (the other is %q)", n.URL, served, n.name, other.name)
	}
	t.Logf("came up on %s after %d ports tried", n.URL, *calls)
}
