package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/console"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

func TestMain(m *testing.M) { testenv.Main(m, testenv.VerifyNoLeaks()) }

// fixture is an agent on SQLite and a memory store, and a console on it.
type fixture struct {
	meta metadata.Store
	ag   *agent.Agent
	srv  *httptest.Server
}

func newFixture(t *testing.T, opts console.Options) *fixture {
	t.Helper()
	ctx := context.Background()
	meta, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() })
	store := objectstore.NewMemory()
	b, err := batcher.New(batcher.DefaultConfig(), store, meta, batcher.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	ag, err := agent.New(agent.DefaultConfig(), meta, store, b, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{meta: meta, ag: ag}
	if opts.Source == nil {
		opts.Source = func() console.Source { return ag }
	}
	c := console.New(opts)
	f.srv = httptest.NewServer(c)
	t.Cleanup(func() { f.srv.Close(); c.Close() })
	return f
}

// commit commits a file holding count records in each of the partitions
// given (topic id, partition), batchBytes bytes per batch.
func (f *fixture) commit(t *testing.T, key string, topicID int64, count map[int32]int32, batchBytes int64) {
	t.Helper()
	fc := metadata.FileCommit{Key: key}
	for p, n := range count {
		fc.Batches = append(fc.Batches, metadata.BatchCommit{TopicID: topicID, Partition: p, ByteOffset: fc.Size, ByteLength: batchBytes,
			RecordCount: n, MaxTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: metadata.NoSequence})
		fc.Size += batchBytes
	}
	res, err := f.meta.CommitFile(context.Background(), fc)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
}

func (f *fixture) get(t *testing.T, path string, v any) int {
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
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
	return resp.StatusCode
}

type topicJSON struct {
	Name           string            `json:"name"`
	ID             int64             `json:"id"`
	Records        int64             `json:"records"`
	PartitionCount int               `json:"partitionCount"`
	Config         map[string]string `json:"config"`
	Partitions     []struct {
		Partition      int32 `json:"partition"`
		LogStartOffset int64 `json:"logStartOffset"`
		HighWatermark  int64 `json:"highWatermark"`
	} `json:"partitions"`
	Storage *struct {
		LiveBytes int64 `json:"liveBytes"`
		Batches   int64 `json:"batches"`
	} `json:"storage"`
}

type topicsJSON struct {
	Total  int         `json:"total"`
	Offset int         `json:"offset"`
	Limit  int         `json:"limit"`
	Topics []topicJSON `json:"topics"`
}

// The topics endpoint shows every partition's log start and high
// watermark as the store has them, and the bytes stored.
func TestAPITopics(t *testing.T) {
	f := newFixture(t, console.Options{})
	ctx := context.Background()
	orders, err := f.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "orders", Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "empty", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	f.commit(t, "f1", orders.ID, map[int32]int32{0: 5, 2: 7}, 100)
	f.commit(t, "f2", orders.ID, map[int32]int32{0: 3}, 50)
	if _, err := f.meta.DeleteRecords(ctx, orders.ID, 0, 5); err != nil {
		t.Fatal(err)
	}

	var got topicsJSON
	if code := f.get(t, "/console/api/topics", &got); code != 200 {
		t.Fatalf("status %d", code)
	}
	if got.Total != 2 || len(got.Topics) != 2 || got.Topics[0].Name != "empty" || got.Topics[1].Name != "orders" || got.Topics[1].PartitionCount != 3 {
		t.Fatalf("topics %+v", got)
	}
	if got.Topics[1].Records != 3+7 || got.Topics[1].Storage == nil || got.Topics[1].Storage.LiveBytes != 150 {
		t.Errorf("orders in the list: %+v", got.Topics[1])
	}
	var o topicJSON
	if code := f.get(t, "/console/api/topic?name=orders", &o); code != 200 {
		t.Fatalf("topic page: status %d", code)
	}
	want := []struct{ start, hw int64 }{{5, 8}, {0, 0}, {0, 7}}
	if len(o.Partitions) != 3 {
		t.Fatalf("partitions %+v", o.Partitions)
	}
	for i, w := range want {
		p := o.Partitions[i]
		if p.Partition != int32(i) || p.LogStartOffset != w.start || p.HighWatermark != w.hw {
			t.Errorf("partition %d: %+v, want log start %d, high watermark %d", i, p, w.start, w.hw)
		}
	}
	if o.Records != 3+7 || o.ID != orders.ID {
		t.Errorf("records %d id %d", o.Records, o.ID)
	}
	if o.Storage == nil || o.Storage.LiveBytes != 50+100 || o.Storage.Batches != 3 {
		t.Errorf("storage %+v, want 150 live bytes (the batch below log start is dead) in 3 batches", o.Storage)
	}
}

type groupJSON struct {
	Name           string `json:"name"`
	State          string `json:"state"`
	LagRecords     int64  `json:"lagRecords"`
	MemberCount    int    `json:"memberCount"`
	PartitionCount int    `json:"partitionCount"`
	Members        []struct {
		ID       string   `json:"id"`
		Assigned []string `json:"assigned"`
	} `json:"members"`
	Partitions []struct {
		Topic      string `json:"topic"`
		Partition  int32  `json:"partition"`
		Committed  int64  `json:"committed"`
		LagRecords int64  `json:"lagRecords"`
		LagBytes   int64  `json:"lagBytes"`
		Owner      string `json:"owner"`
	} `json:"partitions"`
}

type groupsJSON struct {
	Total  int         `json:"total"`
	Groups []groupJSON `json:"groups"`
}

// The groups endpoint shows members with their partitions and each
// partition's committed offset and lag; names are returned as given (the
// page escapes them).
func TestAPIGroups(t *testing.T) {
	f := newFixture(t, console.Options{})
	ctx := context.Background()
	orders, err := f.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "orders", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	f.commit(t, "f1", orders.ID, map[int32]int32{0: 10, 1: 4}, 100)
	const live = `live<script>alert("x")</script>`
	hb, err := f.meta.Heartbeat(ctx, metadata.HeartbeatRequest{Group: live, MemberID: "m1", MemberEpoch: metadata.JoinEpoch, Subscription: []string{"orders"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(hb.Assigned) != 2 {
		t.Fatalf("assigned %+v", hb)
	}
	if err := f.meta.CommitOffsets(ctx, metadata.CommitOffsetsRequest{Group: live, MemberID: "m1", MemberEpoch: hb.MemberEpoch,
		Offsets: []metadata.OffsetCommit{{TopicID: orders.ID, Partition: 0, Offset: 6}, {TopicID: orders.ID, Partition: 1, Offset: 4}}}); err != nil {
		t.Fatal(err)
	}
	if err := f.meta.CommitOffsets(ctx, metadata.CommitOffsetsRequest{Group: "idle",
		Offsets: []metadata.OffsetCommit{{TopicID: orders.ID, Partition: 1, Offset: 1}}}); err != nil {
		t.Fatal(err)
	}

	var got groupsJSON
	if code := f.get(t, "/console/api/groups", &got); code != 200 {
		t.Fatalf("status %d", code)
	}
	if got.Total != 2 || len(got.Groups) != 2 || got.Groups[0].MemberCount != 0 || got.Groups[1].MemberCount != 1 ||
		got.Groups[0].LagRecords != 3 || got.Groups[1].LagRecords != 4 || got.Groups[1].PartitionCount != 2 {
		t.Fatalf("groups %+v", got)
	}
	var idle, lg groupJSON
	for _, g := range []struct {
		name string
		v    *groupJSON
	}{{"idle", &idle}, {live, &lg}} {
		if code := f.get(t, "/console/api/group?name="+url.QueryEscape(g.name), g.v); code != 200 {
			t.Fatalf("group %q: status %d", g.name, code)
		}
	}
	if idle.Name != "idle" || idle.State != "empty" || len(idle.Members) != 0 || idle.LagRecords != 3 ||
		len(idle.Partitions) != 1 || idle.Partitions[0].Committed != 1 || idle.Partitions[0].LagRecords != 3 {
		t.Errorf("idle group %+v", idle)
	}
	if lg.Name != live || len(lg.Members) != 1 || lg.Members[0].ID != "m1" || strings.Join(lg.Members[0].Assigned, ",") != "orders/0,orders/1" {
		t.Errorf("live group %+v", lg)
	}
	if lg.LagRecords != 4 || len(lg.Partitions) != 2 || lg.Partitions[0].LagRecords != 4 || lg.Partitions[1].LagRecords != 0 ||
		lg.Partitions[0].Owner != "m1" || lg.Partitions[0].LagBytes != 100 {
		t.Errorf("live group lag %+v", lg.Partitions)
	}
}

type lagJSON struct {
	IntervalMs int64 `json:"intervalMs"`
	Capacity   int   `json:"capacity"`
	Groups     []struct {
		Group  string `json:"group"`
		Points []struct {
			T   int64 `json:"t"`
			Lag int64 `json:"lag"`
		} `json:"points"`
	} `json:"groups"`
}

// The console samples each group's lag in the background, keeps at most
// History samples per group, oldest first, and drops deleted groups.
func TestAPILagHistory(t *testing.T) {
	f := newFixture(t, console.Options{SampleInterval: 10 * time.Millisecond, History: 4})
	ctx := context.Background()
	orders, err := f.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "orders", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	f.commit(t, "f1", orders.ID, map[int32]int32{0: 10}, 100)
	for _, g := range []string{"a", "b"} {
		if err := f.meta.CommitOffsets(ctx, metadata.CommitOffsetsRequest{Group: g, Offsets: []metadata.OffsetCommit{{TopicID: orders.ID, Offset: 2}}}); err != nil {
			t.Fatal(err)
		}
	}
	// Wait for a full ring of lag 8, then move b and wait for its lag 3.
	waitLag(t, f, func(l lagJSON) bool { return len(l.Groups) == 2 && len(l.Groups[1].Points) == 4 })
	if err := f.meta.CommitOffsets(ctx, metadata.CommitOffsetsRequest{Group: "b", Offsets: []metadata.OffsetCommit{{TopicID: orders.ID, Offset: 7}}}); err != nil {
		t.Fatal(err)
	}
	l := waitLag(t, f, func(l lagJSON) bool {
		return len(l.Groups) == 2 && l.Groups[1].Points[3].Lag == 3
	})
	if l.IntervalMs != 10 || l.Capacity != 4 || l.Groups[0].Group != "a" || l.Groups[1].Group != "b" {
		t.Fatalf("lag %+v", l)
	}
	for _, s := range l.Groups {
		if len(s.Points) > 4 {
			t.Errorf("group %s keeps %d samples, more than 4", s.Group, len(s.Points))
		}
		for i := 1; i < len(s.Points); i++ {
			if s.Points[i].T < s.Points[i-1].T {
				t.Errorf("group %s: samples out of order: %+v", s.Group, s.Points)
			}
		}
		if s.Group == "a" && s.Points[len(s.Points)-1].Lag != 8 {
			t.Errorf("group a: %+v, want lag 8", s.Points)
		}
	}
	if err := f.meta.DeleteGroup(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	waitLag(t, f, func(l lagJSON) bool { return len(l.Groups) == 1 && l.Groups[0].Group == "b" })
}

func waitLag(t *testing.T, f *fixture, ok func(lagJSON) bool) lagJSON {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var l lagJSON
		if code := f.get(t, "/console/api/lag", &l); code != 200 {
			t.Fatalf("status %d", code)
		}
		if ok(l) {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag history never got there: %+v", l)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type fakeIceberg []console.IcebergTable

func (f fakeIceberg) IcebergTables(context.Context) ([]console.IcebergTable, error) { return f, nil }

// Without an Iceberg source the console says tables will appear; with one
// it lists them.
func TestAPIIceberg(t *testing.T) {
	var none struct {
		Available bool              `json:"available"`
		Message   string            `json:"message"`
		Tables    []json.RawMessage `json:"tables"`
	}
	f := newFixture(t, console.Options{})
	if code := f.get(t, "/console/api/iceberg", &none); code != 200 || none.Available || !strings.Contains(none.Message, "once the compactor writes them") || none.Tables == nil {
		t.Errorf("without a source: %d %+v", code, none)
	}
	src := fakeIceberg{{Topic: "orders", Namespace: "floe", Table: "orders", SnapshotID: 42, CompactionLagRecords: 7}}
	f = newFixture(t, console.Options{Iceberg: func() console.IcebergSource { return src }})
	var got struct {
		Available bool                   `json:"available"`
		Tables    []console.IcebergTable `json:"tables"`
	}
	if code := f.get(t, "/console/api/iceberg", &got); code != 200 || !got.Available || len(got.Tables) != 1 || got.Tables[0].SnapshotID != 42 || got.Tables[0].CompactionLagRecords != 7 {
		t.Errorf("with a source: %d %+v", code, got)
	}
}

// The console serves its page and assets with a strict CSP, refuses
// writes, and answers 503 while the agent starts.
func TestServing(t *testing.T) {
	f := newFixture(t, console.Options{})
	for path, want := range map[string]string{
		"/console/":               `<script src="/console/static/app.js"`,
		"/console/static/app.js":  "textContent",
		"/console/static/app.css": "font",
	} {
		resp, err := http.Get(f.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, body without %q", path, resp.StatusCode, want)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("GET %s: CSP %q", path, csp)
		}
		if strings.Contains(string(body), "http://") || strings.Contains(string(body), "https://") {
			if !strings.Contains(string(body), "http://www.w3.org/2000/svg") || strings.Count(string(body), "://") != 1 {
				t.Errorf("GET %s names an external address", path)
			}
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, f.srv.URL+"/console/api/topics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, resp.StatusCode)
		}
	}
	for _, p := range []string{"/console/api/nope", "/console/static/", "/console/other"} {
		if code := f.get(t, p, nil); code != 404 {
			t.Errorf("GET %s: %d, want 404", p, code)
		}
	}

	starting := newFixture(t, console.Options{Source: func() console.Source { return nil }})
	for _, p := range []string{"topics", "groups", "summary", "topic?name=x", "group?name=x"} {
		var e struct{ Error string }
		if code := starting.get(t, "/console/api/"+p, &e); code != http.StatusServiceUnavailable || !strings.Contains(e.Error, "starting") {
			t.Errorf("%s while starting: %d %q", p, code, e.Error)
		}
	}
}

// The topics list is paged and searchable: total counts the matches,
// offset and limit pick a page; a bad page is refused naming the field.
func TestAPITopicsPagedAndSearched(t *testing.T) {
	f := newFixture(t, console.Options{})
	for i := range 12 {
		name := fmt.Sprintf("t%02d", i)
		if i%3 == 0 {
			name = fmt.Sprintf("Orders-%02d", i)
		}
		if _, err := f.meta.CreateTopic(context.Background(), metadata.TopicSpec{Name: name, Partitions: 1}); err != nil {
			t.Fatal(err)
		}
	}
	var got topicsJSON
	f.get(t, "/console/api/topics?offset=5&limit=3", &got)
	if got.Total != 12 || got.Offset != 5 || got.Limit != 3 || len(got.Topics) != 3 {
		t.Errorf("page 5+3: %+v", got)
	}
	f.get(t, "/console/api/topics?q=orders&limit=3", &got)
	if got.Total != 4 || len(got.Topics) != 3 || got.Topics[0].Name != "Orders-00" {
		t.Errorf("search orders: %+v", got)
	}
	f.get(t, "/console/api/topics?q=orders&offset=3&limit=3", &got)
	if got.Total != 4 || len(got.Topics) != 1 || got.Topics[0].Name != "Orders-09" {
		t.Errorf("search orders, second page: %+v", got)
	}
	f.get(t, "/console/api/topics?offset=100", &got)
	if got.Total != 12 || len(got.Topics) != 0 {
		t.Errorf("past the end: %+v", got)
	}
	for _, q := range []string{"limit=501", "limit=-1", "offset=x", "limit=1e3"} {
		var e struct{ Error string }
		if code := f.get(t, "/console/api/topics?"+q, &e); code != http.StatusBadRequest || !strings.Contains(e.Error, strings.Split(q, "=")[0]) {
			t.Errorf("%s: %d %q, want 400 naming the field", q, code, e.Error)
		}
	}
}

// The console stops sampling IdleAfter after its API was last read, and
// resumes when it is read again.
func TestLagSamplingIdles(t *testing.T) {
	f := newFixture(t, console.Options{SampleInterval: 10 * time.Millisecond, History: 1000, IdleAfter: 50 * time.Millisecond})
	ctx := context.Background()
	orders, err := f.meta.CreateTopic(ctx, metadata.TopicSpec{Name: "orders", Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.meta.CommitOffsets(ctx, metadata.CommitOffsetsRequest{Group: "g", Offsets: []metadata.OffsetCommit{{TopicID: orders.ID, Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	first := waitLag(t, f, func(l lagJSON) bool { return len(l.Groups) == 1 })
	time.Sleep(400 * time.Millisecond) // 40 intervals, 35 of them idle
	var then lagJSON
	f.get(t, "/console/api/lag", &then)
	if n := len(then.Groups[0].Points) - len(first.Groups[0].Points); n > 15 {
		t.Errorf("%d samples taken while nobody read the API for 350 ms, want at most 6 or so", n)
	}
	waitLag(t, f, func(l lagJSON) bool { return len(l.Groups[0].Points) > len(then.Groups[0].Points) })
}

// smallPages answers ListTopics two topics a page, as an agent does past
// its page size.
type smallPages struct{ *agent.Agent }

func (s smallPages) ListTopics(ctx context.Context, req *floev1.ListTopicsRequest) (*floev1.ListTopicsResponse, error) {
	return s.Agent.ListTopics(ctx, &floev1.ListTopicsRequest{PageToken: req.GetPageToken(), PageSize: 2})
}

// The console follows the agent's ListTopics pages: it saw only the first
// page (1,000 topics) when ListTopics became paged.
func TestAPITopicsFollowsListTopicsPages(t *testing.T) {
	var ag atomic.Pointer[agent.Agent] // set once newFixture made it
	f := newFixture(t, console.Options{Source: func() console.Source {
		if a := ag.Load(); a != nil {
			return smallPages{a}
		}
		return nil
	}})
	ag.Store(f.ag)
	for i := range 5 {
		if _, err := f.meta.CreateTopic(context.Background(), metadata.TopicSpec{Name: fmt.Sprintf("p%d", i), Partitions: 1}); err != nil {
			t.Fatal(err)
		}
	}
	var got topicsJSON
	f.get(t, "/console/api/topics", &got)
	if got.Total != 5 || len(got.Topics) != 5 {
		t.Errorf("topics over 3 pages of ListTopics: total %d, %d shown; want 5", got.Total, len(got.Topics))
	}
}
