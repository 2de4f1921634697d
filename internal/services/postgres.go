package services

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresConfig configures StartPostgres.
type PostgresConfig struct {
	// BinDir holds initdb and postgres; empty finds PostgreSQL 15's
	// (/usr/lib/postgresql/15/bin, else pg_config --bindir).
	BinDir string
	// Durable keeps PostgreSQL's defaults (fsync, synchronous_commit on), as
	// in production. When false, fsync and synchronous commit are off.
	Durable bool
	// MaxConnections is max_connections.
	MaxConnections int
	// StartTimeout bounds the start.
	StartTimeout time.Duration
	// TLS, optional, turns ssl on with this certificate and key (tls.go):
	// clients may then connect with sslmode=verify-full.
	TLS *ServerTLS

	extraArgs []string // the postmaster's settings for TLS, set by StartPostgres
}

// DefaultPostgresConfig returns a durable cluster with 200 connections.
func DefaultPostgresConfig() PostgresConfig {
	return PostgresConfig{Durable: true, MaxConnections: 200, StartTimeout: 30 * time.Second}
}

func (c PostgresConfig) validate() error {
	switch {
	case c.MaxConnections < 10:
		return fmt.Errorf("services: PostgresConfig.MaxConnections %d must be at least 10", c.MaxConnections)
	case c.StartTimeout <= 0:
		return fmt.Errorf("services: PostgresConfig.StartTimeout %v must be positive", c.StartTimeout)
	}
	return nil
}

// Postgres is a throwaway PostgreSQL cluster in a temporary directory, or
// an existing server (see AttachPostgres).
type Postgres struct {
	// AdminURL is a superuser URL of the "postgres" database (of an
	// attached server: the URL it was attached with).
	AdminURL string
	dir      string
	proc     *Process // nil for an attached server
}

// pgPortAttempts is how many free ports StartPostgres tries: a free port
// may be taken by another process before the postmaster binds it.
const pgPortAttempts = 3

// errPortTaken marks a postmaster that could not bind its port.
var errPortTaken = errors.New("services: postgres port taken")

// pgFreePort picks the postmaster's port; tests replace it.
var pgFreePort = FreePort

// StartPostgres initialises and starts a cluster on a free loopback port.
// Running as root, the cluster runs as the "postgres" user.
func StartPostgres(ctx context.Context, cfg PostgresConfig) (*Postgres, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	bin := cfg.BinDir
	if bin == "" {
		var err error
		if bin, err = pgBinDir(); err != nil {
			return nil, err
		}
	}
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "floe-pg-")
	if err != nil {
		return nil, fmt.Errorf("services: postgres temp dir: %w", err)
	}
	fail := func(err error) (*Postgres, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fail(fmt.Errorf("services: chown %s to postgres: %w", dir, err))
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "--no-sync",
		"-U", "postgres", "-E", "UTF8", "--locale=C")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("services: initdb: %w\n%s", err, out))
	}
	if cfg.TLS != nil {
		if cfg.extraArgs, err = installPostgresTLS(*cfg.TLS, data, cred); err != nil {
			return fail(err)
		}
	}
	pg, err := servePostmaster(ctx, cfg, bin, dir, cred)
	if err != nil {
		return fail(err)
	}
	return pg, nil
}

// ServePostgres starts a postmaster on dir/data, a data directory made
// another way than StartPostgres (a pg_basebackup copy for a standby,
// say), on a free loopback port, and waits until the server answering
// there is this one (its data directory). bin is PostgresBinDir's; the
// server runs as PostgresCredential's user, which must own dir. Stop
// removes dir; on failure dir is left to the caller.
func ServePostgres(ctx context.Context, cfg PostgresConfig, bin, dir string) (*Postgres, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cred, err := pgCredential()
	if err != nil {
		return nil, err
	}
	return servePostmaster(ctx, cfg, bin, dir, cred)
}

// servePostmaster runs the postmaster on dir/data, trying pgPortAttempts
// free ports.
func servePostmaster(ctx context.Context, cfg PostgresConfig, bin, dir string, cred *syscall.Credential) (*Postgres, error) {
	for attempt := 1; ; attempt++ {
		pg, err := runPostmaster(ctx, cfg, bin, dir, cred, attempt > 1)
		if err == nil || attempt == pgPortAttempts || !errors.Is(err, errPortTaken) {
			return pg, err
		}
	}
}

