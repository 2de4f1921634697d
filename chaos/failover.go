package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/internal/services"
)

// standbyName is the standby's application_name, which the primary's
// synchronous_standby_names names.
const standbyName = "chaos_standby"

// StandbyMode is whether PostgreSQL runs with a streaming-replication
// standby, and how it replicates.
type StandbyMode int

const (
	// NoStandby: one PostgreSQL cluster.
	NoStandby StandbyMode = iota
	// SyncStandby: the standby is named in synchronous_standby_names, a
	// commit is acknowledged once the standby flushed it.
	SyncStandby
	// AsyncStandby: the standby streams, the primary does not wait for it
	// (PostgreSQL's default, and of many managed replicas).
	AsyncStandby
)

// asyncLag is how far behind an asynchronous standby is when the
// primary dies (Config.FailoverAsync).
const asyncLag = time.Second

// standby is a streaming-replication standby of the
// deployment's PostgreSQL, in a directory of its own, promoted by
// failover.
type standby struct {
	sync     bool
	repl     *PGProxy // the asynchronous standby's replication connection
	dir      string
	hostPort string // 127.0.0.1:PORT
	adminURL string
	pg       *services.Postgres
}

// startStandby copies the primary with pg_basebackup, starts the copy as a
// standby streaming from it, waits until it streams, and, when sync, makes
// it the primary's synchronous standby: from then on a commit is
// acknowledged only once the standby has flushed it.
func startStandby(ctx context.Context, primaryAdmin string, sync bool, log *slog.Logger) (_ *standby, err error) {
	bin, err := services.PostgresBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := services.PostgresCredential()
	if err != nil {
		return nil, err
	}
	pu, err := url.Parse(primaryAdmin)
	if err != nil {
		return nil, fmt.Errorf("chaos: primary URL: %w", err)
	}
	dir, err := os.MkdirTemp("", "floe-chaos-standby-")
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	s := &standby{dir: dir, sync: sync}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	bb := exec.CommandContext(ctx, filepath.Join(bin, "pg_basebackup"), "-h", pu.Hostname(), "-p", pu.Port(),
		"-U", "postgres", "-D", data, "-R", "-X", "stream", "-c", "fast", "--no-sync")
	bb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := bb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("chaos: pg_basebackup: %w\n%s", err, out)
	}
	replHost, replPort := pu.Hostname(), pu.Port()
	if !sync {
		// The asynchronous standby streams through a proxy, which the
		// failover cuts to let it fall behind.
		if s.repl, err = StartPGProxy(pu.Host, log); err != nil {
			return nil, err
		}
		replHost, replPort, _ = net.SplitHostPort(s.repl.Addr())
	}
	conninfo := fmt.Sprintf("\nprimary_conninfo = 'host=%s port=%s user=postgres application_name=%s sslmode=disable gssencmode=disable'\n",
		replHost, replPort, standbyName)
	f, err := os.OpenFile(filepath.Join(data, "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	_, err = f.WriteString(conninfo)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	// On a free port, proven to be this cluster (not another holding it).
	if s.pg, err = services.ServePostgres(ctx, services.DefaultPostgresConfig(), bin, dir); err != nil {
		return nil, fmt.Errorf("chaos: standby: %w", err)
	}
	au, err := url.Parse(s.pg.AdminURL)
	if err != nil {
		return nil, fmt.Errorf("chaos: standby URL: %w", err)
	}
	s.adminURL, s.hostPort = s.pg.AdminURL, au.Host
	if err := retry(ctx, time.Minute, func(ctx context.Context) error {
		var streaming bool
		return withConn(ctx, primaryAdmin, func(c *pgx.Conn) error {
			if err := c.QueryRow(ctx, "SELECT count(*) > 0 FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'",
				standbyName).Scan(&streaming); err != nil {
				return err
			}
			if !streaming {
				return fmt.Errorf("chaos: the standby is not streaming yet")
			}
			return nil
		})
	}); err != nil {
		return nil, fmt.Errorf("chaos: standby: %w\n%s", err, s.pg.LogTail())
	}
	if !sync {
		return s, nil
	}
	if err := withConn(ctx, primaryAdmin, func(c *pgx.Conn) error {
		if _, err := c.Exec(ctx, "ALTER SYSTEM SET synchronous_standby_names = '"+standbyName+"'"); err != nil {
			return err
		}
		_, err := c.Exec(ctx, "SELECT pg_reload_conf()")
		return err
	}); err != nil {
		return nil, fmt.Errorf("chaos: synchronous standby: %w", err)
	}
	return s, nil
}

// promote makes the standby a primary and waits until it is one.
func (s *standby) promote(ctx context.Context) error {
	return withConn(ctx, s.adminURL, func(c *pgx.Conn) error {
		var ok bool
		if err := c.QueryRow(ctx, "SELECT pg_promote(true, 60)").Scan(&ok); err != nil {
			return fmt.Errorf("chaos: promote: %w", err)
		}
		if !ok {
			return fmt.Errorf("chaos: promote: not promoted within 60 s")
		}
		return nil
	})
}

func (s *standby) stop() {
	if s.repl != nil {
		s.repl.Close()
	}
	if s.pg != nil {
		s.pg.Stop()
	}
	_ = os.RemoveAll(s.dir)
}

func withConn(ctx context.Context, dsn string, fn func(*pgx.Conn) error) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	return fn(c)
}

// failover kills the primary (every process of it, as a lost host) and
// promotes the standby. floe is not told: its multi-host URL names both
// (each behind its proxy), and its next connections find the standby the
// one that accepts writes. It returns when the new primary accepts writes.
func (d *Deployment) failover(ctx context.Context, killed func()) error {
	if !d.standby.sync {
		// An asynchronous standby a little behind, as over a real network
		// or under load (on the loopback it is otherwise microseconds
		// behind, and nothing is lost): its replication connection is cut
		// for asyncLag while the primary goes on acknowledging, then the
		// primary dies.
		d.standby.repl.Set(PGMode{Refuse: true})
		sleep(ctx, asyncLag)
	}
	_ = syscall.Kill(-d.PG.Pid(), syscall.SIGKILL)
	killed()
	if err := d.standby.promote(ctx); err != nil {
		return err
	}
	u, err := url.Parse(d.directPG())
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	u.Host = d.standby.hostPort
	d.urlMu.Lock()
	d.PGURL = u.String()
	d.urlMu.Unlock()
	d.adminURL, d.failedOver = d.standby.adminURL, true
	return nil
}
