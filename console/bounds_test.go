package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/console"
	"github.com/floe-broker/floe/metadata"
)

// getBody GETs path and returns the status and the body.
func (f *fixture) getBody(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// A topic of 20,000 partitions does not make the topics answer grow with
// its partitions: the list carries counts, the topic's own page its
// partitions one page at a time.
func TestAPITopicsHugeTopicIsPaged(t *testing.T) {
	f := newFixture(t, console.Options{})
	if _, err := f.meta.CreateTopic(context.Background(), metadata.TopicSpec{Name: "huge", Partitions: 20000}); err != nil {
		t.Fatal(err)
	}
	code, body := f.getBody(t, "/console/api/topics")
	if code != 200 || len(body) > 4096 {
		t.Fatalf("topics answer: status %d, %d bytes for one topic (want at most 4 KiB)", code, len(body))
	}
	var page struct {
		PartitionCount int `json:"partitionCount"`
		Offset         int `json:"offset"`
		Partitions     []struct {
			Partition int32 `json:"partition"`
		} `json:"partitions"`
	}
	if code := f.get(t, "/console/api/topic?name=huge&offset=19990&limit=100", &page); code != 200 {
		t.Fatalf("topic page: status %d", code)
	}
	if page.PartitionCount != 20000 || page.Offset != 19990 || len(page.Partitions) != 10 || page.Partitions[0].Partition != 19990 {
		t.Fatalf("topic page %+v", page)
	}
	code, body = f.getBody(t, "/console/api/topic?name=huge")
	if code != 200 || len(body) > 128<<10 {
		t.Fatalf("default topic page: status %d, %d bytes (want at most 128 KiB)", code, len(body))
	}
	if code, _ := f.getBody(t, "/console/api/topic?name=huge&limit=100000"); code != http.StatusBadRequest {
		t.Errorf("a page over the limit: status %d, want 400", code)
	}
}

// countingTopics counts the DescribeTopic calls of HTTP requests.
type countingTopics struct {
	console.Source
	mu        sync.Mutex // protects describes
	describes []string
}

func (c *countingTopics) DescribeTopic(ctx context.Context, r *floev1.DescribeTopicRequest) (*floev1.DescribeTopicResponse, error) {
	if ctx.Value(http.ServerContextKey) != nil {
		c.mu.Lock()
		c.describes = append(c.describes, r.GetName())
		c.mu.Unlock()
	}
	return c.Source.DescribeTopic(ctx, r)
}

// A page of huge topics describes at most PassPartitions partitions (at
// least one topic); the others show the background passes' figures, or
// none yet.
func TestAPITopicsPageDescribesBoundedPartitions(t *testing.T) {
	var srcp atomic.Pointer[countingTopics]
	f := newFixture(t, console.Options{Source: func() console.Source {
		if s := srcp.Load(); s != nil {
			return s
		}
		return nil
	}, PassPartitions: 25000, SampleInterval: time.Hour})
	src := &countingTopics{Source: f.ag}
	srcp.Store(src)
	for _, name := range []string{"a", "b", "c"} {
		if _, err := f.meta.CreateTopic(context.Background(), metadata.TopicSpec{Name: name, Partitions: 20000}); err != nil {
			t.Fatal(err)
		}
	}
	var got struct {
		Total  int `json:"total"`
		Topics []struct {
			Name           string `json:"name"`
			PartitionCount int    `json:"partitionCount"`
			Pending        bool   `json:"pending"`
		} `json:"topics"`
	}
	if code := f.get(t, "/console/api/topics", &got); code != 200 || got.Total != 3 || len(got.Topics) != 3 {
		t.Fatalf("topics: %d %+v", code, got)
	}
	src.mu.Lock()
	described := append([]string(nil), src.describes...)
	src.mu.Unlock()
	if len(described) != 1 || described[0] != "a" {
		t.Errorf("a page of three topics of 20,000 partitions described %v, want only a (25,000 partitions a page)", described)
	}
	for _, tp := range got.Topics {
		if tp.PartitionCount != 20000 || tp.Pending != (tp.Name != "a") {
			t.Errorf("topic %+v", tp)
		}
	}
}

// leakyErr is a failure whose text carries internal detail, as a store's
// does; its gRPC status (what a client may see) does not.
type leakyErr struct{}

func (leakyErr) Error() string {
	return "failed to connect to `user=floe_admin database=floe_prod`: 127.0.0.1:5432: connection refused"
}
func (leakyErr) GRPCStatus() *status.Status {
	return status.New(codes.Unavailable, "metadata store unavailable")
}

type failingSource struct {
	console.Source
	err error
}

func (s failingSource) ListTopics(context.Context, *floev1.ListTopicsRequest) (*floev1.ListTopicsResponse, error) {
	return nil, s.err
}
func (s failingSource) ListGroups(context.Context, *floev1.ListGroupsRequest) (*floev1.ListGroupsResponse, error) {
	return nil, s.err
}
func (s failingSource) DescribeTopic(context.Context, *floev1.DescribeTopicRequest) (*floev1.DescribeTopicResponse, error) {
	return nil, s.err
}
func (s failingSource) DescribeGroup(context.Context, *floev1.DescribeGroupRequest) (*floev1.DescribeGroupResponse, error) {
	return nil, s.err
}

// syncBuffer is a log sink for one test.
type syncBuffer struct {
	mu sync.Mutex // protects b
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A failure's cause goes to the log, never into a body: the body has a
// generic message and a request id, which the log line carries too.
func TestAPIErrorsCarryNoCause(t *testing.T) {
	for _, err := range []error{leakyErr{}, fmt.Errorf("list: %w", leakyErr{}), errors.New(leakyErr{}.Error())} {
		var logs syncBuffer
		src := failingSource{err: err}
		get := func() console.Source { return src }
		f := newFixture(t, console.Options{Source: get, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			Iceberg: func() console.IcebergSource {
				return console.TopicTables(get, "floe", func(s string) string { return s }, 10)
			},
			IdleAfter: -1, SampleInterval: 10 * time.Millisecond})
		for _, p := range []string{"topics", "groups", "topic?name=orders", "group?name=g", "summary", "iceberg"} {
			code, body := f.getBody(t, "/console/api/"+p)
			for deadline := time.Now().Add(10 * time.Second); p == "summary" && code == 200 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond) // until a background pass failed
				code, body = f.getBody(t, "/console/api/"+p)
			}
			if code < 500 {
				t.Errorf("%s with a failing store: %d %s", p, code, body)
			}
			var e struct {
				Error     string `json:"error"`
				RequestID string `json:"requestId"`
			}
			jerr := json.Unmarshal([]byte(body), &e)
			// The body but its random request id (hex: a "5432" in it is
			// no leak; seen once in CI).
			rest := strings.Replace(body, e.RequestID, "", 1)
			for _, leak := range []string{"floe_admin", "floe_prod", "127.0.0.1", "5432", "refused"} {
				if strings.Contains(rest, leak) {
					t.Errorf("%s: body %s carries %q", p, body, leak)
				}
			}
			if jerr != nil || e.Error == "" || len(e.RequestID) < 8 {
				t.Errorf("%s: body %s, want a message and a request id (%v)", p, body, jerr)
				continue
			}
			if !strings.Contains(logs.String(), e.RequestID) || !strings.Contains(logs.String(), "floe_admin") {
				t.Errorf("%s: the log does not carry the cause with request id %s:\n%s", p, e.RequestID, logs.String())
			}
		}
	}
}

