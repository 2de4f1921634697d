package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/services"
)

// Bucket is the S3 bucket a deployment's floe processes use.
const Bucket = "floe-chaos"

// Timings of the deployment: short enough that the faults' effects (a
// lease taken over, a session expired, an orphan collected) happen within
// a run.
const (
	SessionTimeout  = 6 * time.Second
	compactorGrace  = 3 * time.Second
	orphanAge       = 8 * time.Second
	compactorLease  = 5 * time.Second
	compactorPeriod = 300 * time.Millisecond
)

// proc is one floe process (agent or compactor) the deployment restarts
// on the same addresses.
type proc struct {
	name      string
	path      string // the floe binary, or ip (netns exec)
	args      []string
	ns        *netns // agents in their own namespace
	compactor bool
	metrics   string
	listen    string // agents: gRPC
	// addrFile is the process's -addr-file: started on port 0 it says
	// there which ports it bound (bind), and a restart writes it anew.
	addrFile string

	mu     sync.Mutex // guards p, paused
	p      *services.Process
	paused bool
}

// Deployment is PostgreSQL, an S3 server, the proxies in front of them,
// several agents and a compactor, all started by the driver.
type Deployment struct {
	Dir string
	PG  *services.Postgres
	// PGURL is floe's database, direct (the standby's after a failover;
	// read it with directPG while the faults run).
	PGURL   string
	urlMu   sync.Mutex // guards PGURL once the deployment started
	S3      *services.S3Server
	S3Proxy *S3Proxy
	PGProxy *PGProxy
	// StandbyProxy, with a standby, is the proxy in front of it: floe's
	// URL names both proxies (pgURLs), so floe itself finds the primary.
	StandbyProxy *PGProxy
	Agents       []*proc
	// Compactors are two replicas: they share the jobs through leases.
	Compactors []*proc
	Clients    []*client.Client

	namespaces []*netns
	// standby, failedOver, adminURL: a synchronous standby, whether it was
	// promoted, and the current primary's admin URL (set by the fault
	// loop, read after it, in the run's goroutine).
	standby    *standby
	failedOver bool
	adminURL   string
	exe        string
	log        *slog.Logger

	exitMu    sync.Mutex     // guards exitCount
	exitCount map[string]int // processes that exited on their own, by name
}

