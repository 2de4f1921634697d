// Package console is floe's read-only web console, served on the agent's
// HTTP port beside /metrics: topics with their partitions (log start, high
// watermark, bytes stored), consumer groups with their members and lag, a
// chart of each group's lag over the last minutes, and Iceberg tables once
// something provides them.
//
// The page (static/, embedded) is plain HTML, CSS and JavaScript with no
// external assets, so it works offline; it reads JSON from /console/api/.
// Every figure comes from the agent's own gRPC handlers, called in process
// through Source, so the console shows what `floe topic describe` and
// `floe lag` show. Nothing in the console writes: any method but GET and
// HEAD is refused.
package console

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

//go:embed static
var staticFS embed.FS

// Source is what the console reads: the read-only calls of the agent's
// TopicService and GroupService (*agent.Agent implements it).
type Source interface {
	ListTopics(context.Context, *floev1.ListTopicsRequest) (*floev1.ListTopicsResponse, error)
	DescribeTopic(context.Context, *floev1.DescribeTopicRequest) (*floev1.DescribeTopicResponse, error)
	ListGroups(context.Context, *floev1.ListGroupsRequest) (*floev1.ListGroupsResponse, error)
	DescribeGroup(context.Context, *floev1.DescribeGroupRequest) (*floev1.DescribeGroupResponse, error)
}

// IcebergTable is one Iceberg table as the console shows it.
type IcebergTable struct {
	Topic     string `json:"topic"`
	Namespace string `json:"namespace"`
	Table     string `json:"table"`
	// SnapshotID and SnapshotTime are of the table's last snapshot (zero
	// when it has none yet).
	SnapshotID   int64     `json:"snapshotId"`
	SnapshotTime time.Time `json:"snapshotTime"`
	// CompactionLagRecords: records of the topic not in the table yet;
	// CompactionLagMs: age of the oldest of them (0 when caught up).
	CompactionLagRecords int64 `json:"compactionLagRecords"`
	CompactionLagMs      int64 `json:"compactionLagMs"`
	// CompactionLagBytes: bytes of the log's batches not in the table yet.
	CompactionLagBytes int64 `json:"compactionLagBytes"`
	// Rows, DataFiles and DataBytes: the table's size at its last
	// snapshot the compactor saw.
	Rows      int64 `json:"rows"`
	DataFiles int64 `json:"dataFiles"`
	DataBytes int64 `json:"dataBytes"`
	// MaintainedTime: when the compactor last maintained the table (zero:
	// never).
	MaintainedTime time.Time `json:"maintainedTime"`
	// RejectedRows: rows of the topic's <topic>_rejected table (values
	// its value schema could not convert); 0 when it has none.
	RejectedRows int64 `json:"rejectedRows"`
}

// IcebergSource lists the Iceberg tables the compactor writes. It is
// optional: without one the console says that tables appear once the
// compactor writes them.
type IcebergSource interface {
	IcebergTables(ctx context.Context) ([]IcebergTable, error)
}

// Options configure a Console.
type Options struct {
	// Source returns the agent to read from, or nil while it is starting
	// (the API then answers 503).
	Source func() Source
	// Iceberg, optional, returns the Iceberg tables' source, or nil.
	Iceberg func() IcebergSource
	Logger  *slog.Logger
	// SampleInterval is the period of the lag samples (default 5 s);
	// History the samples kept per group (default 120: ten minutes).
	SampleInterval time.Duration
	History        int
	// MaxTopics and MaxGroups bound what one answer describes and how
	// many groups the lag history follows (default 500 each).
	MaxTopics, MaxGroups int
	// RequestTimeout bounds the calls of one API request or one sample
	// (default 10 s).
	RequestTimeout time.Duration
	// IdleAfter stops the lag samples this long after the API was last
	// read, so that agents nobody watches do not describe every group
	// every few seconds (default 15 min; negative: sample always).
	IdleAfter time.Duration
}

// Defaults of Options.
const (
	DefaultSampleInterval = 5 * time.Second
	DefaultHistory        = 120
	DefaultMaxTopics      = 500
	DefaultMaxGroups      = 500
	DefaultRequestTimeout = 10 * time.Second
	DefaultIdleAfter      = 15 * time.Minute
)

// Console is an http.Handler for /console/ that samples group lag in the
// background until Close.
type Console struct {
	opts    Options
	log     *slog.Logger
	mux     *http.ServeMux
	history *history
	// lastRead is when the API was last read (unix ns), for IdleAfter.
	lastRead atomic.Int64
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the sampler
}

// New starts a console: its lag sampler runs until Close.
func New(opts Options) *Console {
	if opts.Source == nil {
		opts.Source = func() Source { return nil }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.SampleInterval <= 0 {
		opts.SampleInterval = DefaultSampleInterval
	}
	if opts.History <= 0 {
		opts.History = DefaultHistory
	}
	if opts.MaxTopics <= 0 {
		opts.MaxTopics = DefaultMaxTopics
	}
	if opts.MaxGroups <= 0 {
		opts.MaxGroups = DefaultMaxGroups
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.IdleAfter == 0 {
		opts.IdleAfter = DefaultIdleAfter
	}
	c := &Console{opts: opts, log: opts.Logger, history: newHistory(opts.History, opts.MaxGroups)}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // a constant, valid path
	}
	c.mux = http.NewServeMux()
	files := http.StripPrefix("/console/static/", http.FileServer(http.FS(static)))
	c.mux.HandleFunc("/console/static/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no folder listings
			return
		}
		files.ServeHTTP(w, r)
	})
	c.mux.HandleFunc("/console/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	c.mux.HandleFunc("/console/api/topics", c.apiTopics)
	c.mux.HandleFunc("/console/api/groups", c.apiGroups)
	c.mux.HandleFunc("/console/api/lag", c.apiLag)
	c.mux.HandleFunc("/console/api/iceberg", c.apiIceberg)
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.sample(ctx)
	}()
	return c
}

// Close stops the lag sampler and waits for it.
func (c *Console) Close() {
	c.cancel()
	c.wg.Wait()
}

// ServeHTTP serves the page, its assets and the API, GET and HEAD only.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the console is read-only", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	// Only the console's own files, no inline script or style.
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if strings.HasPrefix(r.URL.Path, "/console/api/") {
		h.Set("Cache-Control", "no-store")
		c.lastRead.Store(time.Now().UnixNano())
	}
	c.mux.ServeHTTP(w, r)
}

// source returns the agent, nil while it starts.
func (c *Console) source() Source { return c.opts.Source() }
