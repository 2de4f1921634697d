package kafka

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Fetch sessions (KIP-227), as Apache Kafka's FetchSession.scala keeps
// them: a client's full fetch (session epoch 0) creates a session holding
// its partitions, their fetch offsets and what the client was last told
// of each (high watermark, log start offset); its incremental fetches
// (epoch 1, 2, ...) name only the partitions whose fetch offset or bound
// changed (added or updated) and those to drop (ForgottenTopics), and are
// answered with only the partitions that changed: new records, an error,
// or a new high watermark or log start offset. Epoch -1 is a fetch
// without a session (and closes the one named).
//
// The cache is the agent's (one per Server), bounded by
// Config.MaxFetchSessions. A full fetch that finds it full may evict, as
// Kafka does: first a session unused for Config.FetchSessionEviction;
// else, among the sessions older than that, the one with the fewest
// partitions (the least recently used of those), but only for a new
// session with more partitions. Otherwise the full fetch is answered
// without a session (session id 0) and the client keeps sending full
// fetches. A session past Config.MaxFetchSessionPartitions is closed
// (FETCH_SESSION_ID_NOT_FOUND: the client falls back to a full fetch,
// which is then answered without a session).
//
// Everything here is pure state: no I/O, the clock passed in; the Fetch
// handler (01_fetch.go) reads what begin plans and hands the outcome to
// finish.

// sessionKey names a partition within a session (v4 to v12 name topics).
type sessionKey struct {
	topic     string
	partition int32
}

// sessionPart is one partition of a fetch: what the client asks for, and
// (in a session) what it was last told.
type sessionPart struct {
	key      sessionKey
	offset   int64
	maxBytes int32
	// hwm and lso are the high watermark and log start offset last
	// answered; -1: not yet (or an error since), so the next answer
	// carries the partition.
	hwm, lso int64
}

// partOutcome is what one read of a partition gave.
type partOutcome struct {
	read     bool  // read (false: left out once MaxBytes was used up)
	err      int16 // the partition's error code
	records  bool  // the answer carries batches
	hwm, lso int64
}

// mustRespond is Kafka's rule for an incremental answer: a partition is
// in it when it has records or an error, or its high watermark or log
// start offset differs from what the client was last told. A partition
// not read (the answer was full) is left out.
func mustRespond(p sessionPart, o partOutcome) bool {
	if o.err != 0 {
		return true
	}
	return o.read && (o.records || o.hwm != p.hwm || o.lso != p.lso)
}

// told is p after the client was answered o.
func told(p sessionPart, o partOutcome) sessionPart {
	switch {
	case o.err != 0:
		p.hwm = -1 // told an error: the partition is answered again once it clears
	case o.read:
		p.hwm, p.lso = o.hwm, o.lso
	}
	return p
}

// sessionRequest is what a Fetch request says of sessions.
type sessionRequest struct {
	// owner is who asks (principal and client id): a session answers
	// its owner only, as if it did not exist for anyone else (a client
	// behind an address in front of several agents may bring another
	// agent's session id).
	owner     string
	id, epoch int32
	parts     []sessionPart // the request's partitions, in order
	forgotten []sessionKey
}

// fetchPlan is what begin decides: the partitions to read, and how
// finish answers them.
type fetchPlan struct {
	parts []sessionPart // to read, in answer order (a copy)
	// incremental: answer only what mustRespond picks, in session order.
	incremental bool
	// create: a full fetch that asks for a session (epoch 0), of owner.
	create bool
	owner  string
	id     int32
	epoch  int32 // the session's epoch after this request (incremental)
}

// fetchSession is one session.
type fetchSession struct {
	id            int32
	owner         string
	epoch         int32 // the epoch the next incremental fetch must carry
	parts         []sessionPart
	index         map[sessionKey]int // into parts
	created, used time.Time
}

// sessionLimits bound a session cache.
type sessionLimits struct {
	maxSessions int
	maxParts    int
	evictAfter  time.Duration
}