// Start starts a deployment of agents agents and compactors compactors
// from the floe binary exe; withNetns puts each agent in a network
// namespace of its own (see netns).
func Start(ctx context.Context, exe string, agents, compactors int, withNetns bool, standby StandbyMode, log *slog.Logger) (_ *Deployment, err error) {
	dir, err := os.MkdirTemp("", "floe-chaos-")
	if err != nil {
		return nil, fmt.Errorf("chaos: temp dir: %w", err)
	}
	d := &Deployment{Dir: dir, exe: exe, log: log}
	defer func() {
		if err != nil {
			d.Stop()
		}
	}()
	if d.PG, err = services.StartPostgres(ctx, services.DefaultPostgresConfig()); err != nil {
		return nil, err
	}
	d.adminURL = d.PG.AdminURL
	if d.PGURL, err = d.PG.CreateDatabase(ctx, "floe"); err != nil {
		return nil, err
	}
	if standby != NoStandby {
		if d.standby, err = startStandby(ctx, d.PG.AdminURL, standby == SyncStandby, log); err != nil {
			return nil, err
		}
		if d.StandbyProxy, err = StartPGProxy(d.standby.hostPort, log); err != nil {
			return nil, err
		}
	}
	u, err := url.Parse(d.PGURL)
	if err != nil {
		return nil, fmt.Errorf("chaos: postgres URL: %w", err)
	}
	if d.PGProxy, err = StartPGProxy(u.Host, log); err != nil {
		return nil, err
	}
	proxiedPG := d.pgURL(*u, d.PGProxy.Addr(), d.StandbyProxy.addr())
	if d.S3, err = services.StartVersitygw(ctx, log); err != nil {
		return nil, err
	}
	if err = d.S3.CreateBucket(ctx, Bucket); err != nil {
		return nil, err
	}
	if d.S3Proxy, err = StartS3Proxy(d.S3.Endpoint, log); err != nil {
		return nil, err
	}
	storeArgs := func(pgURL, s3URL string) []string {
		return []string{"-postgres-url", pgURL, "-s3-bucket", Bucket, "-s3-endpoint", s3URL,
			"-s3-region", d.S3.Region, "-s3-access-key", d.S3.AccessKey, "-s3-secret-key", d.S3.SecretKey, "-s3-path-style",
			"-log-level", "warn"}
	}
	stores := storeArgs(proxiedPG, d.S3Proxy.URL())
	for i := range agents {
		a := &proc{name: "agent-" + strconv.Itoa(i), path: exe}
		agentStores := stores
		if withNetns {
			ns, err := newNetns(i)
			if err != nil {
				return nil, err
			}
			d.namespaces = append(d.namespaces, ns)
			pgAddr, err1 := d.PGProxy.Listen(ns.pg)
			s3URL, err2 := d.S3Proxy.Listen(ns.s3)
			var standbyAddr string
			var err3 error
			if d.StandbyProxy != nil {
				standbyAddr, err3 = d.StandbyProxy.Listen(ns.pg)
			}
			if err := errors.Join(err1, err2, err3); err != nil {
				return nil, err
			}
			agentStores = storeArgs(d.pgURL(*u, pgAddr, standbyAddr), s3URL)
			// The namespace is empty: fixed ports are free.
			a.ns, a.listen, a.metrics = ns, ns.agent+":7070", ns.agent+":7071"
		} else {
			// Ports of the kernel's (bind): restarts keep them.
			a.listen, a.metrics = "127.0.0.1:0", "127.0.0.1:0"
		}
		a.addrFile = filepath.Join(dir, a.name+".addrs")
		a.args = append([]string{"agent", "-listen", a.listen, "-metrics-listen", a.metrics, "-addr-file", a.addrFile, "-kafka-listen", "",
			"-linger", "20ms", "-ready-interval", "200ms", "-commit-timeout", "8s", "-upload-timeout", "8s",
			"-drain-timeout", "5s"}, agentStores...)
		if a.ns != nil {
			a.path, a.args = "ip", append([]string{"netns", "exec", a.ns.name, exe}, a.args...)
		}
		d.Agents = append(d.Agents, a)
		if err := d.startProc(ctx, a, "/readyz"); err != nil {
			return nil, err
		}
		c, err := client.Dial(a.listen)
		if err != nil {
			return nil, err
		}
		d.Clients = append(d.Clients, c)
	}
	for i := range compactors {
		name := "compactor-" + strconv.Itoa(i)
		c := &proc{name: name, path: exe, metrics: "127.0.0.1:0", compactor: true, addrFile: filepath.Join(dir, name+".addrs")}
		c.args = append([]string{"compactor", "-metrics-listen", c.metrics, "-addr-file", c.addrFile, "-owner", name, "-interval", compactorPeriod.String(),
			"-lease-ttl", compactorLease.String(), "-grace", compactorGrace.String(), "-orphan-age", orphanAge.String(),
			"-iceberg-maintain-interval", "0"}, stores...)
		d.Compactors = append(d.Compactors, c)
		if err := d.startProc(ctx, c, "/healthz"); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// pgURL is floe's database URL at the primary's proxy primary and, with
// a standby, a multi-host URL naming the standby's proxy too, with
// target_session_attrs=read-write: pgx (as libpq) tries the hosts in
// order and keeps the first that accepts writes, the way users point floe
// at a replicated PostgreSQL (RDS Multi-AZ, Patroni).
func (d *Deployment) pgURL(u url.URL, primary, standby string) string {
	u.Host = primary
	if standby != "" {
		u.Host += "," + standby
		q := u.Query()
		q.Set("target_session_attrs", "read-write")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// directPG is floe's database URL, straight to the current primary.
func (d *Deployment) directPG() string {
	d.urlMu.Lock()
	defer d.urlMu.Unlock()
	return d.PGURL
}

// setPG sets the mode of every PostgreSQL proxy (the primary's and the
// standby's: a partition cuts floe from both).
func (d *Deployment) setPG(m PGMode) {
	d.PGProxy.Set(m)
	if d.StandbyProxy != nil {
		d.StandbyProxy.Set(m)
	}
}

// startProc starts p and waits until it wrote the addresses it bound and
// its metrics listener answers path. On its first start (port 0) they
// become p's, for its restarts.
func (d *Deployment) startProc(ctx context.Context, p *proc, path string) error {
	sp, err := d.spawn(p)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	bound, err := services.WaitFloe(wctx, sp, p.addrFile, path, nil)
	if err != nil {
		return fmt.Errorf("chaos: %s: %w", p.name, err)
	}
	p.bind(bound)
	return nil
}

// spawn starts p's process (its -addr-file removed first: what the file
// holds next is the new process's) and makes it p's.
func (d *Deployment) spawn(p *proc) (*services.Process, error) {
	if err := services.FreshAddrFile(p.addrFile); err != nil {
		return nil, err
	}
	sp, err := services.Start(services.ProcessSpec{Path: p.path, Args: p.args, Dir: d.Dir,
		LogPath: filepath.Join(d.Dir, p.name+".log")})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.p, p.paused = sp, false
	p.mu.Unlock()
	return sp, nil
}

// bind makes the addresses p bound its own: p.listen, p.metrics, and
// its arguments, so that a restart listens where the clients dial.
func (p *proc) bind(a services.FloeAddrs) {
	for i := 0; i+1 < len(p.args); i++ {
		switch p.args[i] {
		case "-listen":
			p.args[i+1] = a.GRPC
		case "-metrics-listen":
			p.args[i+1] = a.Metrics
		}
	}
	if !p.compactor {
		p.listen = a.GRPC
	}
	p.metrics = a.Metrics
}

// Kill SIGKILLs p and starts it again (without waiting for it to be
// ready: the faults go on meanwhile).
func (d *Deployment) Kill(p *proc) error {
	p.mu.Lock()
	old := p.p
	p.mu.Unlock()
	d.noteExit(p, old)
	_ = syscall.Kill(old.Pid(), syscall.SIGCONT) // a paused process dies too
	old.Stop(syscall.SIGKILL, 5*time.Second)
	_, err := d.spawn(p)
	return err
}

// Pause sends SIGSTOP (stop) or SIGCONT (!stop) to p.
func (d *Deployment) Pause(p *proc, stop bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	_ = syscall.Kill(p.p.Pid(), sig)
	p.paused = stop
}

// Heal resumes every paused process, heals the proxies, starts
// PostgreSQL if it is down, and waits until every process is ready.
func (d *Deployment) Heal(ctx context.Context) error {
	d.S3Proxy.Set(S3Mode{})
	d.setPG(PGMode{})
	for _, ns := range d.namespaces {
		ns.heal()
	}
	_ = syscall.Kill(-d.PG.Pid(), syscall.SIGCONT)
	if !d.failedOver && !pgAlive(ctx, d.adminURL) {
		if err := d.PG.Resume(ctx); err != nil {
			return err
		}
	}
	for _, p := range d.procs() {
		d.Pause(p, false)
		p.mu.Lock()
		sp := p.p
		p.mu.Unlock()
		path := "/readyz"
		if p.compactor {
			path = "/healthz"
		}
		if d.noteExit(p, sp) {
			if err := d.startProc(ctx, p, path); err != nil {
				return err
			}
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		_, err := services.WaitFloe(wctx, sp, p.addrFile, path, nil)
		cancel()
		if err != nil {
			return fmt.Errorf("chaos: %s not ready after the faults: %w", p.name, err)
		}
	}
	return nil
}

// noteExit reports whether sp, p's process, has exited, and counts it:
// the driver stops its processes only through Kill and Stop, so a process
// found exited exited on its own.
func (d *Deployment) noteExit(p *proc, sp *services.Process) bool {
	select {
	case <-sp.Exited():
	default:
		return false
	}
	d.log.Warn("chaos: a floe process exited on its own", "process", p.name)
	d.exitMu.Lock()
	defer d.exitMu.Unlock()
	if d.exitCount == nil {
		d.exitCount = map[string]int{}
	}
	d.exitCount[p.name]++
	return true
}

// exits is a copy of the processes' exits, by name.
func (d *Deployment) exits() map[string]int {
	d.exitMu.Lock()
	defer d.exitMu.Unlock()
	m := make(map[string]int, len(d.exitCount))
	for k, v := range d.exitCount {
		m[k] = v
	}
	return m
}

func (d *Deployment) procs() []*proc {
	return append(append([]*proc(nil), d.Agents...), d.Compactors...)
}

// Stop stops every process and service the deployment started and
// removes its data (kept with keepLogs, for a failed run).
func (d *Deployment) Stop() {
	for _, c := range d.Clients {
		_ = c.Close()
	}
	for _, p := range d.procs() {
		p.mu.Lock()
		sp := p.p
		p.mu.Unlock()
		if sp != nil {
			_ = syscall.Kill(sp.Pid(), syscall.SIGCONT)
			sp.Stop(syscall.SIGKILL, 5*time.Second)
		}
	}
	if d.S3Proxy != nil {
		d.S3Proxy.Close()
	}
	if d.PGProxy != nil {
		d.PGProxy.Close()
	}
	if d.StandbyProxy != nil {
		d.StandbyProxy.Close()
	}
	if d.S3 != nil {
		d.S3.Stop()
	}
	if d.PG != nil {
		_ = syscall.Kill(-d.PG.Pid(), syscall.SIGCONT)
		d.PG.Stop()
	}
	if d.standby != nil {
		d.standby.stop()
	}
	for _, ns := range d.namespaces {
		ns.remove()
	}
}

// RemoveDir removes the deployment's logs.
func (d *Deployment) RemoveDir() { _ = os.RemoveAll(d.Dir) }

// pgAlive reports whether PostgreSQL answers a query.
func pgAlive(ctx context.Context, dsn string) bool {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, dsn)
	if err != nil {
		return false
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(cctx, "SELECT 1")
	return err == nil
}
