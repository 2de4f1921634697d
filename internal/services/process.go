// Package services starts the real services floe's tools need — a
// throwaway PostgreSQL cluster, a versitygw S3 server, a NATS server with
// JetStream, and floe processes — from a binary (floe-bench), not only from
// tests. Every service lives in a fresh temporary directory, listens on the
// loopback on a free port, dies with the process that started it (Linux
// parent-death signal), and is removed by its Stop method.
//
// Tools that are not installed (versitygw, nats-server) are built with
// `go install` into the tools directory (see ToolsDir) on first use.
package services

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a child process started by Start. It is killed if the parent
// dies.
type Process struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	err     error     // exit status, set before exited closes
	started time.Time // just before the process was started

	stopOnce sync.Once
}

// ProcessSpec describes a process to start.
type ProcessSpec struct {
	Path string
	Args []string
	Dir  string
	Env  []string // nil: the parent's environment
	// LogPath receives the process's stdout and stderr (required).
	LogPath string
	// Credential, optional, runs the process as another user.
	Credential *syscall.Credential
}

// Start starts spec. The child gets SIGKILL when the thread that started it
// ends, so it is started from a goroutine locked to its thread for the
// child's whole life: the child dies with the parent, never before.
func Start(spec ProcessSpec) (*Process, error) {
	if spec.LogPath == "" {
		return nil, errors.New("services: ProcessSpec.LogPath is required")
	}
	logFile, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("services: log file: %w", err)
	}
	defer logFile.Close() // the child holds its own descriptor
	if spec.Credential != nil {
		_ = os.Chown(spec.LogPath, int(spec.Credential.Uid), int(spec.Credential.Gid))
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: spec.Credential, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p := &Process{cmd: cmd, logPath: spec.LogPath, exited: make(chan struct{}), started: time.Now()}
	started := make(chan error, 1)
	go func() {
		defer close(p.exited)
		// Pdeathsig fires when the forking *thread* ends, not the process:
		// keep this goroutine on its thread while the child runs, then hand
		// the thread back. (A goroutine that exits locked ends its thread,
		// which would kill every other child forked from it earlier, such
		// as a test's agent process.)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
	}()
	if err := <-started; err != nil {
		<-p.exited
		return nil, fmt.Errorf("services: start %s: %w", spec.Path, err)
	}
	return p, nil
}

// Pid returns the process id; a nil *Process (no process) has 0.
func (p *Process) Pid() int {
	if p == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is the exit status once Exited is closed.
func (p *Process) Err() error {
	<-p.exited
	return p.err
}

// LogPath is the file holding the process's output.
func (p *Process) LogPath() string { return p.logPath }

// LogTail returns the last few KiB of the process's output.
func (p *Process) LogTail() string { return logTail(p.logPath, 4000) }

// Stop sends sig, waits up to grace for the process to exit, then kills it
// and waits. It is safe to call more than once, and does nothing on a nil
// *Process.
func (p *Process) Stop(sig syscall.Signal, grace time.Duration) {
	if p == nil {
		return
	}
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(sig)
		select {
		case <-p.exited:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	<-p.exited
}

// FreePort asks the kernel for a TCP port on the loopback that is free
// at this moment, for a third-party server that must be told its port
// before it listens (it cannot listen on port 0). Someone else may take
// the port before the server binds it: its start tries again on another
// port, and its readiness proves that the server answering there is the
// one it started (a data directory, a name, a cluster id of its own).
// floe's own processes never need it: they listen on 127.0.0.1:0 and
// report the addresses they bound (-addr-file, WaitFloe).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("services: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreeAddr returns a free "127.0.0.1:port" address (see FreePort).
func FreeAddr() (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}

// WaitHTTP polls url until it answers with any status, the process exits,
// or ctx ends.
func WaitHTTP(ctx context.Context, url string, p *Process) error {
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("services: process exited before %s answered: %v\n%s", url, p.Err(), p.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("services: %s did not answer: %w (last error: %v)\n%s", url, ctx.Err(), err, p.LogTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WaitHTTPOK polls url until it answers 2xx (a readiness endpoint), the
// process exits, or ctx ends.
func WaitHTTPOK(ctx context.Context, url string, p *Process) error {
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	last := "no answer"
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("services: process exited before %s answered 2xx: %v\n%s", url, p.Err(), p.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("services: %s did not answer 2xx: %w (last: %s)\n%s", url, ctx.Err(), last, p.LogTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WaitTCP polls addr until it accepts a connection, the process exits, or
// ctx ends.
func WaitTCP(ctx context.Context, addr string, p *Process) error {
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("services: process exited before %s accepted connections: %v\n%s", addr, p.Err(), p.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("services: %s accepted no connection: %w (last error: %v)\n%s", addr, ctx.Err(), err, p.LogTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
