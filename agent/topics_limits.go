package agent

import (
	"sort"
	"strconv"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
)

// ReasonLimit (InvalidArgument or ResourceExhausted): a request is over
// one of the agent's limits; the ErrorInfo metadata "limit" names it (the
// setting's name in floe's configuration) and "value" its value.
const ReasonLimit = "LIMIT"

// limitError is a refusal by the agent's limit named limit (a setting of
// floe's configuration) of value.
func limitError(c codes.Code, limit string, value int64, format string, args ...any) error {
	return statusInfo(c, ReasonLimit, map[string]string{"limit": limit, "value": strconv.FormatInt(value, 10)}, format, args...)
}

// checkTopicConfig refuses a topic's config (as it would be stored) with
// an entry (key and value) over MaxTopicConfigEntryBytes or entries over
// MaxTopicConfigBytes together. Five topics of 3 MB configs made every
// ListTopics fail, before.
func (c Config) checkTopicConfig(config map[string]string) error {
	total := 0
	for k, v := range config {
		n := len(k) + len(v)
		if n > c.MaxTopicConfigEntryBytes {
			return limitError(codes.InvalidArgument, "topic_config_entry_bytes", int64(c.MaxTopicConfigEntryBytes),
				"topic config %q is %d bytes (key and value), over the agent's limit of %d (topic_config_entry_bytes)", k, n, c.MaxTopicConfigEntryBytes)
		}
		total += n
	}
	if total > c.MaxTopicConfigBytes {
		return limitError(codes.InvalidArgument, "topic_config_bytes", int64(c.MaxTopicConfigBytes),
			"topic config of %d bytes (keys and values), over the agent's limit of %d (topic_config_bytes)", total, c.MaxTopicConfigBytes)
	}
	return nil
}

// alteredConfig is config with set applied and remove removed.
func alteredConfig(config, set map[string]string, remove []string) map[string]string {
	out := make(map[string]string, len(config)+len(set))
	for k, v := range config {
		out[k] = v
	}
	for _, k := range remove {
		delete(out, k)
	}
	for k, v := range set {
		out[k] = v
	}
	return out
}

// List pages: topics per page by default and at most, whatever a request
// asks.
const (
	defaultTopicPage = 1000
	maxTopicPage     = 10000
)

// pageTopics returns the page of ts (any order) after token (the last name
// of the previous page; "" the first) of at most size topics (<= 0:
// defaultTopicPage; capped at maxTopicPage) whose answer stays within
// maxBytes (at least one topic), in name order, and the next page's token
// ("" when it is the last).
func pageTopics(ts []metadata.Topic, token string, size, maxBytes int) ([]*floev1.Topic, string) {
	if size <= 0 {
		size = defaultTopicPage
	}
	size = min(size, maxTopicPage)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	i := sort.Search(len(ts), func(i int) bool { return ts[i].Name > token })
	var (
		page  []*floev1.Topic
		bytes int
	)
	for ; i < len(ts) && len(page) < size; i++ {
		t := topicPB(ts[i])
		n := proto.Size(t) + 8 // its tag and length
		if len(page) > 0 && bytes+n > maxBytes {
			break
		}
		page = append(page, t)
		bytes += n
	}
	if i == len(ts) {
		return page, ""
	}
	return page, page[len(page)-1].GetName()
}

// checkTopicCounts refuses a new topic of partitions partitions past
// MaxPartitionsPerTopic, or that would make more than MaxTopics topics or
// MaxTotalPartitions partitions (existing are the topics there are). The
// check is the agent's, at create: concurrent creates (on several agents)
// may pass the counts by their number.
func (c Config) checkTopicCounts(existing []metadata.Topic, partitions int32) error {
	if int(partitions) > c.MaxPartitionsPerTopic {
		return limitError(codes.InvalidArgument, "max_partitions_per_topic", int64(c.MaxPartitionsPerTopic),
			"create topic: %d partitions, over the agent's limit of %d per topic (max_partitions_per_topic)", partitions, c.MaxPartitionsPerTopic)
	}
	if len(existing)+1 > c.MaxTopics {
		return limitError(codes.ResourceExhausted, "max_topics", int64(c.MaxTopics),
			"create topic: there are %d topics, the agent's limit (max_topics)", len(existing))
	}
	total := int64(partitions)
	for _, t := range existing {
		total += int64(t.Partitions)
	}
	if total > int64(c.MaxTotalPartitions) {
		return limitError(codes.ResourceExhausted, "max_total_partitions", int64(c.MaxTotalPartitions),
			"create topic: %d partitions more would make %d, over the agent's limit of %d across all topics (max_total_partitions)",
			partitions, total, c.MaxTotalPartitions)
	}
	return nil
}

// partitionReaders counts the partitions every subscription of the agent
// reads (plain and group), at most MaxSubscribedPartitions: each is a
// goroutine reading and waiting, and a subscription past the limit is
// refused with ResourceExhausted before any starts.
type partitionReaders struct {
	max int64
	n   atomic.Int64
}

// add takes n partitions, or reports that they would pass the limit.
func (r *partitionReaders) add(n int) bool {
	if r.n.Add(int64(n)) > r.max {
		r.n.Add(-int64(n))
		return false
	}
	return true
}

func (r *partitionReaders) done(n int) { r.n.Add(-int64(n)) }

// refusal is the refusal of a subscription of n more partitions.
func (r *partitionReaders) refusal(n int) error {
	return limitError(codes.ResourceExhausted, "max_subscribed_partitions", r.max,
		"subscribe: %d partitions more would pass the agent's limit of %d read by all subscriptions (max_subscribed_partitions); retry later or on another agent",
		n, r.max)
}
