package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

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

type topicView struct {
	Name        string            `json:"name"`
	ID          int64             `json:"id"`
	Config      map[string]string `json:"config"`
	CreatedAtMs int64             `json:"createdAtMs"`
	Partitions  []partitionView   `json:"partitions"`
	// Records sums high watermark - log start over the partitions.
	Records int64 `json:"records"`
	// Storage is absent when the agent could not read it.
	Storage *storageView `json:"storage"`
}

type topicsResponse struct {
	Topics []topicView `json:"topics"`
	// Total is the number of topics; Topics holds the first MaxTopics.
	Total int `json:"total"`
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

type groupView struct {
	Name       string       `json:"name"`
	State      string       `json:"state"`
	GroupEpoch int32        `json:"groupEpoch"`
	Members    []memberView `json:"members"`
	Partitions []lagView    `json:"partitions"`
	LagRecords int64        `json:"lagRecords"`
	LagBytes   int64        `json:"lagBytes"`
	MaxLagMs   int64        `json:"maxLagMs"`
}

type groupsResponse struct {
	Groups []groupView `json:"groups"`
	Total  int         `json:"total"`
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
}

// errStarting answers while the agent waits for its stores.
var errStarting = status.Error(codes.Unavailable, "console: agent starting")

func (c *Console) apiTopics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), c.opts.RequestTimeout)
	defer cancel()
	resp, err := c.topics(ctx)
	c.reply(w, resp, err)
}

func (c *Console) apiGroups(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), c.opts.RequestTimeout)
	defer cancel()
	resp, err := c.groups(ctx)
	c.reply(w, resp, err)
}

func (c *Console) apiLag(w http.ResponseWriter, _ *http.Request) {
	c.reply(w, lagResponse{IntervalMs: c.opts.SampleInterval.Milliseconds(), Capacity: c.opts.History, Groups: c.history.snapshot()}, nil)
}

func (c *Console) apiIceberg(w http.ResponseWriter, r *http.Request) {
	var src IcebergSource
	if c.opts.Iceberg != nil {
		src = c.opts.Iceberg()
	}
	if src == nil {
		c.reply(w, icebergResponse{Message: "Iceberg tables will appear here once the compactor writes them.", Tables: []IcebergTable{}}, nil)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), c.opts.RequestTimeout)
	defer cancel()
	tables, err := src.IcebergTables(ctx)
	if tables == nil {
		tables = []IcebergTable{}
	}
	c.reply(w, icebergResponse{Available: true, Tables: tables}, err)
}

// topics lists and describes the first MaxTopics topics.
func (c *Console) topics(ctx context.Context) (topicsResponse, error) {
	src := c.source()
	if src == nil {
		return topicsResponse{}, errStarting
	}
	list, err := src.ListTopics(ctx, &floev1.ListTopicsRequest{})
	if err != nil {
		return topicsResponse{}, fmt.Errorf("list topics: %w", err)
	}
	resp := topicsResponse{Topics: []topicView{}, Total: len(list.GetTopics())}
	for i, t := range list.GetTopics() {
		if i == c.opts.MaxTopics {
			break
		}
		d, err := src.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: t.GetName()})
		if status.Code(err) == codes.NotFound {
			continue // deleted since the list
		}
		if err != nil {
			return topicsResponse{}, fmt.Errorf("describe topic %q: %w", t.GetName(), err)
		}
		tv := topicView{Name: t.GetName(), ID: d.GetTopic().GetId(), Config: d.GetTopic().GetConfig(),
			CreatedAtMs: d.GetTopic().GetCreatedAtMs(), Partitions: []partitionView{}}
		if tv.Config == nil {
			tv.Config = map[string]string{}
		}
		for _, p := range d.GetPartitions() {
			tv.Partitions = append(tv.Partitions, partitionView{Partition: p.GetPartition(), LogStartOffset: p.GetLogStartOffset(), HighWatermark: p.GetHighWatermark()})
			tv.Records += p.GetHighWatermark() - p.GetLogStartOffset()
		}
		if s := d.GetStorage(); s != nil {
			tv.Storage = &storageView{Files: s.GetFiles(), FileBytes: s.GetFileBytes(), LiveBytes: s.GetLiveBytes(), DeadBytes: s.GetDeadBytes(), Batches: s.GetBatches()}
		}
		resp.Topics = append(resp.Topics, tv)
	}
	return resp, nil
}

// groups lists and describes the first MaxGroups groups.
func (c *Console) groups(ctx context.Context) (groupsResponse, error) {
	src := c.source()
	if src == nil {
		return groupsResponse{}, errStarting
	}
	list, err := src.ListGroups(ctx, &floev1.ListGroupsRequest{})
	if err != nil {
		return groupsResponse{}, fmt.Errorf("list groups: %w", err)
	}
	resp := groupsResponse{Groups: []groupView{}, Total: len(list.GetGroups())}
	for i, g := range list.GetGroups() {
		if i == c.opts.MaxGroups {
			break
		}
		d, err := src.DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: g.GetGroup()})
		if status.Code(err) == codes.NotFound {
			continue // deleted since the list
		}
		if err != nil {
			return groupsResponse{}, fmt.Errorf("describe group %q: %w", g.GetGroup(), err)
		}
		resp.Groups = append(resp.Groups, groupOf(d))
	}
	return resp, nil
}

func groupOf(d *floev1.DescribeGroupResponse) groupView {
	gv := groupView{Name: d.GetGroup(), State: d.GetState(), GroupEpoch: d.GetGroupEpoch(), Members: []memberView{}, Partitions: []lagView{}}
	for _, m := range d.GetMembers() {
		mv := memberView{ID: m.GetMemberId(), Epoch: m.GetMemberEpoch(), Subscription: m.GetSubscription(),
			Assigned: []string{}, LastHeartbeatMs: m.GetLastHeartbeatMs()}
		if mv.Subscription == nil {
			mv.Subscription = []string{}
		}
		for _, tp := range m.GetAssigned() {
			mv.Assigned = append(mv.Assigned, fmt.Sprintf("%s/%d", tp.GetTopic(), tp.GetPartition()))
		}
		gv.Members = append(gv.Members, mv)
	}
	for _, p := range d.GetPartitions() {
		gv.Partitions = append(gv.Partitions, lagView{Topic: p.GetTopic(), Partition: p.GetPartition(), Committed: p.GetCommitted(),
			HighWatermark: p.GetHighWatermark(), LogStartOffset: p.GetLogStartOffset(), LagRecords: p.GetLagRecords(),
			LagBytes: p.GetLagBytes(), LagMs: p.GetLagMs(), Owner: p.GetOwner()})
		gv.LagRecords += p.GetLagRecords()
		gv.LagBytes += p.GetLagBytes()
		gv.MaxLagMs = max(gv.MaxLagMs, p.GetLagMs())
	}
	return gv
}

// reply writes v as JSON, or err as {"error": ...} with a status that
// says whether to retry.
func (c *Console) reply(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if err != nil {
		code := http.StatusBadGateway
		switch {
		case status.Code(err) == codes.Unavailable, errors.Is(err, errStarting):
			code = http.StatusServiceUnavailable
		case errors.Is(err, context.DeadlineExceeded), status.Code(err) == codes.DeadlineExceeded:
			code = http.StatusGatewayTimeout
		}
		c.log.Debug("console request failed", "err", err)
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}
