package kafka_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/kafka"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// A follower's JoinGroup answer is lost (the connection closes as the
// answer would be written); franz-go asks again with its member id and
// the same subscription, and is answered with the generation it missed
// (Kafka's coordinator does the same: doExistingMemberJoinGroup). The
// leader, with the eager range assignor, has its partitions revoked once
// for the second member's arrival and never again. Before, the repeated
// join started another rebalance.
func TestLostJoinAnswerNoRebalance(t *testing.T) {
	meta, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	var dropped atomic.Int64
	wrap := func(l net.Listener) net.Listener {
		return &answerDropper{Listener: l, drop: func(key, version int16, body []byte) bool {
			if key != 11 || dropped.Load() > 0 {
				return false
			}
			r := kmsg.JoinGroupResponse{Version: version}
			if err := r.ReadFrom(body); err != nil || r.ErrorCode != 0 || r.Generation < 2 || r.MemberID == r.LeaderID {
				return false
			}
			dropped.Add(1)
			return true
		}}
	}
	b := startBrokerWith(t, meta, objectstore.NewMemory(), nil, agent.Options{}, kafka.Options{}, wrap)
	admin := newClient(t, b)
	const topic, group = "lost-join", "lost-join-group"
	createTopic(t, admin, topic, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	start := func(revoked *atomic.Int64) *atomic.Int64 {
		return pollInBackground(t, ctx, &wg, eagerMember(b, group, topic, kgo.SessionTimeout(10*time.Second),
			kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) { revoked.Add(1) }))...)
	}
	stable := func() bool {
		d := describeGroup(t, admin, group)
		return d.State == "Stable" && len(d.Members) == 2 && assignedAll(t, d, 4)
	}
	var revokedA, revokedB atomic.Int64
	recsA := start(&revokedA)
	produceAll(t, admin, sentRecords(topic, 40))
	waitFor(t, "the first member consumes", func() bool { return recsA.Load() >= 40 })
	recsB := start(&revokedB)
	waitFor(t, "a follower's join answer dropped", func() bool { return dropped.Load() == 1 })
	waitFor(t, "a stable group of two", stable)
	produceAll(t, admin, sentRecords(topic, 40))
	waitFor(t, "both consume", func() bool { return recsA.Load()+recsB.Load() >= 80 && recsB.Load() > 0 })
	time.Sleep(time.Second) // a rebalance the repeated join started would show by now
	if !stable() {
		t.Fatal("the group is not stable a second after the lost answer")
	}
	// The second member's arrival revokes the first one's partitions once
	// (eager); the repeated join must not do it again.
	if n := revokedA.Load() + revokedB.Load(); n != 1 {
		t.Fatalf("partitions revoked %d times (first %d, second %d), want once: the repeated join rebalanced the group", n, revokedA.Load(), revokedB.Load())
	}
}

// eagerMember is the options of a franz-go member of group consuming topic
// from its start with the eager range assignor (every rebalance revokes
// all its partitions), quick heartbeats and retries, then more.
func eagerMember(b *broker, group, topic string, more ...kgo.Opt) []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(b.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Balancers(kgo.RangeBalancer()),
		kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}, more...)
}

// pollInBackground starts a franz-go client with opts that polls until
// ctx ends (wg waits for it) and counts the records it gets.
func pollInBackground(t *testing.T, ctx context.Context, wg *sync.WaitGroup, opts ...kgo.Opt) *atomic.Int64 {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	var recs atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			recs.Add(int64(len(fs.Records())))
		}
	}()
	return &recs
}

// answerDropper is a listener whose connections close instead of writing
// a response that drop chooses (by API key, version and the body after
// the response header): the request was served, its answer is lost.
type answerDropper struct {
	net.Listener
	drop func(key, version int16, body []byte) bool
}

func (l *answerDropper) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &dropConn{Conn: c, drop: l.drop, reqs: map[int32][2]int16{}}, nil
}

// dropConn follows the request frames it reads (key, version and
// correlation id of each) and holds each response frame until it is
// whole, then writes it or closes the connection.
type dropConn struct {
	net.Conn
	drop func(key, version int16, body []byte) bool

	mu   sync.Mutex         // protects what follows
	reqs map[int32][2]int16 // correlation id -> key, version
	head []byte             // the current request frame's first 12 bytes
	skip int                // bytes of the current request frame left after them
	out  []byte             // a response frame not yet whole
}

var errAnswerDropped = errors.New("answer dropped")

func (c *dropConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	for b := p[:n]; len(b) > 0; {
		if c.skip > 0 {
			k := min(c.skip, len(b))
			c.skip, b = c.skip-k, b[k:]
			continue
		}
		k := min(12-len(c.head), len(b))
		c.head, b = append(c.head, b[:k]...), b[k:]
		if len(c.head) == 12 {
			size := int(binary.BigEndian.Uint32(c.head))
			key, ver := int16(binary.BigEndian.Uint16(c.head[4:])), int16(binary.BigEndian.Uint16(c.head[6:]))
			c.reqs[int32(binary.BigEndian.Uint32(c.head[8:]))] = [2]int16{key, ver}
			c.skip, c.head = size-8, c.head[:0]
		}
	}
	return n, err
}

func (c *dropConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out = append(c.out, p...)
	for len(c.out) >= 4 {
		size := int(binary.BigEndian.Uint32(c.out))
		if len(c.out) < 4+size {
			break
		}
		frame := c.out[:4+size]
		corr := int32(binary.BigEndian.Uint32(frame[4:]))
		req, ok := c.reqs[corr]
		delete(c.reqs, corr)
		body := frame[8:]
		if ok && req[0] == 11 && req[1] >= 6 && len(body) > 0 {
			body = body[1:] // the flexible header's empty tagged fields
		}
		if ok && c.drop(req[0], req[1], body) {
			c.Conn.Close()
			return 0, errAnswerDropped
		}
		if _, err := c.Conn.Write(frame); err != nil {
			return 0, err
		}
		c.out = c.out[4+size:]
	}
	return len(p), nil
}