// fetchSessions is the session cache.
type fetchSessions struct {
	lim sessionLimits
	rnd func() int32 // a session id candidate (positive)

	mu    sync.Mutex // protects byID, parts and stats
	byID  map[int32]*fetchSession
	parts int // partitions over every session
	stats FetchSessionStats
}

// FetchSessionStats count a server's fetch sessions.
type FetchSessionStats struct {
	Open, Partitions int // sessions open now, and their partitions
	// Created, Evicted and Incremental count sessions created and
	// evicted, and incremental fetches served, since the server started.
	Created, Evicted, Incremental int64
}

func newFetchSessions(lim sessionLimits) *fetchSessions {
	return &fetchSessions{lim: lim, byID: map[int32]*fetchSession{},
		rnd: func() int32 { return rand.Int32N(math.MaxInt32) + 1 }}
}

// nextEpoch is the epoch after e (Kafka's: it wraps to 1).
func nextEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// begin plans a fetch; a non-zero code answers the whole fetch instead.
func (c *fetchSessions) begin(r sessionRequest, now time.Time) (fetchPlan, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.epoch == -1 || r.epoch == 0 {
		if s, ok := c.byID[r.id]; ok && s.owner == r.owner {
			c.remove(r.id)
		}
		return fetchPlan{parts: r.parts, create: r.epoch == 0, owner: r.owner}, 0
	}
	s, ok := c.byID[r.id]
	switch {
	case !ok || s.owner != r.owner:
		return fetchPlan{}, kerr.FetchSessionIDNotFound.Code
	case r.epoch != s.epoch:
		return fetchPlan{}, kerr.InvalidFetchSessionEpoch.Code
	}
	// Kafka's order: the request's partitions added or updated, then
	// the forgotten ones removed.
	before := len(s.parts)
	for _, p := range r.parts {
		if i, ok := s.index[p.key]; ok {
			s.parts[i].offset, s.parts[i].maxBytes = p.offset, p.maxBytes
			continue
		}
		p.hwm, p.lso = -1, -1
		s.index[p.key] = len(s.parts)
		s.parts = append(s.parts, p)
	}
	if len(r.forgotten) > 0 {
		gone := make(map[sessionKey]bool, len(r.forgotten))
		for _, k := range r.forgotten {
			gone[k] = true
		}
		s.keep(func(p sessionPart) bool { return !gone[p.key] })
	}
	c.parts += len(s.parts) - before
	if len(s.parts) > c.lim.maxParts {
		c.remove(s.id)
		return fetchPlan{}, kerr.FetchSessionIDNotFound.Code
	}
	s.epoch, s.used = nextEpoch(s.epoch), now
	c.stats.Incremental++
	return fetchPlan{parts: append([]sessionPart(nil), s.parts...), incremental: true, id: s.id, epoch: s.epoch}, 0
}

