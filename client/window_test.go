package client_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/floe-broker/floe/client"
)

// The client's connection opens with its receive windows: the stream
// window StreamWindowBytes in its SETTINGS and the connection's raised to
// ConnWindowBytes by a WINDOW_UPDATE on stream 0 (gRPC's defaults, 64 KiB
// grown by its BDP estimate, kept a catch-up read's answers in 16 KiB
// steps of window updates). Read from the first frames a client sends to
// a listener that only reads.
func TestDialSetsReceiveWindows(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	c, err := client.Dial(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { _, _ = c.ListTopics(ctx, 1) }() // makes the client connect; fails once the test ends

	conn, err := lis.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	r := bufio.NewReader(conn)
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(r, preface); err != nil || string(preface) != http2.ClientPreface {
		t.Fatalf("preface %q: %v", preface, err)
	}
	fr := http2.NewFramer(io.Discard, r)
	var stream uint32
	var connWindow int64 = 65535 // HTTP/2's initial connection window
	sawSettings, sawConnUpdate := false, false
	for !sawSettings || !sawConnUpdate {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("after settings %v, connection update %v: %v", sawSettings, sawConnUpdate, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			v, ok := f.Value(http2.SettingInitialWindowSize)
			if !ok {
				t.Fatal("SETTINGS without an initial window size")
			}
			stream, sawSettings = v, true
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				connWindow += int64(f.Increment)
				sawConnUpdate = true
			}
		}
	}
	if stream != client.StreamWindowBytes {
		t.Errorf("stream window %d, want StreamWindowBytes %d", stream, client.StreamWindowBytes)
	}
	if connWindow != client.ConnWindowBytes {
		t.Errorf("connection window %d, want ConnWindowBytes %d", connWindow, client.ConnWindowBytes)
	}
}
