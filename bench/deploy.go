package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/floe-broker/floe/internal/services"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// DeployConfig configures the deployments the harness starts itself.
type DeployConfig struct {
	// Executable is the floe binary the agents run.
	Executable string
	// Agents is the number of agents of a cluster (dev runs one).
	Agents int
	// The agents' settings.
	Linger           time.Duration
	MaxFileBytes     int
	MaxBufferedBytes int64
	CacheBytes       int64
	// PostgresDurable keeps the cluster's PostgreSQL fsync on.
	PostgresDurable bool
	// StoreDir is the folder the cluster's S3 server keeps its objects
	// under ("": the system's temporary folder). On one machine the
	// server's writes share the disk with PostgreSQL's WAL: the page
	// cache's writeback of an overload's objects, tens of seconds later,
	// slows the WAL's fsync and so every commit, a cost no deployment on
	// a remote object store has. A tmpfs (/dev/shm) keeps the two apart.
	StoreDir string
	// SignedPayload has the cluster's agents, and the raw PUT probe, sign
	// each PUT body's SHA-256 (SigV4), as the AWS SDK does over plain
	// HTTP unless s3.unsigned_payload is set. Off, both send
	// UNSIGNED-PAYLOAD with the body's CRC-32C for the server to verify
	// (s3.put_checksum): what an agent's PUTs cost against an https://
	// store, TLS aside; the harness's loopback is the trusted path that
	// setting is for. The figures before December 6 were signed.
	SignedPayload bool
	// TLS serves the agents' gRPC listener with TLS, a certificate of a
	// throwaway CA that Deployment.ClientTLS trusts (tls.go).
	TLS    bool
	Logger *slog.Logger
}

// DefaultDeployConfig returns two agents with floe's defaults.
func DefaultDeployConfig() DeployConfig {
	return DeployConfig{Agents: 2, Linger: 250 * time.Millisecond, MaxFileBytes: 8 << 20,
		MaxBufferedBytes: 64 << 20, CacheBytes: 256 << 20, PostgresDurable: true}
}

// s3Args are a cluster agent's flags for its S3 server (bucket "floe").
func (c DeployConfig) s3Args(endpoint, region, accessKey, secretKey string) []string {
	args := []string{"-s3-bucket", "floe", "-s3-endpoint", endpoint, "-s3-path-style", "-s3-region", region,
		"-s3-access-key", accessKey, "-s3-secret-key", secretKey}
	if !c.SignedPayload {
		args = append(args, "-s3-unsigned-payload")
	}
	return args
}

func (c DeployConfig) validate() error {
	switch {
	case c.Executable == "":
		return errors.New("bench: DeployConfig.Executable is empty")
	case c.Agents < 1:
		return fmt.Errorf("bench: DeployConfig.Agents %d must be at least 1", c.Agents)
	case c.MaxFileBytes < 1024:
		return fmt.Errorf("bench: DeployConfig.MaxFileBytes %d must be at least 1024", c.MaxFileBytes)
	}
	if c.StoreDir != "" {
		if st, err := os.Stat(c.StoreDir); err != nil || !st.IsDir() {
			return fmt.Errorf("bench: DeployConfig.StoreDir %q is not a folder", c.StoreDir)
		}
	}
	return nil
}

// Deployment is a floe deployment started by the harness, with the probe
// targets of its limits on the same stores.
type Deployment struct {
	Kind         string
	Addrs        []string
	MetricsAddrs []string
	// KafkaAddrs are the agents' Kafka protocol listeners.
	KafkaAddrs []string
	// Probe targets: the same object store and metadata server as the
	// agents, in a separate bucket/directory and database/file.
	ProbeStore      objectstore.Store
	ProbeStoreName  string
	ProbeCommitter  Committer
	ProbeCommitName string
	// ClientTLS is the clients' TLS with DeployConfig.TLS (nil without).
	ClientTLS *tls.Config
	// ServicePids are the services the agents depend on (cluster:
	// PostgreSQL's postmaster and versitygw), for RunConfig.ServicePids.
	ServicePids []int

	cfg     DeployConfig
	tlsArgs []string // the agents' TLS flags
	dir     string
	argsOf  []func(grpc, metrics, kafka string) []string
	agents  []*services.Process
	stops   []func()
}

