package postgres

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/floe-broker/floe/metadata"
)

const (
	// maxPendingNotices bounds the partitions a notifier remembers between
	// two sends; past it the next send announces "*" (every partition).
	maxPendingNotices = 8192
	// maxNoticePayload is the largest notification sent (PostgreSQL's
	// limit is 8000 bytes).
	maxNoticePayload = 7000
	// notifyTimeout bounds one send, and the last one at Close.
	notifyTimeout = 5 * time.Second
	// maxChannelName is the longest channel name pg_notify takes.
	maxChannelName = 63
)

// notifier announces the commits made through one store after they
// committed, outside their transactions: a NOTIFY takes a database-wide
// lock until its transaction ends, so sent from inside every commit it
// serialises all commits of all agents. One goroutine sends, in one
// statement, the high watermarks of every commit since its last send
// (merged per partition), so the lock is taken once per send, by no
// commit. A failed send is logged and dropped: readers poll for what they
// miss.
type notifier struct {
	pool    *pgxpool.Pool
	channel string
	log     *slog.Logger
	wake    chan struct{} // capacity 1: something is pending

	mu      sync.Mutex // protects pending, all, refs, nrefs and noRefs
	pending map[[2]int64]int64
	all     bool
	// refs are the batches committed since the last send, per partition in
	// offset order (noticerefs.go); noRefs the partitions whose batches
	// were dropped (a bound passed, or out of order) until the next send.
	refs   map[[2]int64][]metadata.BatchRef
	nrefs  int
	noRefs map[[2]int64]bool
}

func newNotifier(pool *pgxpool.Pool, channel string, log *slog.Logger) *notifier {
	return &notifier{pool: pool, channel: channel, log: log, wake: make(chan struct{}, 1),
		pending: make(map[[2]int64]int64), refs: make(map[[2]int64][]metadata.BatchRef), noRefs: make(map[[2]int64]bool)}
}

// add queues a commit's notice payload ("topic:partition:hw,...") and the
// batches it committed (optional, refsOf); it never blocks.
func (n *notifier) add(payload string, refs ...metadata.BatchRef) {
	notice := ParsePayload(payload)
	n.mu.Lock()
	if notice.All || n.all || len(n.pending)+len(notice.Partitions) > maxPendingNotices {
		n.all = true
		clear(n.pending)
		n.clearRefsLocked()
	} else {
		for _, p := range notice.Partitions {
			k := [2]int64{p.TopicID, int64(p.Partition)}
			n.pending[k] = max(n.pending[k], p.HighWatermark)
		}
		for _, r := range refs {
			n.addRefLocked(r)
		}
	}
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// addRefLocked queues one committed batch, unless its partition's are
// dropped, or it would pass a bound or break the offset order (then its
// partition's are dropped until the next send). n.mu is held.
func (n *notifier) addRefLocked(r metadata.BatchRef) {
	k := [2]int64{r.TopicID, int64(r.Partition)}
	if n.noRefs[k] {
		return
	}
	have := n.refs[k]
	if len(have) >= maxPendingRefsPerPartition || n.nrefs >= maxPendingRefs ||
		(len(have) > 0 && have[len(have)-1].LastOffset >= r.BaseOffset) {
		n.nrefs -= len(have)
		delete(n.refs, k)
		n.noRefs[k] = true
		return
	}
	n.refs[k] = append(have, r)
	n.nrefs++
}

func (n *notifier) clearRefsLocked() {
	clear(n.refs)
	clear(n.noRefs)
	n.nrefs = 0
}

// run sends until ctx ends, then sends what is left once.
func (n *notifier) run(ctx context.Context) {
	for {
		select {
		case <-n.wake:
			n.send(ctx)
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.Background(), notifyTimeout)
			n.send(final)
			cancel()
			return
		}
	}
}

// notifySQL sends the payloads in one implicit
// transaction committed asynchronously (synchronous_commit off, for this
// transaction only): a NOTIFY gives its transaction an id, so committed
// synchronously it would wait for a WAL flush (an fsync) while holding
// NOTIFY's database-wide lock. A notice is no data: if the server crashes
// before the flush, the readers' polling finds the commits it announced.
// The payloads ($2) go out in order, each on its channel ($1).
const notifySQL = `SELECT pg_notify(c, p)
	FROM set_config('synchronous_commit', 'off', true) AS s, unnest($1::text[], $2::text[]) AS u(c, p)`

// send takes everything pending and notifies it in one statement: the
// batches first, so that a reader woken by the high watermarks finds them.
func (n *notifier) send(ctx context.Context) {
	channels, payloads := n.take()
	if len(payloads) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	if _, err := n.pool.Exec(ctx, notifySQL, channels, payloads); err != nil {
		n.log.Warn("metadata: notices: notify failed; readers poll for the commits it announced",
			"channel", n.channel, "err", err)
	}
}

// take empties the pending set into payloads of at most maxNoticePayload
// bytes and the channel of each: the batch notices, then the high
// watermarks.
func (n *notifier) take() (channels, payloads []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	defer n.clearRefsLocked()
	if n.all {
		n.all = false
		clear(n.pending)
		return []string{n.channel}, []string{"*"}
	}
	var buf []byte
	flush := func(channel string) {
		if len(buf) > 0 {
			channels, payloads = append(channels, channel), append(payloads, string(buf))
			buf = buf[:0]
		}
	}
	add := func(channel string, item []byte) {
		if len(buf) > 0 && len(buf)+1+len(item) > maxNoticePayload {
			flush(channel)
		}
		if len(buf) > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, item...)
	}
	var item []byte
	rc := refsChannel(n.channel)
	if len(rc) > maxChannelName {
		clear(n.refs) // PostgreSQL would refuse the channel name
	}
	for _, refs := range n.refs {
		for i := range refs {
			if item = appendRefItem(item[:0], &refs[i]); len(item) <= maxNoticePayload {
				add(rc, item)
			}
		}
	}
	flush(rc)
	for k, hw := range n.pending {
		item = strconv.AppendInt(item[:0], k[0], 10)
		item = append(item, ':')
		item = strconv.AppendInt(item, k[1], 10)
		item = append(item, ':')
		item = strconv.AppendInt(item, hw, 10)
		add(n.channel, item)
	}
	flush(n.channel)
	clear(n.pending)
	return channels, payloads
}
