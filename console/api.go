package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// The JSON of /console/api/. Field names are the page's (app.js).

type partitionView struct {
	Partition      int32 `json:"partition"`
	LogStartOffset int64 `json:"logStartOffset"`
	HighWatermark  int64 `json:"highWatermark"`
}

type storageView struct {
	Files     int64 `json:"files"`
	FileBytes int64 `json:"fileBytes"`
	LiveBytes int64 `json:"liveBytes"`
	DeadBytes int64 `json:"deadBytes"`
	Batches   int64 `json:"batches"`
}

type icebergView struct {
	Enabled bool  `json:"enabled"`
	LagMs   int64 `json:"lagMs"`
	// TrailingRecords: records of the log not in the table yet.
	TrailingRecords int64 `json:"trailingRecords"`
}

// topicView is one topic without its partitions (the topics list).
type topicView struct {
	Name           string            `json:"name"`
	ID             int64             `json:"id"`
	Config         map[string]string `json:"config"`
	CreatedAtMs    int64             `json:"createdAtMs"`
	PartitionCount int               `json:"partitionCount"`
	// Records sums high watermark - log start over the partitions.
	Records int64 `json:"records"`
	// Storage is absent when the agent could not read it.
	Storage *storageView `json:"storage"`
	Iceberg icebergView  `json:"iceberg"`
	// SampledAtMs, in a list: the figures (records, storage, iceberg) are
	// the background pass's of then, not described for this answer; 0:
	// described now. Pending: not described yet at all (figures zero).
	SampledAtMs int64 `json:"sampledAtMs,omitempty"`
	Pending     bool  `json:"pending,omitempty"`
}

// topicPage is one topic with a page of its partitions.
type topicPage struct {
	topicView
	Offset     int             `json:"offset"`
	Limit      int             `json:"limit"`
	Partitions []partitionView `json:"partitions"`
}

type memberView struct {
	ID              string   `json:"id"`
	Epoch           int32    `json:"epoch"`
	Subscription    []string `json:"subscription"`
	Assigned        []string `json:"assigned"` // "topic/partition"
	LastHeartbeatMs int64    `json:"lastHeartbeatMs"`
}

type lagView struct {
	Topic          string `json:"topic"`
	Partition      int32  `json:"partition"`
	Committed      int64  `json:"committed"`
	HighWatermark  int64  `json:"highWatermark"`
	LogStartOffset int64  `json:"logStartOffset"`
	LagRecords     int64  `json:"lagRecords"`
	LagBytes       int64  `json:"lagBytes"`
	LagMs          int64  `json:"lagMs"`
	Owner          string `json:"owner"`
}

// groupView is one group's totals (the groups list).
type groupView struct {
	Name           string `json:"name"`
	State          string `json:"state"`
	GroupEpoch     int32  `json:"groupEpoch"`
	MemberCount    int    `json:"memberCount"`
	PartitionCount int    `json:"partitionCount"`
	LagRecords     int64  `json:"lagRecords"`
	LagBytes       int64  `json:"lagBytes"`
	MaxLagMs       int64  `json:"maxLagMs"`
}

// groupPage is one group with its members and a page of its partitions.
type groupPage struct {
	groupView
	Members    []memberView `json:"members"`
	Offset     int          `json:"offset"`
	Limit      int          `json:"limit"`
	Partitions []lagView    `json:"partitions"`
}

type lagPoint struct {
	AtMs       int64 `json:"t"`
	LagRecords int64 `json:"lag"`
}

type lagSeries struct {
	Group  string     `json:"group"`
	Points []lagPoint `json:"points"`
}

type lagResponse struct {
	IntervalMs int64       `json:"intervalMs"`
	Capacity   int         `json:"capacity"`
	Groups     []lagSeries `json:"groups"`
}

type icebergResponse struct {
	// Available is false until something provides the tables.
	Available bool           `json:"available"`
	Message   string         `json:"message,omitempty"`
	Tables    []IcebergTable `json:"tables"`
	// Total, Offset, Limit: the page (of topics, with an
	// IcebergTopicsSource; of tables otherwise).
	Total  int `json:"total"`
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
}

// errStarting answers while the agent waits for its stores.
var errStarting = status.Error(codes.Unavailable, "console: agent starting")

// page is a request's search and page: q (a substring of the name, any
// case), offset and limit.
type page struct {
	q             string
	offset, limit int
}

