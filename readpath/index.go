package readpath

import (
	"container/list"
	"sort"
	"sync"

	"github.com/floe-broker/floe/metadata"
)

// maxRefsPerPartition bounds the batches the index keeps for one partition.
const maxRefsPerPartition = 64

// Index remembers, for the partitions this agent reads, the high
// watermark and the latest batches it knows of. It is fed by commit
// notices (high watermarks of every agent's commits, and their batches
// when the store announces them), by OnCommit (this agent's own batches,
// in full) and by the results of the queries it could
// not answer. A reader at the high watermark, or reading batches the index
// holds, is answered without a query; a query is needed only when the
// index knows of newer data it does not hold.
//
// An entry is trusted ("known") only while notices flow: its state came
// from a query made after the notice stream was (re)established, and every
// notice since has been applied. A notice with All set (a reconnect, or a
// lagging receiver), or the stream breaking, withdraws that trust until
// the next query; the agent also re-reads the high watermarks of the
// tracked topics every IndexPollInterval in case a notice was lost.
type Index struct {
	maxParts, maxRefs int

	mu       sync.Mutex // protects everything below
	live     bool       // notices are being applied
	gen      uint64     // bumped whenever knowledge may have been lost
	parts    map[Key]*list.Element
	lru      *list.List    // of *indexEntry, front = most recently used
	nrefs    int           // refs held across entries
	perTopic map[int64]int // entries per topic
}

type indexEntry struct {
	key      Key
	hw       int64 // highest high watermark heard of
	logStart int64
	known    bool                // hw and logStart are current (see index)
	refs     []metadata.BatchRef // contiguous batches, oldest first
}

// NewIndex returns an index of at most maxParts partitions and maxRefs
// batch references in all; it answers nothing until SetLive(true).
func NewIndex(maxParts, maxRefs int) *Index {
	return &Index{maxParts: maxParts, maxRefs: maxRefs, parts: make(map[Key]*list.Element), lru: list.New(),
		perTopic: make(map[int64]int)}
}

// Lookup answers a FindBatches from the index when it can: at the known
// high watermark (no batches), or from held batches containing offset.
func (x *Index) Lookup(k Key, offset, maxBytes int64) ([]metadata.BatchRef, metadata.PartitionState, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	el, ok := x.parts[k]
	if !ok || !x.live {
		return nil, metadata.PartitionState{}, false
	}
	e := el.Value.(*indexEntry)
	if !e.known || offset < e.logStart || offset > e.hw {
		return nil, metadata.PartitionState{}, false
	}
	x.lru.MoveToFront(el)
	st := metadata.PartitionState{Partition: k.Part, LogStartOffset: e.logStart, HighWatermark: e.hw}
	if offset == e.hw {
		return nil, st, true
	}
	i := sort.Search(len(e.refs), func(i int) bool { return e.refs[i].LastOffset >= offset })
	if i == len(e.refs) || e.refs[i].BaseOffset > offset {
		return nil, st, false
	}
	var out []metadata.BatchRef
	var sum int64
	stale := indexStaleBefore()
	for _, r := range e.refs[i:] {
		if r.LogAppendTime > 0 && r.LogAppendTime < stale {
			return nil, metadata.PartitionState{}, false // may have been merged away (see indexRefMaxAge)
		}
		out = append(out, r)
		if sum += r.ByteLength; sum >= maxBytes {
			break
		}
	}
	return out, st, true
}

// Begin registers a query about to be made for k: notices for k are
// tracked from now on. Pass the result to Stored.
func (x *Index) Begin(k Key) uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.entry(k)
	return x.gen
}

// Stored records a query's answer, begun with Begin at generation gen.
func (x *Index) Stored(k Key, gen uint64, refs []metadata.BatchRef, st metadata.PartitionState) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entry(k)
	e.hw = max(e.hw, st.HighWatermark)
	e.logStart = st.LogStartOffset
	if gen == x.gen && x.live {
		e.known = true
	}
	x.addRefs(e, refs)
}

// Notice applies a commit notice.
func (x *Index) Notice(n metadata.Notice) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if n.All {
		x.forgetLocked()
		return
	}
	for _, p := range n.Partitions {
		if el, ok := x.parts[Key{p.TopicID, p.Partition}]; ok {
			e := el.Value.(*indexEntry)
			e.hw = max(e.hw, p.HighWatermark)
		}
	}
	// The batches the notice carries (another agent's commits): held like
	// this agent's own, so that their readers need no query.
	for i := 0; i < len(n.Batches); {
		j := i + 1
		for j < len(n.Batches) && n.Batches[j].TopicID == n.Batches[i].TopicID && n.Batches[j].Partition == n.Batches[i].Partition {
			j++
		}
		if el, ok := x.parts[Key{n.Batches[i].TopicID, n.Batches[i].Partition}]; ok {
			x.addRefs(el.Value.(*indexEntry), contiguous(n.Batches[i:j]))
		}
		i = j
	}
}