// finish records what the client is told of plan's partitions (outs,
// one each) and returns the session id to answer with and which
// partitions the answer carries.
func (c *fetchSessions) finish(plan fetchPlan, outs []partOutcome, now time.Time) (int32, []bool) {
	include := make([]bool, len(plan.parts))
	if !plan.incremental {
		for i := range include {
			include[i] = true
		}
		if !plan.create {
			return 0, include
		}
		parts := make([]sessionPart, len(plan.parts))
		for i, p := range plan.parts {
			p.hwm, p.lso = -1, -1
			parts[i] = told(p, outs[i])
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.create(plan.owner, parts, now), include
	}
	for i, p := range plan.parts {
		include[i] = mustRespond(p, outs[i])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.byID[plan.id]
	if !ok || s.epoch != plan.epoch {
		return plan.id, include // closed or fetched again since: nothing to record
	}
	// What was answered with records moves to the end: the others are
	// read first next time (Kafka's fairness under MaxBytes).
	var moved []sessionPart
	for i, p := range plan.parts {
		j, ok := s.index[p.key]
		if !ok {
			continue
		}
		s.parts[j] = told(s.parts[j], outs[i])
		if outs[i].records {
			moved = append(moved, s.parts[j])
		}
	}
	if len(moved) > 0 {
		last := make(map[sessionKey]bool, len(moved))
		for _, p := range moved {
			last[p.key] = true
		}
		s.keep(func(p sessionPart) bool { return !last[p.key] })
		for _, p := range moved {
			s.index[p.key] = len(s.parts)
			s.parts = append(s.parts, p)
		}
	}
	return plan.id, include
}

// keep keeps the partitions of s that ok says, in order.
func (s *fetchSession) keep(ok func(sessionPart) bool) {
	out := s.parts[:0]
	for _, p := range s.parts {
		if ok(p) {
			out = append(out, p)
		}
	}
	clear(s.parts[len(out):])
	s.parts = out
	clear(s.index)
	for i, p := range s.parts {
		s.index[p.key] = i
	}
}

// create makes a session of parts (deduplicated: the last of a key
// wins), evicting one if the cache is full; 0: no session.
func (c *fetchSessions) create(owner string, parts []sessionPart, now time.Time) int32 {
	index := make(map[sessionKey]int, len(parts))
	uniq := parts[:0]
	for _, p := range parts {
		if i, ok := index[p.key]; ok {
			uniq[i] = p
			continue
		}
		index[p.key] = len(uniq)
		uniq = append(uniq, p)
	}
	if c.lim.maxSessions <= 0 || len(uniq) > c.lim.maxParts {
		return 0
	}
	if len(c.byID) >= c.lim.maxSessions {
		victim, ok := pickEviction(c.byID, len(uniq), now, c.lim.evictAfter)
		if !ok {
			return 0
		}
		c.remove(victim)
		c.stats.Evicted++
	}
	id := c.rnd()
	for c.byID[id] != nil || id <= 0 {
		id = c.rnd()
	}
	c.byID[id] = &fetchSession{id: id, owner: owner, epoch: 1, parts: uniq, index: index, created: now, used: now}
	c.parts += len(uniq)
	c.stats.Created++
	return id
}

// pickEviction is Kafka's eviction rule, for a new session of size
// partitions: the least recently used session when it is unused for
// evictAfter; else, among the sessions created more than evictAfter ago,
// the one with the fewest partitions (the least recently used of those)
// if it has fewer than size. False: nothing may be evicted.
func pickEviction(byID map[int32]*fetchSession, size int, now time.Time, evictAfter time.Duration) (int32, bool) {
	var lru, small *fetchSession
	for _, s := range byID {
		if lru == nil || s.used.Before(lru.used) || s.used.Equal(lru.used) && s.id < lru.id {
			lru = s
		}
		if now.Sub(s.created) <= evictAfter {
			continue
		}
		if small == nil || len(s.parts) < len(small.parts) ||
			len(s.parts) == len(small.parts) && (s.used.Before(small.used) || s.used.Equal(small.used) && s.id < small.id) {
			small = s
		}
	}
	switch {
	case lru == nil:
		return 0, false
	case now.Sub(lru.used) > evictAfter:
		return lru.id, true
	case small != nil && len(small.parts) < size:
		return small.id, true
	}
	return 0, false
}

// remove closes session id (if open).
func (c *fetchSessions) remove(id int32) {
	if s, ok := c.byID[id]; ok {
		c.parts -= len(s.parts)
		delete(c.byID, id)
	}
}

// counts are the open sessions and their partitions.
func (c *fetchSessions) counts() (sessions, parts int) {
	st := c.snapshot()
	return st.Open, st.Partitions
}

// snapshot returns the stats now.
func (c *fetchSessions) snapshot() FetchSessionStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.Open, st.Partitions = len(c.byID), c.parts
	return st
}

// FetchSessions counts the server's fetch sessions.
func (s *Server) FetchSessions() FetchSessionStats { return s.sessions.snapshot() }