func (d *Deployment) agentArgs(i int) []string {
	return d.argsOf[i](d.Addrs[i], d.MetricsAddrs[i], d.KafkaAddrs[i])
}

func (d *Deployment) commonArgs(grpc, metrics, kafka string) []string {
	return append([]string{"-listen", grpc, "-metrics-listen", metrics, "-kafka-listen", kafka,
		"-linger", d.cfg.Linger.String(), "-max-file-bytes", strconv.Itoa(d.cfg.MaxFileBytes),
		"-max-buffered-bytes", strconv.FormatInt(d.cfg.MaxBufferedBytes, 10),
		"-cache-bytes", strconv.FormatInt(d.cfg.CacheBytes, 10), "-log-level", "warn"}, d.tlsArgs...)
}

// startAgent starts agent i and waits for it to serve. Its first start
// listens on port 0 and the addresses it bound, read back from its
// -addr-file, become d's; a restart binds the same ones again.
func (d *Deployment) startAgent(ctx context.Context, i int) error {
	addrFile := filepath.Join(d.dir, fmt.Sprintf("agent-%d.addrs", i))
	if err := services.FreshAddrFile(addrFile); err != nil {
		return err
	}
	p, err := services.Start(services.ProcessSpec{Path: d.cfg.Executable, Args: append(d.agentArgs(i), "-addr-file", addrFile),
		Dir: d.dir, LogPath: filepath.Join(d.dir, fmt.Sprintf("agent-%d.log", i))})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// Ready, not only alive: the agent answers "starting" until its
	// stores (and, in floe dev, the compactor's catalog) are open; its
	// Kafka listener is bound (and in the file) once they answered.
	bound, err := services.WaitFloe(wctx, p, addrFile, "/readyz", func(a services.FloeAddrs) bool { return a.Kafka != "" })
	if err != nil {
		p.Stop(syscall.SIGKILL, time.Second)
		return fmt.Errorf("bench: agent %d: %w", i, err)
	}
	d.Addrs[i], d.MetricsAddrs[i], d.KafkaAddrs[i] = bound.GRPC, bound.Metrics, bound.Kafka
	if i < len(d.agents) {
		d.agents[i] = p
	} else {
		d.agents = append(d.agents, p)
	}
	return nil
}

