package console

import (
	"context"
	"sort"
	"sync"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// The summary line (topics, partitions, records, bytes, groups, worst
// lag, Iceberg tables trailing) comes from the background passes: each
// lists the topics and groups and describes the next few of them (nextBatch),
// keeping the last figures of each, so that a pass's work is bounded
// whatever the number of topics, partitions or groups, and a summary
// read costs nothing.

// summaryView is /console/api/summary.
type summaryView struct {
	Topics     int   `json:"topics"`
	Partitions int64 `json:"partitions"`
	// Records and Bytes sum the figures of the topics described so far:
	// TopicsCounted of Topics (all of them after a few passes).
	Records       int64 `json:"records"`
	Bytes         int64 `json:"bytes"`
	TopicsCounted int   `json:"topicsCounted"`
	Groups        int   `json:"groups"`
	GroupsCounted int   `json:"groupsCounted"`
	// WorstLag is the group furthest behind in records ("" when none is).
	WorstLag worstLag `json:"worstLag"`
	// Tables: topics with Iceberg output; TablesTrailing: those whose
	// table does not hold the whole log yet.
	Tables         int   `json:"tables"`
	TablesTrailing int   `json:"tablesTrailing"`
	AtMs           int64 `json:"atMs"` // when the last pass ended; 0: none yet
}

type worstLag struct {
	Group   string `json:"group"`
	Records int64  `json:"records"`
	Ms      int64  `json:"ms"`
}

// topicFigures are a topic's figures as a pass described them.
type topicFigures struct {
	records int64
	storage *storageView // nil when the agent could not read it
	iceberg icebergView
	at      time.Time
}

type groupFigures struct{ records, ms int64 }

// figures are the last figures of each topic and group, and where the
// passes stopped.
type figures struct {
	mu          sync.Mutex // protects the fields below
	topics      map[string]topicFigures
	groups      map[string]groupFigures
	topicAfter  string // the last topic described
	groupAfter  string
	topicCount  int
	partitions  int64
	groupCount  int
	at          time.Time
	lastErr     error // of the last pass, nil when it succeeded
	everSampled bool
}

func newFigures() *figures {
	return &figures{topics: make(map[string]topicFigures), groups: make(map[string]groupFigures)}
}

// nextBatch picks the names after after (names sorted), wrapping around,
// at most maxItems of them whose weights sum to at most maxWeight (the
// first is always taken): the next round of a bounded sweep.
func nextBatch(names []string, weights []int64, after string, maxItems int, maxWeight int64) []string {
	if len(names) == 0 || maxItems <= 0 {
		return nil
	}
	start := sort.SearchStrings(names, after)
	if start < len(names) && names[start] == after {
		start++
	}
	var out []string
	var w int64
	for i := range min(maxItems, len(names)) {
		j := (start + i) % len(names)
		if i > 0 && w+weights[j] > maxWeight {
			break
		}
		w += weights[j]
		out = append(out, names[j])
	}
	return out
}

// topic returns the figures the passes last saw of a topic.
func (f *figures) topic(name string) (topicFigures, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tf, ok := f.topics[name]
	return tf, ok
}

// summary sums the figures kept; the last pass's error if it failed.
func (f *figures) summary() (summaryView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lastErr != nil {
		return summaryView{}, f.lastErr
	}
	s := summaryView{Topics: f.topicCount, Partitions: f.partitions, TopicsCounted: len(f.topics), Groups: f.groupCount, GroupsCounted: len(f.groups)}
	if f.everSampled {
		s.AtMs = f.at.UnixMilli()
	}
	for _, t := range f.topics {
		s.Records += t.records
		if t.storage != nil {
			s.Bytes += t.storage.LiveBytes
		}
		if t.iceberg.Enabled {
			s.Tables++
			if t.iceberg.TrailingRecords > 0 {
				s.TablesTrailing++
			}
		}
	}
	for g, l := range f.groups {
		if l.records > s.WorstLag.Records || (l.records == s.WorstLag.Records && l.records > 0 && g < s.WorstLag.Group) {
			s.WorstLag = worstLag{Group: g, Records: l.records, Ms: l.ms}
		}
	}
	return s, nil
}

// passTopics lists the topics and describes the next batch of them.
func (c *Console) passTopics(ctx context.Context, src Source) error {
	list, err := listTopics(ctx, src)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(list.GetTopics()))
	weights := make(map[string]int64, len(list.GetTopics()))
	var partitions int64
	for _, t := range list.GetTopics() {
		names = append(names, t.GetName())
		weights[t.GetName()] = int64(t.GetPartitions())
		partitions += int64(t.GetPartitions())
	}
	list = nil
	sort.Strings(names)
	ws := make([]int64, len(names))
	for i, n := range names {
		ws[i] = weights[n]
	}
	f := c.sums
	f.mu.Lock()
	after := f.topicAfter
	f.mu.Unlock()
	got := make(map[string]topicFigures)
	for _, name := range nextBatch(names, ws, after, c.opts.PassTopics, int64(c.opts.PassPartitions)) {
		d, err := src.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: name})
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			continue // deleted meanwhile, or one topic that fails: the next pass retries
		}
		tv := topicOf(d)
		got[name] = topicFigures{records: tv.Records, storage: tv.Storage, iceberg: tv.Iceberg, at: time.Now()}
		after = name
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for name := range f.topics {
		if _, ok := weights[name]; !ok {
			delete(f.topics, name)
		}
	}
	for name, tf := range got {
		f.topics[name] = tf
	}
	f.topicAfter, f.topicCount, f.partitions = after, len(names), partitions
	return nil
}

// passGroups lists the groups, describes the next batch of them, and
// records their lag in the history.
func (c *Console) passGroups(ctx context.Context, src Source, now time.Time) error {
	list, err := src.ListGroups(ctx, &floev1.ListGroupsRequest{})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(list.GetGroups()))
	for _, g := range list.GetGroups() {
		names = append(names, g.GetGroup())
	}
	list = nil
	sort.Strings(names)
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
	}
	f := c.sums
	f.mu.Lock()
	after := f.groupAfter
	f.mu.Unlock()
	ones := make([]int64, len(names))
	for i := range ones {
		ones[i] = 1
	}
	got := make(map[string]groupFigures)
	lags := make(map[string]int64)
	for _, name := range nextBatch(names, ones, after, c.opts.PassGroups, int64(c.opts.PassGroups)) {
		d, err := src.DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: name})
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			continue
		}
		gv := groupOf(d)
		got[name] = groupFigures{records: gv.LagRecords, ms: gv.MaxLagMs}
		lags[name] = gv.LagRecords
		after = name
	}
	c.history.record(now, lags, present)
	f.mu.Lock()
	defer f.mu.Unlock()
	for name := range f.groups {
		if !present[name] {
			delete(f.groups, name)
		}
	}
	for name, gf := range got {
		f.groups[name] = gf
	}
	f.groupAfter, f.groupCount = after, len(names)
	return nil
}
