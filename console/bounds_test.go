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
		f := newFixture(t, console.Options{Source: func() console.Source { return src }, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			IdleAfter: -1, SampleInterval: time.Hour})
		for _, p := range []string{"topics", "groups", "topic?name=orders", "group?name=g", "summary", "iceberg"} {
			code, body := f.getBody(t, "/console/api/"+p)
			if code < 500 {
				t.Errorf("%s with a failing store: %d %s", p, code, body)
			}
			for _, leak := range []string{"floe_admin", "floe_prod", "127.0.0.1", "5432", "refused"} {
				if strings.Contains(body, leak) {
					t.Errorf("%s: body %s carries %q", p, body, leak)
				}
			}
			var e struct {
				Error     string `json:"error"`
				RequestID string `json:"requestId"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" || len(e.RequestID) < 8 {
				t.Errorf("%s: body %s, want a message and a request id (%v)", p, body, err)
				continue
			}
			if !strings.Contains(logs.String(), e.RequestID) || !strings.Contains(logs.String(), "floe_admin") {
				t.Errorf("%s: the log does not carry the cause with request id %s:\n%s", p, e.RequestID, logs.String())
			}
		}
	}
}
