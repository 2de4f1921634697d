package postgres

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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

	mu      sync.Mutex // protects pending and all
	pending map[[2]int64]int64
	all     bool
}

func newNotifier(pool *pgxpool.Pool, channel string, log *slog.Logger) *notifier {
	return &notifier{pool: pool, channel: channel, log: log, wake: make(chan struct{}, 1),
		pending: make(map[[2]int64]int64)}
}

// add queues a commit's notice payload ("topic:partition:hw,..."); it
// never blocks.
func (n *notifier) add(payload string) {
	notice := ParsePayload(payload)
	n.mu.Lock()
	if notice.All || n.all || len(n.pending)+len(notice.Partitions) > maxPendingNotices {
		n.all = true
		clear(n.pending)
	} else {
		for _, p := range notice.Partitions {
			k := [2]int64{p.TopicID, int64(p.Partition)}
			n.pending[k] = max(n.pending[k], p.HighWatermark)
		}
	}
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
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

// notifySQL sends the payloads ($2) on the channel ($1) in one implicit
// transaction committed asynchronously (synchronous_commit off, for this
// transaction only): a NOTIFY gives its transaction an id, so committed
// synchronously it would wait for a WAL flush (an fsync) while holding
// NOTIFY's database-wide lock. A notice is no data: if the server crashes
// before the flush, the readers' polling finds the commits it announced.
const notifySQL = `SELECT pg_notify($1, p)
	FROM set_config('synchronous_commit', 'off', true) AS s, unnest($2::text[]) AS p`

// send takes everything pending and notifies it in one statement.
func (n *notifier) send(ctx context.Context) {
	payloads := n.take()
	if len(payloads) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	if _, err := n.pool.Exec(ctx, notifySQL, n.channel, payloads); err != nil {
		n.log.Warn("metadata: notices: notify failed; readers poll for the commits it announced",
			"channel", n.channel, "err", err)
	}
}

// take empties the pending set into payloads of at most maxNoticePayload
// bytes.
func (n *notifier) take() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.all {
		n.all = false
		clear(n.pending)
		return []string{"*"}
	}
	var (
		payloads []string
		buf      []byte
	)
	for k, hw := range n.pending {
		item := strconv.AppendInt(nil, k[0], 10)
		item = append(item, ':')
		item = strconv.AppendInt(item, k[1], 10)
		item = append(item, ':')
		item = strconv.AppendInt(item, hw, 10)
		if len(buf) > 0 && len(buf)+1+len(item) > maxNoticePayload {
			payloads = append(payloads, string(buf))
			buf = buf[:0]
		}
		if len(buf) > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, item...)
	}
	if len(buf) > 0 {
		payloads = append(payloads, string(buf))
	}
	clear(n.pending)
	return payloads
}