// pageOf reads q, offset and limit; limit defaults to def, at most max.
func pageOf(r *http.Request, def, max int) (page, error) {
	p := page{q: strings.ToLower(r.URL.Query().Get("q")), limit: def}
	for _, f := range []struct {
		name string
		v    *int
		max  int
	}{{"offset", &p.offset, 1 << 31}, {"limit", &p.limit, max}} {
		s := r.URL.Query().Get(f.name)
		if s == "" {
			continue
		}
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n < 0 || n > f.max || fmt.Sprint(n) != s {
			return page{}, fmt.Errorf("%s: %q must be a whole number from 0 to %d", f.name, s, f.max)
		}
		*f.v = n
	}
	return p, nil
}

// window returns the [from, to) of a page over n items.
func (p page) window(n int) (int, int) {
	from := min(p.offset, n)
	return from, min(n, from+p.limit)
}

func (p page) matches(name string) bool {
	return p.q == "" || strings.Contains(strings.ToLower(name), p.q)
}

// apiTopics lists a page of topics. It describes them one by one, at
// most PassPartitions partitions together (at least one topic): the
// topics past that show the figures of the background passes, so that a
// page of huge topics costs one pass's work, not twenty.
// open starts an API request: its page (400 if malformed), the agent
// (503 while it starts) and a context bounded by RequestTimeout; ok is
// false once the request is answered.
func (c *Console) open(w http.ResponseWriter, r *http.Request, def, max int) (pg page, ctx context.Context, cancel context.CancelFunc, src Source, ok bool) {
	pg, err := pageOf(r, def, max)
	if err != nil {
		c.replyError(w, http.StatusBadRequest, err.Error(), nil)
		return pg, nil, nil, nil, false
	}
	if src = c.source(); src == nil {
		c.fail(w, errStarting)
		return pg, nil, nil, nil, false
	}
	ctx, cancel = context.WithTimeout(r.Context(), c.opts.RequestTimeout)
	return pg, ctx, cancel, src, true
}

func (c *Console) apiTopics(w http.ResponseWriter, r *http.Request) {
	pg, ctx, cancel, src, ok := c.open(w, r, defaultListLimit, maxListLimit)
	if !ok {
		return
	}
	defer cancel()
	list, err := listTopics(ctx, src)
	if err != nil {
		c.fail(w, err)
		return
	}
	var matched []*floev1.Topic
	for _, t := range list.GetTopics() {
		if pg.matches(t.GetName()) {
			matched = append(matched, t)
		}
	}
	list = nil
	from, to := pg.window(len(matched))
	pageTopics := make(map[string]*floev1.Topic, to-from)
	names := make([]string, 0, to-from)
	for _, t := range matched[from:to] {
		pageTopics[t.GetName()] = t
		names = append(names, t.GetName())
	}
	total := len(matched)
	matched = nil
	var spent int64
	budget := int64(c.opts.PassPartitions)
	c.stream(w, pg, total, "topics", names, func(name string) (any, error) {
		t := pageTopics[name]
		if n := int64(t.GetPartitions()); spent == 0 || spent+n <= budget {
			spent += n
			d, err := src.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: name})
			if err != nil {
				return nil, err
			}
			return topicOf(d), nil
		}
		tv := topicView{Name: name, ID: t.GetId(), Config: t.GetConfig(), CreatedAtMs: t.GetCreatedAtMs(), PartitionCount: int(t.GetPartitions()), Pending: true}
		if tv.Config == nil {
			tv.Config = map[string]string{}
		}
		if tf, ok := c.sums.topic(name); ok {
			tv.Records, tv.Storage, tv.Iceberg, tv.SampledAtMs, tv.Pending = tf.records, tf.storage, tf.iceberg, tf.at.UnixMilli(), false
		}
		return tv, nil
	})
}

func (c *Console) apiTopic(w http.ResponseWriter, r *http.Request) {
	pg, ctx, cancel, src, ok := c.open(w, r, defaultPartitionLimit, maxPartitionLimit)
	if !ok {
		return
	}
	defer cancel()
	d, err := src.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: r.URL.Query().Get("name")})
	if err != nil {
		c.fail(w, err)
		return
	}
	parts := d.GetPartitions()
	from, to := pg.window(len(parts))
	tp := topicPage{topicView: topicOf(d), Offset: from, Limit: pg.limit, Partitions: make([]partitionView, 0, to-from)}
	for _, p := range parts[from:to] {
		tp.Partitions = append(tp.Partitions, partitionView{Partition: p.GetPartition(), LogStartOffset: p.GetLogStartOffset(), HighWatermark: p.GetHighWatermark()})
	}
	c.reply(w, tp)
}

