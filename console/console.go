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
	"fmt"
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

// IcebergTopicsSource is an IcebergSource that can describe the tables of
// some topics only: the console then describes only the topics of the
// page asked for (TopicTables is one).
type IcebergTopicsSource interface {
	IcebergSource
	IcebergTablesOf(ctx context.Context, topics []string) ([]IcebergTable, error)
}

// Options configure a Console.
type Options struct {
	// Source returns the agent to read from, or nil while it is starting
	// (the API then answers 503).
	Source func() Source
	// Iceberg, optional, returns the Iceberg tables' source, or nil.
	Iceberg func() IcebergSource
	Logger  *slog.Logger
	// SampleInterval is the period of the background passes that sample
	// group lag and the summary's figures (default 5 s); History the lag
	// samples kept per group (default 120: ten minutes).
	SampleInterval time.Duration
	History        int
	// MaxTopics bounds the topics the Iceberg section describes and
	// MaxGroups the groups whose lag history is kept (default 500 each).
	MaxTopics, MaxGroups int
	// PassTopics, PassPartitions and PassGroups bound one background
	// pass: it describes at most PassTopics topics holding at most
	// PassPartitions partitions together (at least one topic), and
	// PassGroups groups, taking up where the last pass stopped, so that a
	// pass's work does not grow with the number of topics, partitions or
	// groups (defaults 200, 200,000 and 200). A page of the topics list
	// describes at most PassPartitions partitions too; the topics past
	// that show the last pass's figures.
	PassTopics, PassPartitions, PassGroups int
	// MaxInFlight bounds the API requests served at once; the next is
	// refused with 429 (default 16).
	MaxInFlight int
	// RequestTimeout bounds the calls of one API request or one sample
	// (default 10 s).
	RequestTimeout time.Duration
	// IdleAfter stops the background passes this long after the API was
	// last read, so that agents nobody watches do not describe every
	// group every few seconds (default 15 min; negative: sample always).
	IdleAfter time.Duration
}

// Defaults of Options.
const (
	DefaultSampleInterval = 5 * time.Second
	DefaultHistory        = 120
	DefaultMaxTopics      = 500
	DefaultMaxGroups      = 500
	DefaultPassTopics     = 200
	DefaultPassPartitions = 200_000
	DefaultPassGroups     = 200
	DefaultMaxInFlight    = 16
	DefaultRequestTimeout = 10 * time.Second
	DefaultIdleAfter      = 15 * time.Minute
)

// Page sizes of the API: lists of topics and groups, and one topic's or
// group's partitions.
const (
	defaultListLimit      = 50
	maxListLimit          = 500
	defaultPartitionLimit = 1000
	maxPartitionLimit     = 10000
)

// Console is an http.Handler for /console/ that samples group lag and the
// summary in the background until Close.
type Console struct {
	opts    Options
	log     *slog.Logger
	mux     *http.ServeMux
	history *history
	sums    *figures
	// inFlight holds a token per API request being served (MaxInFlight).
	inFlight chan struct{}
	// lastRead is when the API was last read (unix ns), for IdleAfter.
	lastRead atomic.Int64
	// wake starts a pass at once when the API is read after an idle time.
	wake   chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup // the sampler
}

func (o *Options) setDefaults() {
	if o.Source == nil {
		o.Source = func() Source { return nil }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.History, DefaultHistory)
	def(&o.MaxTopics, DefaultMaxTopics)
	def(&o.MaxGroups, DefaultMaxGroups)
	def(&o.PassTopics, DefaultPassTopics)
	def(&o.PassPartitions, DefaultPassPartitions)
	def(&o.PassGroups, DefaultPassGroups)
	def(&o.MaxInFlight, DefaultMaxInFlight)
	if o.SampleInterval <= 0 {
		o.SampleInterval = DefaultSampleInterval
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.IdleAfter == 0 {
		o.IdleAfter = DefaultIdleAfter
	}
}

// New starts a console: its sampler runs until Close.
func New(opts Options) *Console {
	opts.setDefaults()
	c := &Console{opts: opts, log: opts.Logger, history: newHistory(opts.History, opts.MaxGroups), sums: newFigures(),
		inFlight: make(chan struct{}, opts.MaxInFlight), wake: make(chan struct{}, 1)}
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
	c.mux.HandleFunc("/console/api/summary", c.apiSummary)
	c.mux.HandleFunc("/console/api/topics", c.apiTopics)
	c.mux.HandleFunc("/console/api/topic", c.apiTopic)
	c.mux.HandleFunc("/console/api/groups", c.apiGroups)
	c.mux.HandleFunc("/console/api/group", c.apiGroup)
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

// ServeHTTP serves the page, its assets and the API, GET and HEAD only,
// at most MaxInFlight API requests at once.
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
		select {
		case c.inFlight <- struct{}{}:
			defer func() { <-c.inFlight }()
		default:
			h.Set("Retry-After", "1")
			c.replyError(w, http.StatusTooManyRequests, fmt.Sprintf("too many console requests in flight (max_in_flight %d): retry", c.opts.MaxInFlight), nil)
			return
		}
		now := time.Now()
		if last := c.lastRead.Swap(now.UnixNano()); c.opts.IdleAfter > 0 && now.Sub(time.Unix(0, last)) > c.opts.IdleAfter {
			select { // the passes had stopped: one now, not an interval later
			case c.wake <- struct{}{}:
			default:
			}
		}
	}
	c.mux.ServeHTTP(w, r)
}

// source returns the agent, nil while it starts.
func (c *Console) source() Source { return c.opts.Source() }

// maxTopicPages bounds the ListTopics pages one console answer follows (the
// agent's topic limit is 10,000 by default, 1,000 a page).
const maxTopicPages = 100

// listTopics lists every topic, following the agent's ListTopics pages.
func listTopics(ctx context.Context, src Source) (*floev1.ListTopicsResponse, error) {
	all := &floev1.ListTopicsResponse{}
	req := &floev1.ListTopicsRequest{}
	for range maxTopicPages {
		page, err := src.ListTopics(ctx, req)
		if err != nil {
			return nil, err
		}
		all.Topics = append(all.Topics, page.GetTopics()...)
		if page.GetNextPageToken() == "" {
			return all, nil
		}
		req = &floev1.ListTopicsRequest{PageToken: page.GetNextPageToken()}
	}
	return all, nil
}
