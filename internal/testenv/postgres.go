package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresURLEnv names the environment variable that points the tests at an
// existing PostgreSQL server (a superuser URL) instead of a throwaway cluster.
const PostgresURLEnv = "FLOE_TEST_POSTGRES_URL"

const (
	pgStartTimeout = 20 * time.Second
	pgStopTimeout  = 15 * time.Second
)

var (
	pgOnce   sync.Once
	pgAdmin  string // admin URL of the server, set by pgOnce
	pgErr    error  // why the server could not be had, set by pgOnce
	pgDBSeq  atomic.Int64
	pgRemote bool // the server is FLOE_TEST_POSTGRES_URL's, not ours
)

// Postgres returns the URL of a fresh, empty database on the test
// PostgreSQL server: a throwaway PostgreSQL 15 cluster started once per test
// process (stopped by Main), or the server named by FLOE_TEST_POSTGRES_URL.
// Any failure fails the test.
func Postgres(t testing.TB) string {
	t.Helper()
	admin := PostgresAdminURL(t)
	name := fmt.Sprintf("floe_test_%d_%d", os.Getpid(), pgDBSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pgExec(ctx, admin, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("testenv: create database %s: %v", name, err)
	}
	if pgRemote {
		// Someone else's server: leave it as we found it.
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := pgExec(ctx, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
				t.Errorf("testenv: drop database %s: %v", name, err)
			}
		})
	}
	dsn, err := withDatabase(admin, name)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return dsn
}

// PostgresAdminURL returns a superuser URL of the test PostgreSQL server
// (its "postgres" database), starting the server on first use.
func PostgresAdminURL(t testing.TB) string {
	t.Helper()
	pgOnce.Do(func() {
		if u := os.Getenv(PostgresURLEnv); u != "" {
			pgRemote = true
			ctx, cancel := context.WithTimeout(context.Background(), pgStartTimeout)
			defer cancel()
			if err := pgExec(ctx, u, "SELECT 1"); err != nil {
				pgErr = fmt.Errorf("%s=%q is unreachable: %w", PostgresURLEnv, u, err)
				return
			}
			pgAdmin = u
			return
		}
		pgAdmin, pgErr = startCluster()
	})
	if pgErr != nil {
		t.Fatalf("testenv: postgres: %v", pgErr)
	}
	return pgAdmin
}

// withDatabase returns dsn with its database replaced by name.
func withDatabase(dsn, name string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("postgres URL %q is not a postgres:// URL", dsn)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// pgExec runs one statement on a short-lived connection.
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
	if dir := "/usr/lib/postgresql/15/bin"; fileExists(filepath.Join(dir, "postgres")) {
		return dir, nil
	}
	out, err := exec.Command("pg_config", "--bindir").Output()
	if err != nil {
		return "", fmt.Errorf("no PostgreSQL 15 in /usr/lib/postgresql/15/bin and pg_config failed (apt-get install postgresql-15): %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if !fileExists(filepath.Join(dir, "postgres")) || !fileExists(filepath.Join(dir, "initdb")) {
		return "", fmt.Errorf("pg_config --bindir %s holds no postgres and initdb binaries", dir)
	}
	return dir, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// freePort asks the kernel for a free TCP port on the loopback.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startCluster creates and starts a throwaway cluster and registers its
// shutdown with Main. It returns the cluster's admin URL.
func startCluster() (string, error) {
	bin, err := pgBinDir()
	if err != nil {
		return "", err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root: run it as the postgres user.
		u, err := user.Lookup("postgres")
		if err != nil {
			return "", fmt.Errorf("running as root and there is no postgres user to run PostgreSQL as: %w", err)
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err := errors.Join(err1, err2); err != nil {
			return "", fmt.Errorf("postgres user ids: %w", err)
		}
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "floe-pg-")
	if err != nil {
		return "", fmt.Errorf("temp dir: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("chown %s to postgres: %w", dir, err)
		}
	}
	data := filepath.Join(dir, "data")

	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "--no-sync",
		"-U", "postgres", "-E", "UTF8", "--locale=C")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("initdb: %w\n%s", err, out)
	}

	// The free port may be taken before the server binds it: try again.
	for attempt := 1; ; attempt++ {
		admin, stop, err := runServer(bin, dir, data, cred)
		if err == nil {
			registerCleanup(stop)
			return admin, nil
		}
		if attempt == 3 || !errors.Is(err, errPortTaken) {
			os.RemoveAll(dir)
			return "", err
		}
	}
}

var errPortTaken = errors.New("port taken")

// runServer starts postgres on dir/data and waits until it accepts
// connections. It returns the admin URL and the function that stops it.
func runServer(bin, dir, data string, cred *syscall.Credential) (string, func(), error) {
	port, err := freePort()
	if err != nil {
		return "", nil, fmt.Errorf("free port: %w", err)
	}
	logPath := filepath.Join(dir, "postgres.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", nil, fmt.Errorf("log file: %w", err)
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200")
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Pdeathsig fires when the thread that started the child exits, so the
	// child is started from a goroutine locked to its thread until the
	// child exits: the server dies with the test process, never before.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		logFile.Close()
		return "", nil, fmt.Errorf("start postgres: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(pgStopTimeout):
			_ = cmd.Process.Kill()
			<-exited
		}
		logFile.Close()
		os.RemoveAll(dir)
	}

	admin := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(pgStartTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := pgExec(ctx, admin, "SELECT 1")
		cancel()
		if err == nil {
			return admin, stop, nil
		}
		select {
		case werr := <-exited:
			logFile.Close()
			log, _ := os.ReadFile(logPath)
			if strings.Contains(string(log), "could not bind") || strings.Contains(string(log), "already in use") {
				return "", nil, fmt.Errorf("%w: %d:\n%s", errPortTaken, port, log)
			}
			return "", nil, fmt.Errorf("postgres exited at start (%v):\n%s", werr, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			_ = cmd.Process.Kill()
			<-exited
			logFile.Close()
			return "", nil, fmt.Errorf("postgres not ready after %v: %w\n%s", pgStartTimeout, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
