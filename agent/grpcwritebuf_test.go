package agent_test

import (
	"runtime"
	"testing"

	"golang.org/x/net/http2"

	"github.com/floe-broker/floe/agent"
)

// A connection's gRPC write buffer (256 KiB) is taken from a pool while
// the connection writes and given back when it goes idle
// (grpc.SharedWriteBuffer): idle connections do not keep one each (before,
// every connection held its own for its life: 1,024 connections, 256 MiB).
// Measured as the heap that idle connections, each answered by the agent,
// still hold after a collection.
func TestIdleConnectionsHoldNoWriteBuffer(t *testing.T) {
	addr, _ := edgeServer(t, func(*agent.Config) {})
	const conns = 48
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range conns {
		h := dialH2(t, addr)
		for { // the agent's SETTINGS: its transport is up and has written
			f, err := h.fr.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
				break
			}
		}
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / conns
	if per >= 128<<10 {
		t.Fatalf("each idle connection holds %d KiB of heap; a write buffer of its own is 256 KiB", per>>10)
	}
	t.Logf("%d bytes of heap per idle connection", per)
}
