// Command floe-bench measures floe's throughput, latency and cost against
// the limits of the machine (raw object-store PUT/GET, raw metadata commits)
// and, with -peer, against NATS JetStream or Apache Kafka (-systems: side
// by side with floe over its Kafka listener). It is a separate binary so that
// the broker (bin/floe) links neither the harness nor the NATS client nor the
// process launchers that run `go install` and `initdb`.
//
// With -start it runs the floe binary it finds next to itself (bin/floe
// beside bin/floe-bench, as `make build` leaves them), on the PATH, or at
// -floe.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/bench"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/services"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

const benchUsage = `usage: floe-bench [flags]

Measures floe's throughput, latency and cost against the limits of the
machine (raw object-store PUT/GET, raw metadata commits) and, with -peer,
against NATS JetStream or Apache Kafka; -systems prints floe over Kafka,
floe over gRPC and Apache Kafka side by side. Either drive a deployment (-addr, -metrics) or
start one (-start dev|cluster) with the floe binary (-floe). See
docs/benchmarks.md.

`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := runBench(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(os.Stderr, "floe-bench: "+strings.Join(strings.Fields(err.Error()), " "))
		}
		os.Exit(1)
	}
}

// errUsage means the usage text was already printed.
var errUsage = errors.New("usage")

// findFloe returns the floe binary -start runs: flagPath if set, else
// "floe" in the folder of this executable, else "floe" on the PATH.
func findFloe(flagPath string) (string, error) {
	if flagPath != "" {
		if fi, err := os.Stat(flagPath); err != nil || fi.IsDir() {
			return "", fmt.Errorf("flag -floe: %q is not a file", flagPath)
		}
		return filepath.Abs(flagPath)
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "floe")
		if fi, err := os.Stat(beside); err == nil && !fi.IsDir() {
			return beside, nil
		}
	}
	if p, err := exec.LookPath("floe"); err == nil {
		return filepath.Abs(p)
	}
	return "", errors.New("no floe binary beside floe-bench or on the PATH: run `make build` or pass -floe")
}