// blockingSource holds every ListTopics of an HTTP request until release
// is closed (the background passes' get an empty list).
func (b *blockingSource) ListGroups(context.Context, *floev1.ListGroupsRequest) (*floev1.ListGroupsResponse, error) {
	return &floev1.ListGroupsResponse{}, nil
}

type blockingSource struct {
	console.Source
	entered chan struct{}
	release chan struct{}
}

func (b *blockingSource) ListTopics(ctx context.Context, _ *floev1.ListTopicsRequest) (*floev1.ListTopicsResponse, error) {
	if ctx.Value(http.ServerContextKey) == nil {
		return &floev1.ListTopicsResponse{}, nil
	}
	b.entered <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &floev1.ListTopicsResponse{}, nil
}

// MaxInFlight bounds the API requests served at once: the next one is
// refused at once with 429 naming the limit, not queued.
func TestAPIInFlightBound(t *testing.T) {
	src := &blockingSource{entered: make(chan struct{}, 4), release: make(chan struct{})}
	f := newFixture(t, console.Options{Source: func() console.Source { return src }, MaxInFlight: 2, IdleAfter: -1, SampleInterval: time.Hour})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, body := f.getBody(t, "/console/api/topics"); code != 200 {
				t.Errorf("held request: %d %s", code, body)
			}
		}()
	}
	<-src.entered
	<-src.entered
	done := make(chan struct{})
	var code int
	var body string
	go func() { defer close(done); code, body = f.getBody(t, "/console/api/topics") }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		close(src.release)
		t.Fatal("a third request waited behind the two in flight instead of being refused")
	}
	close(src.release)
	wg.Wait()
	if code != http.StatusTooManyRequests || !strings.Contains(body, "max_in_flight") {
		t.Errorf("third request: %d %s, want 429 naming the limit", code, body)
	}
}