// Restart stops every agent and starts it again on the same addresses
// (the ones it bound first) and data: their read caches are cold
// afterwards.
func (d *Deployment) Restart(ctx context.Context) error {
	for _, p := range d.agents {
		p.Stop(syscall.SIGTERM, 30*time.Second)
	}
	for i := range d.agents {
		if err := d.startAgent(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops the agents and the services, and removes their data.
func (d *Deployment) Stop() {
	for _, p := range d.agents {
		p.Stop(syscall.SIGTERM, 30*time.Second)
	}
	if d.ProbeCommitter != nil {
		_ = d.ProbeCommitter.Close()
	}
	for i := len(d.stops) - 1; i >= 0; i-- {
		d.stops[i]()
	}
	if d.dir != "" {
		_ = os.RemoveAll(d.dir)
	}
}

// AgentLogs returns the tail of each agent's log, for error reports.
func (d *Deployment) AgentLogs() string {
	var s string
	for i, p := range d.agents {
		s += fmt.Sprintf("--- agent %d (%s)\n%s\n", i, p.LogPath(), p.LogTail())
	}
	return s
}

// allocAddrs gives n agents port 0 on the loopback for each listener:
// startAgent replaces them with the bound ones.
func (d *Deployment) allocAddrs(n int) {
	for range n {
		d.Addrs = append(d.Addrs, "127.0.0.1:0")
		d.MetricsAddrs = append(d.MetricsAddrs, "127.0.0.1:0")
		d.KafkaAddrs = append(d.KafkaAddrs, "127.0.0.1:0")
	}
}

// StartDev runs `floe dev` (one agent, a local directory, SQLite) in a
// temporary directory. The limits are probed on a directory and a SQLite
// file beside its data.
func StartDev(ctx context.Context, cfg DeployConfig) (_ *Deployment, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "floe-bench-dev-")
	if err != nil {
		return nil, fmt.Errorf("bench: temp dir: %w", err)
	}
	d := &Deployment{Kind: "dev", cfg: cfg, dir: dir}
	defer func() {
		if err != nil {
			d.Stop()
		}
	}()
	if err := d.setupTLS(); err != nil {
		return nil, err
	}
	d.allocAddrs(1)
	data := filepath.Join(dir, "data")
	d.argsOf = []func(string, string, string) []string{func(g, m, k string) []string {
		// A dropped topic's files go 30 s after the compactor marks them
		// dead, not 5 min (TopicDropper: the disk holds about one run's).
		return append([]string{"dev", "-data", data, "-grace", "30s"}, d.commonArgs(g, m, k)...)
	}}
	if err := d.startAgent(ctx, 0); err != nil {
		return nil, err
	}
	if d.ProbeStore, err = objectstore.NewDir(filepath.Join(dir, "probe-objects")); err != nil {
		return nil, err
	}
	d.ProbeStoreName = "local directory"
	if d.ProbeCommitter, err = OpenSQLiteCommitter(ctx, filepath.Join(dir, "probe.db")); err != nil {
		return nil, err
	}
	d.ProbeCommitName = "SQLite"
	return d, nil
}

// StartCluster starts a throwaway PostgreSQL, a versitygw S3 server and
// cfg.Agents `floe agent` processes against them. The limits are probed
// on another bucket of the same server and another database of the same
// cluster.
func StartCluster(ctx context.Context, cfg DeployConfig) (_ *Deployment, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "floe-bench-cluster-")
	if err != nil {
		return nil, fmt.Errorf("bench: temp dir: %w", err)
	}
	d := &Deployment{Kind: "cluster", cfg: cfg, dir: dir}
	defer func() {
		if err != nil {
			d.Stop()
		}
	}()
	if err := d.setupTLS(); err != nil {
		return nil, err
	}
	pcfg := services.DefaultPostgresConfig()
	pcfg.Durable = cfg.PostgresDurable
	pg, err := services.StartPostgres(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	d.stops = append(d.stops, pg.Stop)
	dbURL, err := pg.CreateDatabase(ctx, "floe")
	if err != nil {
		return nil, err
	}
	probeURL, err := pg.CreateDatabase(ctx, "floe_probe")
	if err != nil {
		return nil, err
	}
	s3, err := services.StartVersitygwIn(ctx, cfg.StoreDir, cfg.Logger)
	if err != nil {
		return nil, err
	}
	d.stops = append(d.stops, s3.Stop)
	d.ServicePids = []int{pg.Pid(), s3.Pid()}
	if err := s3.CreateBucket(ctx, "floe"); err != nil {
		return nil, err
	}
	if err := s3.CreateBucket(ctx, "floe-probe"); err != nil {
		return nil, err
	}
	d.allocAddrs(cfg.Agents)
	for range cfg.Agents {
		d.argsOf = append(d.argsOf, func(g, m, k string) []string {
			args := append([]string{"agent", "-postgres-url", dbURL}, cfg.s3Args(s3.Endpoint, s3.Region, s3.AccessKey, s3.SecretKey)...)
			return append(args, d.commonArgs(g, m, k)...)
		})
	}
	for i := range cfg.Agents {
		if err := d.startAgent(ctx, i); err != nil {
			return nil, err
		}
	}
	sc := s3store.DefaultConfig()
	sc.Bucket, sc.Endpoint, sc.Region, sc.AccessKey, sc.SecretKey, sc.PathStyle = "floe-probe", s3.Endpoint, s3.Region, s3.AccessKey, s3.SecretKey, true
	sc.UnsignedPayload = !cfg.SignedPayload // as the agents' PUTs
	if d.ProbeStore, err = s3store.New(ctx, sc); err != nil {
		return nil, fmt.Errorf("bench: probe store: %w", err)
	}
	d.ProbeStoreName = "versitygw S3"
	if cfg.StoreDir != "" {
		d.ProbeStoreName = "versitygw S3, objects under " + cfg.StoreDir
	}
	if cfg.SignedPayload {
		d.ProbeStoreName += ", signed payloads"
	}
	if d.ProbeCommitter, err = OpenPostgresCommitter(ctx, probeURL); err != nil {
		return nil, err
	}
	pgMode := "fsync on"
	if !cfg.PostgresDurable {
		pgMode = "fsync off"
	}
	d.ProbeCommitName = "PostgreSQL, " + pgMode
	return d, nil
}