// runBench is floe-bench with its arguments.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("floe-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, benchUsage)
		fs.PrintDefaults()
	}
	rc := bench.DefaultRunConfig()
	sc := bench.DefaultSuiteConfig()
	dc := bench.DefaultDeployConfig()
	bd := batcher.DefaultConfig()
	addrs := fs.String("addr", "", "agents' gRPC addresses to drive, comma separated (instead of -start)")
	metrics := fs.String("metrics", "", "agents' /metrics addresses (host:port), comma separated")
	floeFlag := fs.String("floe", "", "the floe binary -start runs (default: floe beside floe-bench, else on the PATH)")
	start := fs.String("start", "", "start a deployment: dev (floe dev: local directory + SQLite) or cluster (PostgreSQL + versitygw + -agents agents)")
	fs.IntVar(&dc.Agents, "agents", dc.Agents, "agents of -start cluster")
	pgDurable := fs.Bool("postgres-fsync", true, "-start cluster: PostgreSQL with fsync and synchronous commit on")
	signed := fs.Bool("s3-signed-payload", false, "-start cluster: the agents and the raw PUT probe sign each PUT body's SHA-256 (SigV4 over plain HTTP, the figures before December 6); default UNSIGNED-PAYLOAD with a CRC-32C header, as PUTs to an https:// store cost")
	storeDir := fs.String("s3-dir", "", "-start cluster: the folder the S3 server keeps its objects under (default the system's temporary folder; /dev/shm keeps their writeback off PostgreSQL's disk)")
	fs.BoolVar(&dc.TLS, "tls", false, "-start: the agents serve gRPC over TLS (a throwaway CA's certificate) and the harness dials with TLS; compare its server CPU per MiB with a run without, at the same -rate")
	tlsCA := fs.String("tls-ca", "", "-addr: dial the agents with TLS, trusting this PEM CA file")
	workload := fs.String("workload", string(rc.Workload), "produce, e2e (produce and consume: end-to-end latency) or catchup (read a backlog from the start)")
	fs.IntVar(&rc.RecordSize, "record-size", rc.RecordSize, "record value size in bytes (floe adds an 8-byte key)")
	fs.IntVar(&rc.Partitions, "partitions", rc.Partitions, "partitions of the topic created for each run (1 to 10000)")
	fs.IntVar(&rc.Producers, "producers", rc.Producers, "producers (connections)")
	fs.IntVar(&rc.Consumers, "consumers", rc.Consumers, "consumers of the e2e and catchup workloads")
	fs.Float64Var(&rc.Rate, "rate", rc.Rate, "target records per second, all producers together (open loop); 0 = as fast as acknowledged")
	fs.DurationVar(&rc.Duration, "duration", rc.Duration, "measured time of each run")
	fs.DurationVar(&rc.Warmup, "warmup", rc.Warmup, "unmeasured time before each run's window")
	fs.IntVar(&rc.MaxBatch, "max-batch", rc.MaxBatch, "records per produce request at most")
	tick := fs.Duration("tick", 0, "producer-side batching: least time between two requests of a producer (0: linger/25, within [1ms, 10ms])")
	maxInFlight := fs.Int("max-inflight", 48, "unanswered produce requests per producer (JetStream: this × -max-batch messages, at most 4096)")
	floeAffinity := fs.Bool("floe-affinity", false, "floe: partition affinity: each producer sends each partition's batches to the agent that DescribePlacement prefers for it (one request per agent), so that one agent writes each partition; consumers read each partition from that agent too")
	floeRecords := fs.Bool("floe-records", false, "floe: produce and consume through the per-record API instead of the batch data plane (for comparison)")
	backlogMB := fs.Int64("backlog-mb", rc.BacklogBytes/1e6, "catchup: backlog to write then read, MB (more than the agents' read cache, to measure the reads)")
	fs.IntVar(&rc.Rereads, "catchup-rereads", 0, "catchup: read the backlog this many times more after the measured read, unmeasured (to profile the read path)")
	fs.DurationVar(&dc.Linger, "linger", dc.Linger, "agents' linger (passed to agents it starts; tell it the deployment's for -addr)")
	fs.IntVar(&dc.MaxFileBytes, "max-file-bytes", dc.MaxFileBytes, "agents' max file size (as -linger)")
	fs.Int64Var(&dc.MaxBufferedBytes, "max-buffered-bytes", dc.MaxBufferedBytes, "agents' buffered-bytes bound (as -linger)")
	fs.Int64Var(&dc.CacheBytes, "cache-bytes", dc.CacheBytes, "agents' read cache (as -linger)")
	fs.BoolVar(&sc.Sweep, "sweep", false, "raise the rate through -sweep-steps until latency breaks: the latency-throughput curve")
	steps := fs.String("sweep-steps", joinFloats(sc.SweepSteps), "sweep rates, percent of floe's closed-loop maximum")
	fs.DurationVar(&sc.SweepMaxP99, "sweep-max-p99", sc.SweepMaxP99, "a sweep stops at the first rate whose produce p99 exceeds this; -systems: the p99 a rate must keep to count as sustained")
	peer := fs.String("peer", "", "run a peer side by side: jetstream (nats-server, file storage, on loopback), kafka or kafka-flush (Apache Kafka 4.1, one KRaft broker on loopback from the cached jars; kafka-flush: flush.messages=1)")
	systems := fs.String("systems", "", "instead of the suite, a side-by-side table of floe-kafka, floe-grpc, kafka, kafka-flush (comma separated): max ingest (closed loop), the maximum sustained open-loop rate (searched down from it), produce p99 and CPU per MiB at half of that, catch-up read, each")
	kafkaAddrs := fs.String("kafka-addrs", "", "-addr: the agents' Kafka listeners (host:port), comma separated, for -systems floe-kafka")
	kafkaInFlight := fs.Int("kafka-inflight", 1, "Kafka-protocol systems (floe-kafka, kafka, kafka-flush): produce requests in flight per broker per producer; 1: idempotent (franz-go allows no more), 2..5: idempotence off (acks=all still), requests pipelined like the Java client's default 5")
	peerSync := fs.String("peer-sync", "always", "JetStream sync_interval: always (fsync before the ack, like floe's object PUT) or default (the server's: every 2 min)")
	peerURL := fs.String("peer-url", "", "an existing NATS server to use as the peer instead of starting one")
	fs.DurationVar(&sc.LimitsDuration, "limits-duration", sc.LimitsDuration, "time of each raw limit probe; 0 skips the limits")
	limitsDir := fs.String("limits-dir", "", "-addr: probe raw PUT/GET on this directory (the agents' disk)")
	limitsSQLite := fs.String("limits-sqlite", "", "-addr: probe raw commits on a SQLite file at this path")
	limitsPG := fs.String("limits-postgres-url", "", "-addr: probe raw commits on this PostgreSQL database (creates and drops a table)")
	var s3c s3store.Config = s3store.DefaultConfig()
	fs.StringVar(&s3c.Bucket, "limits-s3-bucket", "", "-addr: probe raw PUT/GET on this S3 bucket")
	fs.StringVar(&s3c.Endpoint, "limits-s3-endpoint", "", "-addr: S3 endpoint of -limits-s3-bucket")
	fs.StringVar(&s3c.AccessKey, "limits-s3-access-key", "", "-addr: S3 access key")
	fs.StringVar(&s3c.SecretKey, "limits-s3-secret-key", "", "-addr: S3 secret key")
	out := fs.String("out", "", "write report.json, report.md and latency.svg into this folder")
	topic := fs.String("topic", "bench", "prefix of the topics the runs create")
	topicConfig := fs.String("topic-config", "", "floe: config of the topics the runs create, k=v,k=v; with retention.raw.ms, a catchup run waits for the raw files to age out and reads the Iceberg table")
	quiet := fs.Bool("quiet", false, "no progress line")
	cpuprofile := fs.String("cpuprofile", "", "write the harness's CPU profile (floe-bench itself: producers, consumers) to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("flag: unexpected argument %q", fs.Arg(0))
	}
	var names []string
	if *systems != "" {
		if names, err = parseSystems(*systems); err != nil {
			return err
		}
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("cpu profile: %w", cerr)
			}
		}()
	}
	rc.Workload = bench.Workload(*workload)
	rc.Tick = *tick
	if rc.Tick == 0 {
		rc.Tick = min(max(dc.Linger/25, time.Millisecond), 10*time.Millisecond)
	}
	rc.Topic = *topic
	rc.BacklogBytes = *backlogMB * 1e6
	if sc.SweepSteps, err = parseFloats(*steps); err != nil {
		return fmt.Errorf("flag -sweep-steps: %w", err)
	}
	sc.Run = rc
	sc.Linger, sc.MaxFileBytes, sc.MaxBufferedBytes, sc.CacheBytes = dc.Linger, dc.MaxFileBytes, dc.MaxBufferedBytes, dc.CacheBytes
	sc.UploadConcurrency = bd.MaxConcurrentUploads
	sc.Command = "floe-bench " + strings.Join(args, " ")
	dc.PostgresDurable = *pgDurable
	dc.StoreDir = *storeDir
	dc.SignedPayload = *signed
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sc.Logger, dc.Logger = log, log
	if !*quiet {
		sc.Progress = bench.NewProgress(stderr, isTerminal(stderr))
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fmt.Errorf("flag -out: %w", err)
		}
	}

	var t bench.Targets
	fc := bench.FloeConfig{RecordSize: rc.RecordSize, MaxInFlight: *maxInFlight, Records: *floeRecords, Affinity: *floeAffinity}
	switch {
	case *start != "" && *addrs != "":
		return errors.New("flags -start and -addr exclude each other")
	case *start == "dev" || *start == "cluster":
		exe, err := findFloe(*floeFlag)
		if err != nil {
			return err
		}
		dc.Executable = exe
		sc.Progress.Note("starting %s deployment", *start)
		var d *bench.Deployment
		if *start == "dev" {
			d, err = bench.StartDev(ctx, dc)
			sc.Deployment = "floe dev (local directory + SQLite)"
		} else {
			d, err = bench.StartCluster(ctx, dc)
			sc.Deployment = fmt.Sprintf("%d floe agents on PostgreSQL 15 + versitygw S3 (loopback)", dc.Agents)
		}
		if err != nil {
			return err
		}
		defer d.Stop()
		fc.Addrs, fc.MetricsAddrs, fc.TLS = d.Addrs, d.MetricsAddrs, d.ClientTLS
		rc.ServicePids, sc.Run.ServicePids = d.ServicePids, d.ServicePids
		*kafkaAddrs = strings.Join(d.KafkaAddrs, ",")
		if dc.TLS {
			sc.Deployment += ", gRPC over TLS"
		}
		t.ProbeStore, t.ProbeStoreName = d.ProbeStore, d.ProbeStoreName
		t.ProbeCommitter, t.ProbeCommitName = d.ProbeCommitter, d.ProbeCommitName
		t.BeforeRead = d.Restart
		defer func() {
			if err != nil {
				fmt.Fprint(stderr, d.AgentLogs())
			}
		}()
	case *start != "":
		return fmt.Errorf("flag -start: %q is neither dev nor cluster", *start)
	case *addrs != "":
		fc.Addrs = splitList(*addrs)
		fc.MetricsAddrs = splitList(*metrics)
		sc.Deployment = fmt.Sprintf("existing deployment at %s", *addrs)
		if *tlsCA != "" {
			if fc.TLS, err = client.TLSConfig(*tlsCA, "", ""); err != nil {
				return fmt.Errorf("flag -tls-ca: %w", err)
			}
			sc.Deployment += ", gRPC over TLS"
		}
		if t.ProbeStore, t.ProbeStoreName, err = probeStoreFlags(ctx, *limitsDir, s3c); err != nil {
			return err
		}
		if t.ProbeCommitter, t.ProbeCommitName, err = probeCommitFlags(ctx, *limitsSQLite, *limitsPG); err != nil {
			return err
		}
		if t.ProbeCommitter != nil {
			defer t.ProbeCommitter.Close()
		}
	default:
		return errors.New("flag -start dev|cluster or -addr is required")
	}
	if fc.TopicConfig, err = parseTopicConfig(*topicConfig); err != nil {
		return err
	}
	floe, err := bench.NewFloeSystem(fc)
	if err != nil {
		return err
	}
	defer floe.Close()
	t.Floe = floe
	if _, ok := fc.TopicConfig["retention.raw.ms"]; ok {
		restart := t.BeforeRead
		t.BeforeRead = func(ctx context.Context) error {
			sc.Progress.Note("waiting for the raw files to age out into the table")
			if err := floe.WaitRawAged(ctx, 3*time.Minute); err != nil {
				return err
			}
			if restart != nil {
				return restart(ctx)
			}
			return nil
		}
	}

	switch *peer {
	case "":
	case "jetstream":
		url, pid := *peerURL, 0
		if url == "" {
			ncfg := services.DefaultNATSConfig()
			if ncfg.SyncInterval = *peerSync; *peerSync == "default" {
				ncfg.SyncInterval = ""
			}
			sc.Progress.Note("starting nats-server (JetStream, file storage, sync_interval %s)", *peerSync)
			n, err := services.StartNATS(ctx, ncfg, log)
			if err != nil {
				return err
			}
			defer n.Stop()
			url, pid = n.URL, n.Pid()
		}
		js, err := bench.NewJetStreamSystem(bench.JetStreamConfig{URL: url, Pid: pid, RecordSize: rc.RecordSize,
			MaxPending: min(*maxInFlight*rc.MaxBatch, 4096)})
		if err != nil {
			return err
		}
		defer js.Close()
		t.Peer = js
	case "kafka", "kafka-flush":
		ks, stop, err := kafkaPeer(ctx, *peer, *peer == "kafka-flush", rc, min(*maxInFlight*rc.MaxBatch, 1<<16), *kafkaInFlight, log, sc.Progress)
		if err != nil {
			return err
		}
		defer stop()
		t.Peer = ks
	default:
		return fmt.Errorf("flag -peer: %q is not a known peer (jetstream, kafka, kafka-flush)", *peer)
	}

	if *systems != "" {
		probe := &bench.CompareProbe{Store: t.ProbeStore, StoreName: t.ProbeStoreName, Committer: t.ProbeCommitter, CommitName: t.ProbeCommitName,
			Concurrency: sc.UploadConcurrency, Duration: sc.LimitsDuration, Linger: sc.Linger}
		return runCompare(ctx, names, floe, splitList(*kafkaAddrs), t, probe, rc, sc.SweepMaxP99, min(*maxInFlight*rc.MaxBatch, 1<<16), *kafkaInFlight,
			sc.Command, log, sc.Progress, stdout, stderr, *out)
	}

	rep, err := bench.RunSuite(ctx, sc, t)
	if err != nil {
		return err
	}
	if err := rep.WriteMarkdown(stdout); err != nil {
		return err
	}
	if *out != "" {
		if err := writeReportFiles(rep, *out); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s, %s and %s\n", filepath.Join(*out, "report.json"), filepath.Join(*out, "report.md"), filepath.Join(*out, "latency.svg"))
	}
	return nil
}