func topicOf(d *floev1.DescribeTopicResponse) topicView {
	t := d.GetTopic()
	tv := topicView{Name: t.GetName(), ID: t.GetId(), Config: t.GetConfig(), CreatedAtMs: t.GetCreatedAtMs(), PartitionCount: len(d.GetPartitions())}
	if tv.Config == nil {
		tv.Config = map[string]string{}
	}
	for _, p := range d.GetPartitions() {
		tv.Records += p.GetHighWatermark() - p.GetLogStartOffset()
	}
	if s := d.GetStorage(); s != nil {
		tv.Storage = &storageView{Files: s.GetFiles(), FileBytes: s.GetFileBytes(), LiveBytes: s.GetLiveBytes(), DeadBytes: s.GetDeadBytes(), Batches: s.GetBatches()}
	}
	if ice := d.GetIceberg(); ice.GetEnabled() {
		tv.Iceberg = icebergView{Enabled: true, LagMs: ice.GetLagMs(), TrailingRecords: trailing(d)}
	}
	return tv
}

// trailing is how many records of the log the topic's Iceberg table does
// not hold yet (the whole log while no table was written).
func trailing(d *floev1.DescribeTopicResponse) int64 {
	ice := d.GetIceberg()
	if ice.GetKnown() {
		return ice.GetTrailingOffsets()
	}
	var n int64
	for _, p := range d.GetPartitions() {
		n += max(0, p.GetHighWatermark()-p.GetLogStartOffset())
	}
	return n
}

func (c *Console) apiGroups(w http.ResponseWriter, r *http.Request) {
	pg, ctx, cancel, src, ok := c.open(w, r, defaultListLimit, maxListLimit)
	if !ok {
		return
	}
	defer cancel()
	list, err := src.ListGroups(ctx, &floev1.ListGroupsRequest{})
	if err != nil {
		c.fail(w, err)
		return
	}
	var names []string
	for _, g := range list.GetGroups() {
		if pg.matches(g.GetGroup()) {
			names = append(names, g.GetGroup())
		}
	}
	list = nil
	from, to := pg.window(len(names))
	c.stream(w, pg, len(names), "groups", names[from:to], func(name string) (any, error) {
		d, err := src.DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: name})
		if err != nil {
			return nil, err
		}
		return groupOf(d), nil
	})
}

func (c *Console) apiGroup(w http.ResponseWriter, r *http.Request) {
	pg, ctx, cancel, src, ok := c.open(w, r, defaultPartitionLimit, maxPartitionLimit)
	if !ok {
		return
	}
	defer cancel()
	d, err := src.DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: r.URL.Query().Get("name")})
	if err != nil {
		c.fail(w, err)
		return
	}
	parts := d.GetPartitions()
	from, to := pg.window(len(parts))
	gp := groupPage{groupView: groupOf(d), Members: []memberView{}, Offset: from, Limit: pg.limit, Partitions: make([]lagView, 0, to-from)}
	for _, m := range d.GetMembers() {
		mv := memberView{ID: m.GetMemberId(), Epoch: m.GetMemberEpoch(), Subscription: m.GetSubscription(),
			Assigned: []string{}, LastHeartbeatMs: m.GetLastHeartbeatMs()}
		if mv.Subscription == nil {
			mv.Subscription = []string{}
		}
		for _, tp := range m.GetAssigned() {
			mv.Assigned = append(mv.Assigned, fmt.Sprintf("%s/%d", tp.GetTopic(), tp.GetPartition()))
		}
		gp.Members = append(gp.Members, mv)
	}
	for _, p := range parts[from:to] {
		gp.Partitions = append(gp.Partitions, lagView{Topic: p.GetTopic(), Partition: p.GetPartition(), Committed: p.GetCommitted(),
			HighWatermark: p.GetHighWatermark(), LogStartOffset: p.GetLogStartOffset(), LagRecords: p.GetLagRecords(),
			LagBytes: p.GetLagBytes(), LagMs: p.GetLagMs(), Owner: p.GetOwner()})
	}
	c.reply(w, gp)
}