// countingSource counts the DescribeGroup calls of HTTP requests.
type countingSource struct {
	console.Source
	mu        sync.Mutex // protects describes
	describes int
}

func (c *countingSource) DescribeGroup(ctx context.Context, r *floev1.DescribeGroupRequest) (*floev1.DescribeGroupResponse, error) {
	if ctx.Value(http.ServerContextKey) != nil {
		c.mu.Lock()
		c.describes++
		c.mu.Unlock()
	}
	return c.Source.DescribeGroup(ctx, r)
}

// 1,000 member-less groups: a page of the groups list describes only the
// groups it shows; a background pass at most PassGroups, and the summary
// counts them all after enough passes, with the worst lag.
func TestGroupsWithThousandIdleGroups(t *testing.T) {
	var srcp atomic.Pointer[countingSource]
	f := newFixture(t, console.Options{Source: func() console.Source {
		if s := srcp.Load(); s != nil {
			return s
		}
		return nil
	}, IdleAfter: -1, SampleInterval: 10 * time.Millisecond, PassGroups: 100})
	src := &countingSource{Source: f.ag}
	srcp.Store(src)
	ctx := context.Background()
	orders, err := f.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "orders", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	f.commit(t, "f1", orders.ID, map[int32]int32{0: 10}, 100)
	for i := range 1000 {
		if err := f.meta.CommitOffsets(ctx, metadata.CommitOffsetsRequest{Group: fmt.Sprintf("g%04d", i),
			Offsets: []metadata.OffsetCommit{{TopicID: orders.ID, Offset: int64(min(i, 10))}}}); err != nil {
			t.Fatal(err)
		}
	}
	var got groupsJSON
	if code := f.get(t, "/console/api/groups", &got); code != 200 || got.Total != 1000 || len(got.Groups) != 50 {
		t.Fatalf("groups: %d, total %d, %d shown", code, got.Total, len(got.Groups))
	}
	src.mu.Lock()
	n := src.describes
	src.mu.Unlock()
	if n != 50 {
		t.Errorf("one page of 50 groups described %d groups", n)
	}
	var s struct {
		Groups        int `json:"groups"`
		GroupsCounted int `json:"groupsCounted"`
		WorstLag      struct {
			Group   string `json:"group"`
			Records int64  `json:"records"`
		} `json:"worstLag"`
		Records int64 `json:"records"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for s.GroupsCounted < 1000 {
		if time.Now().After(deadline) {
			t.Fatalf("summary never counted every group: %+v", s)
		}
		time.Sleep(20 * time.Millisecond)
		f.get(t, "/console/api/summary", &s)
	}
	if s.Groups != 1000 || s.WorstLag.Group != "g0000" || s.WorstLag.Records != 10 || s.Records != 10 {
		t.Errorf("summary %+v, want worst lag g0000 at 10 records", s)
	}
}