// contiguous returns the leading refs of one partition that follow each
// other without a gap. A notice's batches for a partition are one agent's
// commits; another agent's commits of the same partition may lie between
// them, and held as one run they would let a reader skip those offsets
// (the reader's checks look at each run on its own).
func contiguous(refs []metadata.BatchRef) []metadata.BatchRef {
	for k := 1; k < len(refs); k++ {
		if refs[k].BaseOffset != refs[k-1].LastOffset+1 {
			return refs[:k]
		}
	}
	return refs
}

// Committed applies this agent's own committed batches (refs of one
// partition in offset order, any partitions).
func (x *Index) Committed(refs []metadata.BatchRef) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, r := range refs {
		el, ok := x.parts[Key{r.TopicID, r.Partition}]
		if !ok {
			continue // nobody reads it here
		}
		e := el.Value.(*indexEntry)
		e.hw = max(e.hw, r.LastOffset+1)
		x.addRefs(e, []metadata.BatchRef{r})
	}
}

// SetLive records whether notices are being applied. Either way, what was
// learnt before is no longer trusted.
func (x *Index) SetLive(live bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.forgetLocked()
	x.live = live
}

// Live reports whether the index follows commit notices (SetLive).
func (x *Index) Live() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.live
}

// Polled applies a topic's partition states read from the store and
// returns the partitions whose high watermark grew.
func (x *Index) Polled(topicID int64, states []metadata.PartitionState) []metadata.PartitionNotice {
	x.mu.Lock()
	defer x.mu.Unlock()
	var grew []metadata.PartitionNotice
	for _, st := range states {
		el, ok := x.parts[Key{topicID, st.Partition}]
		if !ok {
			continue
		}
		e := el.Value.(*indexEntry)
		if st.HighWatermark > e.hw {
			e.hw = st.HighWatermark
			grew = append(grew, metadata.PartitionNotice{TopicID: topicID, Partition: st.Partition, HighWatermark: st.HighWatermark})
		}
		e.logStart = max(e.logStart, st.LogStartOffset)
	}
	return grew
}

// Topics returns the topics the index tracks.
func (x *Index) Topics() []int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]int64, 0, len(x.perTopic))
	for t := range x.perTopic {
		out = append(out, t)
	}
	return out
}

// Watches reports whether the index tracks topicID while notices flow: it
// then re-reads the topic every IndexPollInterval and drops it once gone.
func (x *Index) Watches(topicID int64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.live && x.perTopic[topicID] > 0
}

// DropTopic forgets a topic's partitions (it no longer exists) and
// returns them.
func (x *Index) DropTopic(topicID int64) []metadata.PartitionNotice {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []metadata.PartitionNotice
	for k, el := range x.parts {
		if k.Topic == topicID {
			x.removeLocked(el)
			out = append(out, metadata.PartitionNotice{TopicID: k.Topic, Partition: k.Part})
		}
	}
	return out
}

// forgetLocked withdraws trust from every entry (their refs stay: committed
// batches do not change).
func (x *Index) forgetLocked() {
	x.gen++
	for _, el := range x.parts {
		el.Value.(*indexEntry).known = false
	}
}

// entry returns k's entry, creating it (and evicting the least recently
// used one past maxParts).
func (x *Index) entry(k Key) *indexEntry {
	if el, ok := x.parts[k]; ok {
		x.lru.MoveToFront(el)
		return el.Value.(*indexEntry)
	}
	for len(x.parts) >= x.maxParts {
		x.removeLocked(x.lru.Back())
		x.gen++ // a query in flight for the evicted partition missed its notices
	}
	e := &indexEntry{key: k}
	x.parts[k] = x.lru.PushFront(e)
	x.perTopic[k.Topic]++
	return e
}

func (x *Index) removeLocked(el *list.Element) {
	e := el.Value.(*indexEntry)
	x.lru.Remove(el)
	delete(x.parts, e.key)
	x.nrefs -= len(e.refs)
	if x.perTopic[e.key.Topic]--; x.perTopic[e.key.Topic] == 0 {
		delete(x.perTopic, e.key.Topic)
	}
}

// addRefs extends e's contiguous run with the batches of refs past its
// end; refs that start a later run replace it; older ones are ignored.
func (x *Index) addRefs(e *indexEntry, refs []metadata.BatchRef) {
	if n := len(e.refs); n > 0 {
		end := e.refs[n-1].LastOffset
		for len(refs) > 0 && refs[0].LastOffset <= end {
			refs = refs[1:]
		}
		if len(refs) > 0 && refs[0].BaseOffset != end+1 {
			x.nrefs -= n
			e.refs = nil
		}
	}
	if len(refs) == 0 {
		return
	}
	e.refs = append(e.refs, refs...)
	x.nrefs += len(refs)
	if over := len(e.refs) - maxRefsPerPartition; over > 0 {
		e.refs = append([]metadata.BatchRef(nil), e.refs[over:]...)
		x.nrefs -= over
	}
	// Past the global bound, the least recently used partitions lose
	// their batches first (e, just used, last).
	for el := x.lru.Back(); x.nrefs > x.maxRefs && el != nil; el = el.Prev() {
		o := el.Value.(*indexEntry)
		drop := min(len(o.refs), x.nrefs-x.maxRefs)
		o.refs = append([]metadata.BatchRef(nil), o.refs[drop:]...)
		x.nrefs -= drop
	}
}