// groupOf sums a group's lag over all its partitions.
func groupOf(d *floev1.DescribeGroupResponse) groupView {
	gv := groupView{Name: d.GetGroup(), State: d.GetState(), GroupEpoch: d.GetGroupEpoch(), MemberCount: len(d.GetMembers()), PartitionCount: len(d.GetPartitions())}
	for _, p := range d.GetPartitions() {
		gv.LagRecords += p.GetLagRecords()
		gv.LagBytes += p.GetLagBytes()
		gv.MaxLagMs = max(gv.MaxLagMs, p.GetLagMs())
	}
	return gv
}

func (c *Console) apiLag(w http.ResponseWriter, _ *http.Request) {
	c.reply(w, lagResponse{IntervalMs: c.opts.SampleInterval.Milliseconds(), Capacity: c.opts.History, Groups: c.history.snapshot()})
}

func (c *Console) apiSummary(w http.ResponseWriter, _ *http.Request) {
	if c.source() == nil {
		c.fail(w, errStarting)
		return
	}
	s, err := c.sums.summary()
	if err != nil {
		c.fail(w, err)
		return
	}
	c.reply(w, s)
}

// apiIceberg lists the tables of a page of topics (q, offset, limit as
// /console/api/topics): total counts the topics matched, tables those of
// the page with Iceberg output.
func (c *Console) apiIceberg(w http.ResponseWriter, r *http.Request) {
	var src IcebergSource
	if c.opts.Iceberg != nil {
		src = c.opts.Iceberg()
	}
	if src == nil {
		c.reply(w, icebergResponse{Message: "Iceberg tables will appear here once the compactor writes them.", Tables: []IcebergTable{}})
		return
	}
	pg, err := pageOf(r, defaultListLimit, maxListLimit)
	if err != nil {
		c.replyError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), c.opts.RequestTimeout)
	defer cancel()
	resp := icebergResponse{Available: true, Tables: []IcebergTable{}, Offset: pg.offset, Limit: pg.limit}
	if ts, ok := src.(IcebergTopicsSource); ok && c.source() != nil {
		list, err := listTopics(ctx, c.source())
		if err != nil {
			c.fail(w, err)
			return
		}
		var names []string
		for _, t := range list.GetTopics() {
			if pg.matches(t.GetName()) {
				names = append(names, t.GetName())
			}
		}
		from, to := pg.window(len(names))
		tables, err := ts.IcebergTablesOf(ctx, names[from:to])
		if err != nil {
			c.fail(w, err)
			return
		}
		resp.Total = len(names)
		resp.Tables = append(resp.Tables, tables...)
		c.reply(w, resp)
		return
	}
	tables, err := src.IcebergTables(ctx)
	if err != nil {
		c.fail(w, err)
		return
	}
	var matched []IcebergTable
	for _, t := range tables {
		if pg.matches(t.Topic) {
			matched = append(matched, t)
		}
	}
	from, to := pg.window(len(matched))
	resp.Total = len(matched)
	resp.Tables = append(resp.Tables, matched[from:to]...)
	c.reply(w, resp)
}

// stream writes {"total":…,"offset":…,"limit":…,"<field>":[…]} with
// item(name) for each name, one at a time, so that the answer is never
// built whole. A name that is NotFound (deleted since the list) is skipped.
// A failure before the first byte is an error answer; after it, the
// connection is cut, so that the client sees a broken answer, never a
// short valid one, and the cause is logged.
func (c *Console) stream(w http.ResponseWriter, pg page, total int, field string, names []string, item func(string) (any, error)) {
	enc := json.NewEncoder(w)
	started := false
	for _, name := range names {
		v, err := item(name)
		if status.Code(err) == codes.NotFound {
			continue
		}
		if err != nil {
			if !started {
				c.fail(w, err)
				return
			}
			if !canceled(err) { // not the client leaving
				c.log.Warn("console answer cut short", "field", field, "err", err)
			}
			panic(http.ErrAbortHandler)
		}
		if !started {
			c.start(w, pg, total, field)
			started = true
		} else {
			_, _ = w.Write([]byte{','})
		}
		if err := enc.Encode(v); err != nil {
			return // the client left
		}
	}
	if !started {
		c.start(w, pg, total, field)
	}
	_, _ = w.Write([]byte("]}\n"))
}

// start writes the head of a streamed list.
func (c *Console) start(w http.ResponseWriter, pg page, total int, field string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	fmt.Fprintf(w, `{"total":%d,"offset":%d,"limit":%d,"%s":[`, total, min(pg.offset, total), pg.limit, field)
}

// reply writes v as JSON.
func (c *Console) reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}