func writeReportFiles(rep *bench.Report, dir string) error {
	for name, write := range map[string]func(io.Writer) error{
		"report.json": rep.WriteJSON, "report.md": rep.WriteMarkdown, "latency.svg": rep.WriteSVG,
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("bench: write report: %w", err)
		}
		werr := write(f)
		if err := errors.Join(werr, f.Close()); err != nil {
			return fmt.Errorf("bench: write %s: %w", name, err)
		}
	}
	return nil
}

func probeStoreFlags(ctx context.Context, dir string, s3c s3store.Config) (objectstore.Store, string, error) {
	switch {
	case dir != "" && s3c.Bucket != "":
		return nil, "", errors.New("flags -limits-dir and -limits-s3-bucket exclude each other")
	case dir != "":
		d, err := objectstore.NewDir(dir)
		return d, "directory " + dir, err
	case s3c.Bucket != "":
		s3c.PathStyle = s3c.Endpoint != ""
		if err := s3c.Validate(); err != nil {
			return nil, "", fmt.Errorf("flags -limits-s3-*: %w", err)
		}
		s, err := s3store.New(ctx, s3c)
		if err != nil {
			return nil, "", err
		}
		return s, "S3 bucket " + s3c.Bucket, nil
	}
	return nil, "", nil
}

func probeCommitFlags(ctx context.Context, sqlitePath, pgURL string) (bench.Committer, string, error) {
	switch {
	case sqlitePath != "" && pgURL != "":
		return nil, "", errors.New("flags -limits-sqlite and -limits-postgres-url exclude each other")
	case sqlitePath != "":
		c, err := bench.OpenSQLiteCommitter(ctx, sqlitePath)
		return c, "SQLite", err
	case pgURL != "":
		c, err := bench.OpenPostgresCommitter(ctx, pgURL)
		return c, "PostgreSQL", err
	}
	return nil, "", nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, p := range splitList(s) {
		v, err := strconv.ParseFloat(strings.TrimSuffix(p, "%"), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", p)
		}
		out = append(out, v)
	}
	return out, nil
}

func joinFloats(v []float64) string {
	parts := make([]string, len(v))
	for i, f := range v {
		parts[i] = strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strings.Join(parts, ",")
}

// parseTopicConfig reads -topic-config: k=v pairs, comma separated.
func parseTopicConfig(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("flag -topic-config: %q is not key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}
