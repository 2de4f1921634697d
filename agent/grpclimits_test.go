package agent_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
)

// edgeServer serves an agent over TCP on loopback with GRPCServerOptions
// and LimitListener, as floe's commands do.
func edgeServer(t *testing.T, mutate func(*agent.Config)) (addr string, cfg agent.Config) {
	t.Helper()
	var acfg agent.Config
	s := startGuarded(t, guardedConfig{agent: func(a *agent.Config, _ *batcher.Config) {
		a.MaxRecordBytes, a.MaxRequestBytes = 16<<10, 64<<10
		mutate(a)
		acfg = *a
	}})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(agent.GRPCServerOptions(acfg, nil)...)
	s.ag.Register(gs)
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(agent.LimitListener(lis, acfg.MaxConnections, nil)) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	s.createTopic(t, "t", 1)
	return lis.Addr().String(), acfg
}

// h2conn is a raw HTTP/2 client connection.
type h2conn struct {
	t    *testing.T
	c    net.Conn
	fr   *http2.Framer
	next uint32 // next stream id
}

func dialH2(t *testing.T, addr string) *h2conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A write fails when the agent closed the connection at once (over
	// its connection limit): the reads that follow see it.
	_, _ = io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	_ = fr.WriteSettings()
	return &h2conn{t: t, c: c, fr: fr, next: 1}
}

// open starts a call of method and sends a message header declaring n
// bytes followed by sent bytes of it; it returns the stream id.
func (h *h2conn) open(method string, n, sent int) uint32 { return h.call(method, n, sent, false) }

// call is open, ending the stream after the bytes when end.
func (h *h2conn) call(method string, n, sent int, end bool) uint32 {
	h.t.Helper()
	id := h.next
	h.next += 2
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", method}, {":authority", "floe"},
		{"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
		h.t.Fatal(err)
	}
	msg := make([]byte, 5+sent)
	binary.BigEndian.PutUint32(msg[1:], uint32(n))
	for len(msg) > 0 { // frames of at most 16 KiB
		k := min(len(msg), 16<<10)
		if err := h.fr.WriteData(id, end && k == len(msg), msg[:k]); err != nil {
			h.t.Fatal(err)
		}
		msg = msg[k:]
	}
	return id
}

// statuses reads frames for up to wait and returns the grpc-status and
// grpc-message of each stream answered, answering pings and settings.
func (h *h2conn) statuses(wait time.Duration) (map[uint32][2]string, *http2.GoAwayFrame, error) {
	out := make(map[uint32][2]string)
	_ = h.c.SetReadDeadline(time.Now().Add(wait))
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			return out, nil, err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = h.fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			if st := f.PseudoValue("status"); st == "" || f.StreamEnded() {
				var code, msg string
				for _, hf := range f.Fields {
					switch hf.Name {
					case "grpc-status":
						code = hf.Value
					case "grpc-message":
						msg = hf.Value
					}
				}
				if code != "" {
					out[f.StreamID] = [2]string{code, msg}
				}
			}
		case *http2.GoAwayFrame:
			return out, f, nil
		}
	}
}

// settings waits for the server's SETTINGS: the connection was accepted.
func (h *h2conn) settings() {
	h.t.Helper()
	_ = h.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			h.t.Fatalf("waiting for the server's settings: %v", err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			_ = h.fr.WriteSettingsAck()
			return
		}
	}
}

func timeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Streams that half-send their request hold at most the agent's receive
// budget: with room for four requests on the wire (each stream takes the
// receive limit, MaxRecvMsgBytes, the agent's request limit plus margins),
// four streams declaring 190 KB and sending all but its last byte are
// held, the fifth is refused with ResourceExhausted naming
// grpc_max_recv_inflight_bytes, and a message declared over the receive
// limit is refused by its header. Before, the receive limit was four times
// the request limit and nothing bounded the streams: 32 streams of 16 MiB
// held 514 MB.
func TestHalfSentMessagesWithinReceiveBudget(t *testing.T) {
	addr, cfg := edgeServer(t, func(a *agent.Config) {
		a.GRPCMaxRecvInFlightBytes = int64(4 * a.MaxRecvMsgBytes())
	})
	recv := cfg.MaxRecvMsgBytes()
	if recv > cfg.MaxRequestBytes+(192<<10) {
		t.Fatalf("receive limit %d, far above the request limit %d", recv, cfg.MaxRequestBytes)
	}
	h := dialH2(t, addr)
	const produce = "/" + "floe.v1.LogService/Produce"
	if floev1.LogService_Produce_FullMethodName != produce {
		t.Fatalf("method %s", floev1.LogService_Produce_FullMethodName)
	}
	for range 4 {
		h.open(produce, recv, recv-1)
	}
	fifth := h.open(produce, 100, 99)
	st, _, err := h.statuses(2 * time.Second)
	if !timeout(err) {
		t.Fatalf("read: %v", err)
	}
	if len(st) != 1 || st[fifth][0] != "8" || !strings.Contains(st[fifth][1], "grpc_max_recv_inflight_bytes") {
		t.Fatalf("answers %v, want only stream %d refused with 8 (ResourceExhausted) naming the budget", st, fifth)
	}
	// The client gone, its streams give their shares back: a request is
	// answered (InvalidArgument: no records), not refused.
	h.c.Close()
	eventually(t, "the budget given back", func() bool {
		h := dialH2(t, addr)
		id := h.call(produce, 0, 0, true)
		st, _, _ := h.statuses(2 * time.Second)
		h.c.Close()
		return st[id][0] == "3"
	})
	// Over the receive limit: refused by its header, budget or not.
	h2 := dialH2(t, addr)
	big := h2.open(produce, recv+1, 0)
	st, _, _ = h2.statuses(2 * time.Second)
	if st[big][0] != "8" {
		t.Fatalf("a message declared over the receive limit: %v", st)
	}
}

// Connections past MaxConnections are closed at once; a client pinging
// more often than GRPCKeepaliveMinTime gets GOAWAY (too many pings); an
// idle connection is closed after GRPCMaxConnectionIdle; a client that
// does not answer the agent's pings is dropped after GRPCKeepaliveTime +
// GRPCKeepaliveTimeout. Before, none of these was set.
func TestConnectionLimitsAndKeepalive(t *testing.T) {
	addr, _ := edgeServer(t, func(a *agent.Config) {
		a.MaxConnections = 2
		a.GRPCMaxConnectionIdle = 500 * time.Millisecond
		a.GRPCKeepaliveTime, a.GRPCKeepaliveTimeout = time.Second, time.Second
	})
	// guardedServer's own client uses bufconn, not this listener.
	a, b := dialH2(t, addr), dialH2(t, addr)
	for _, h := range []*h2conn{a, b} {
		h.settings()
	}
	third := dialH2(t, addr)
	if _, _, err := third.statuses(2 * time.Second); err == nil || timeout(err) {
		t.Fatalf("a third connection over a limit of 2: %v, want it closed", err)
	}
	// Too many pings.
	for i := range 4 {
		if err := a.fr.WritePing(false, [8]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ga, err := a.statuses(5 * time.Second); ga == nil || ga.ErrCode != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("pings faster than the minimum: goaway %v, %v", ga, err)
	}
	// Idle: b has no calls.
	if _, ga, err := b.statuses(5 * time.Second); ga == nil {
		t.Fatalf("an idle connection: no goaway (%v)", err)
	}
	// A client with a call open that does not answer pings: the read
	// loop below answers settings but not pings.
	for _, h := range []*h2conn{a, b} { // closed after their GOAWAY
		_ = h.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			if _, err := h.fr.ReadFrame(); err != nil {
				break
			}
		}
	}
	c := dialH2(t, addr)
	c.open("/floe.v1.LogService/Produce", 1000, 10)
	_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var (
		err    error
		pinged bool
	)
	for err == nil {
		var f http2.Frame
		if f, err = c.fr.ReadFrame(); err == nil {
			if p, ok := f.(*http2.PingFrame); ok && !p.IsAck() {
				pinged = true
			}
		}
	}
	if timeout(err) || !pinged {
		t.Fatalf("a connection whose client does not answer pings: pinged %v, then %v; want it closed", pinged, err)
	}
}
