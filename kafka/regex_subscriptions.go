package kafka

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// KIP-848 regex subscriptions (ConsumerGroupHeartbeat's
// SubscribedTopicRegex). floe's groups subscribe by topic names, so the
// agent that serves a member's heartbeat resolves its regex to the names
// of the topics it matches, whole name as in Kafka, and that the member's
// principal may DESCRIBE, and sends those as the member's subscription.
// The resolution is redone only when the set of topics changed: the
// agent lists the topics at most once per refresh interval
// (kafka.agent_ttl/4), for all its members, and a member's names are sent
// again only when that list differs from the one they were resolved from.
//
// The regex is Go's regexp (RE2), where Kafka uses RE2/J: the syntax is
// the same for what subscriptions use (classes, alternation, repetition,
// anchors, \Q...\E); Go also takes (?P<name>...) and Java's (?<name>...),
// and neither has backreferences or lookaround. A regex matching no topic
// subscribes the member to noTopicName, which no one should name a topic.

// maxRegexLen bounds a subscription regex (bytes).
const maxRegexLen = 1024

// noTopicName is the subscription of a member whose regex matches nothing
// (floe's groups refuse an empty subscription).
const noTopicName = "__floe_regex_matches_no_topic"

// regexSubs holds the topic list and each member's regex.
type regexSubs struct {
	refresh time.Duration
	list    func(ctx context.Context) ([]metadata.Topic, error)

	topicsMu sync.Mutex // protects names, gen, at; held while listing (one listing per interval)
	names    []string   // sorted
	gen      uint64     // changes whenever names does; 0 before the first listing
	at       time.Time  // when names was listed

	mu      sync.Mutex // protects members
	members map[memberKey]regexMember
	max     int // bound of members
}

// regexMember is one member's regex, the topic names it subscribes to
// besides (Kafka's SubscribedTopicNames, which a member may send with its
// regex), and the topic list generation its subscription was last sent
// for.
type regexMember struct {
	pattern string
	re      *regexp.Regexp
	names   []string
	gen     uint64
}

func newRegexSubs(refresh time.Duration, list func(context.Context) ([]metadata.Topic, error), max int) *regexSubs {
	return &regexSubs{refresh: refresh, list: list, members: map[memberKey]regexMember{}, max: max}
}

// errInvalidRegex refuses a subscription regex.
type errInvalidRegex struct{ msg string }

func (e errInvalidRegex) Error() string { return e.msg }

// compileSubscription compiles a subscription regex to match whole topic
// names.
func compileSubscription(pattern string) (*regexp.Regexp, error) {
	if len(pattern) > maxRegexLen {
		return nil, errInvalidRegex{fmt.Sprintf("the subscription regex is %d bytes, more than %d", len(pattern), maxRegexLen)}
	}
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return nil, errInvalidRegex{fmt.Sprintf("the subscription regex does not compile: %v", err)}
	}
	return re, nil
}

// subscription is what a heartbeat of member key sends as its
// subscription when the member has a regex (given now, or remembered):
// the topics it matches and names (nil: the names it gave before), when
// pattern or names are given, when the topic list changed since they were
// last sent, or when force (a join); nil (unchanged) otherwise. With no
// regex it returns a nil member: the caller uses the names. It returns the
// member's state to remember once the heartbeat succeeded.
func (r *regexSubs) subscription(ctx context.Context, key memberKey, pattern *string, names []string, force bool, permits func(topic string) bool) ([]string, *regexMember, error) {
	r.mu.Lock()
	m, ok := r.members[key]
	r.mu.Unlock()
	if pattern != nil && *pattern == "" {
		ok = false
	}
	if pattern != nil && *pattern != "" && (!ok || m.pattern != *pattern) {
		re, err := compileSubscription(*pattern)
		if err != nil {
			return nil, nil, err
		}
		m, ok = regexMember{pattern: *pattern, re: re, names: m.names}, true
	}
	if !ok {
		return nil, nil, nil
	}
	if names != nil && !slices.Equal(names, m.names) {
		m.names, m.gen = slices.Clone(names), 0
	}
	topics, gen, err := r.topics(ctx)
	if err != nil {
		return nil, nil, err
	}
	if m.gen == gen && !force {
		return nil, &m, nil
	}
	sub := slices.Clone(m.names)
	for _, n := range topics {
		if m.re.MatchString(n) && permits(n) && !slices.Contains(m.names, n) {
			sub = append(sub, n)
		}
	}
	if len(sub) == 0 {
		sub = []string{noTopicName}
	}
	m.gen = gen
	return sub, &m, nil
}

// remember keeps m as key's state (a full table forgets one member; its
// next heartbeat with the regex brings it back).
func (r *regexSubs) remember(key memberKey, m *regexMember) {
	if m == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.members[key]; !ok && len(r.members) >= r.max {
		for old := range r.members {
			delete(r.members, old)
			break
		}
	}
	r.members[key] = *m
}

func (r *regexSubs) forget(key memberKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.members, key)
}

// topics is the topic list, listed again once it is older than refresh
// (on a failure the last list stays, if there is one).
func (r *regexSubs) topics(ctx context.Context) ([]string, uint64, error) {
	r.topicsMu.Lock()
	defer r.topicsMu.Unlock()
	if r.gen > 0 && time.Since(r.at) < r.refresh {
		return r.names, r.gen, nil
	}
	ts, err := r.list(ctx)
	if err != nil {
		if r.gen > 0 {
			r.at = time.Now() // retried after another interval
			return r.names, r.gen, nil
		}
		return nil, 0, err
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	slices.Sort(names)
	if r.gen == 0 || !slices.Equal(names, r.names) {
		r.names, r.gen = names, r.gen+1
	}
	r.at = time.Now()
	return r.names, r.gen, nil
}