// runPostmaster starts postgres on dir/data on a free port and waits until
// it accepts connections. On failure the process is gone; dir is left.
// retry says an earlier attempt's postmaster ran on dir and is gone.
func runPostmaster(ctx context.Context, cfg PostgresConfig, bin, dir string, cred *syscall.Credential, retry bool) (*Postgres, error) {
	port, err := pgFreePort()
	if err != nil {
		return nil, err
	}
	if retry {
		// The earlier attempt's postmaster was killed when another
		// cluster answered on its port (or exited on a failed bind).
		// Killed while it wrote its lock file, it leaves postmaster.pid
		// empty, which this start would refuse as a possible remnant of a
		// crash; it is ours and nothing runs on dir, so it goes.
		if err := os.Remove(filepath.Join(dir, "data", "postmaster.pid")); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("services: remove the killed attempt's lock file: %w", err)
		}
	}
	args := []string{"-D", filepath.Join(dir, "data"), "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=" + strconv.Itoa(cfg.MaxConnections)}
	if !cfg.Durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	args = append(args, cfg.extraArgs...)
	logPath := filepath.Join(dir, "postgres.log")
	_ = os.Remove(logPath) // a failed attempt's log would mislead the next
	proc, err := Start(ProcessSpec{Path: filepath.Join(bin, "postgres"), Args: args, Dir: dir,
		LogPath: logPath, Credential: cred})
	if err != nil {
		return nil, err
	}
	pg := &Postgres{AdminURL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), dir: dir, proc: proc}
	wctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	data := filepath.Join(dir, "data")
	for {
		cctx, ccancel := context.WithTimeout(wctx, 2*time.Second)
		served, err := pgDataDirectory(cctx, pg.AdminURL)
		ccancel()
		if err == nil && served != data {
			// Another cluster holds the port (another test process's,
			// trusting the same superuser): ours cannot bind it.
			proc.Stop(syscall.SIGKILL, time.Second)
			return nil, fmt.Errorf("%w: %d by the cluster on %s", errPortTaken, port, served)
		}
		if err == nil {
			return pg, nil
		}
		select {
		case <-proc.Exited():
			log := proc.LogTail()
			if strings.Contains(log, "could not bind") || strings.Contains(log, "already in use") {
				return nil, fmt.Errorf("%w: %d:\n%s", errPortTaken, port, log)
			}
			return nil, fmt.Errorf("services: postgres exited at start (%v):\n%s", proc.Err(), log)
		case <-wctx.Done():
			proc.Stop(syscall.SIGKILL, time.Second)
			return nil, fmt.Errorf("services: postgres not ready: %w (last error: %v)\n%s", wctx.Err(), err, proc.LogTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// AttachPostgres returns a Postgres for an existing server, given a
// superuser postgres:// URL, once a connection to it succeeds. Stop leaves
// the server running and Pid is 0.
func AttachPostgres(ctx context.Context, adminURL string) (*Postgres, error) {
	pg := &Postgres{AdminURL: adminURL}
	if _, err := pg.databaseURL("postgres"); err != nil {
		return nil, err
	}
	if err := pgExec(ctx, adminURL, "SELECT 1"); err != nil {
		return nil, fmt.Errorf("services: postgres %s unreachable: %w", adminURL, err)
	}
	return pg, nil
}

// CreateDatabase creates an empty database and returns its URL.
func (pg *Postgres) CreateDatabase(ctx context.Context, name string) (string, error) {
	dsn, err := pg.databaseURL(name)
	if err != nil {
		return "", err
	}
	if err := pgExec(ctx, pg.AdminURL, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("services: create database %s: %w", name, err)
	}
	return dsn, nil
}

// DropDatabase drops a database if it exists, ending its connections.
func (pg *Postgres) DropDatabase(ctx context.Context, name string) error {
	if err := pgExec(ctx, pg.AdminURL, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("services: drop database %s: %w", name, err)
	}
	return nil
}

// databaseURL returns AdminURL with its database replaced by name.
func (pg *Postgres) databaseURL(name string) (string, error) {
	u, err := url.Parse(pg.AdminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("services: postgres URL %q is not a postgres:// URL", pg.AdminURL)
	}
	u.Path, u.RawPath = "/"+name, ""
	return u.String(), nil
}

// Pid is the postmaster's process id (0 for an attached server).
func (pg *Postgres) Pid() int { return pg.proc.Pid() }

// LogTail returns the end of the server's log ("" for an attached
// server).
func (pg *Postgres) LogTail() string {
	if pg.proc == nil {
		return ""
	}
	return pg.proc.LogTail()
}

// Stop shuts the cluster down (fast shutdown) and removes its directory.
// It does nothing for an attached server.
func (pg *Postgres) Stop() {
	pg.proc.Stop(syscall.SIGINT, 15*time.Second)
	_ = os.RemoveAll(pg.dir) // "" for an attached server: nothing
}

// pgExec runs one statement on a short-lived connection.
// pgDataDirectory is the data directory of the server at dsn: which
// cluster answers there.
func pgDataDirectory(ctx context.Context, dsn string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var dir string
	err = conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir)
	return dir, err
}

func pgExec(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// pgBinDir finds the directory holding initdb and postgres.
func pgBinDir() (string, error) {
	if dir := "/usr/lib/postgresql/15/bin"; executable(filepath.Join(dir, "postgres")) {
		return dir, nil
	}
	out, err := exec.Command("pg_config", "--bindir").Output()
	if err != nil {
		return "", fmt.Errorf("services: no PostgreSQL in /usr/lib/postgresql/15/bin and pg_config failed (apt-get install postgresql-15): %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if !executable(filepath.Join(dir, "postgres")) || !executable(filepath.Join(dir, "initdb")) {
		return "", fmt.Errorf("services: pg_config --bindir %s holds no postgres and initdb binaries", dir)
	}
	return dir, nil
}

// pgCredential returns the postgres user's credential when running as
// root (PostgreSQL refuses to run as root), else nil.
func pgCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("services: running as root and there is no postgres user to run PostgreSQL as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("services: postgres user ids: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}
