package services

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// NATSConfig configures StartNATS.
type NATSConfig struct {
	// SyncInterval is JetStream's sync_interval: how often file storage is
	// fsynced. "always" fsyncs every write before the acknowledgement (the
	// durability of floe's directory store); "" keeps the server default
	// (every 2 minutes, acknowledged once written to the OS).
	SyncInterval string
	// MaxMemory and MaxFile bound JetStream's storage.
	MaxMemory, MaxFile int64
}

// DefaultNATSConfig returns per-write fsync and 8 GiB of file storage.
func DefaultNATSConfig() NATSConfig {
	return NATSConfig{SyncInterval: "always", MaxMemory: 256 << 20, MaxFile: 8 << 30}
}

func (c NATSConfig) validate() error {
	switch {
	case c.MaxMemory <= 0:
		return fmt.Errorf("services: NATSConfig.MaxMemory %d must be positive", c.MaxMemory)
	case c.MaxFile <= 0:
		return fmt.Errorf("services: NATSConfig.MaxFile %d must be positive", c.MaxFile)
	}
	return nil
}

// NATS is a nats-server with JetStream file storage in a temporary directory.
type NATS struct {
	// URL is the client URL, nats://127.0.0.1:port.
	URL  string
	name string // server_name, unique: which server answers at URL
	dir  string
	proc *Process
}

// natsFreePort picks the server's port; tests replace it.
var natsFreePort = FreePort

// StartNATS starts nats-server with JetStream on a free loopback port,
// building it into ToolsDir on first use. It is ready once the server at
// the port says it is this one (its server_name, unique), not another
// nats-server holding the port.
func StartNATS(ctx context.Context, cfg NATSConfig, log *slog.Logger) (*NATS, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	bin, err := Tool(ctx, "nats-server", NATSServerModule, log)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "floe-nats-")
	if err != nil {
		return nil, fmt.Errorf("services: nats temp dir: %w", err)
	}
	var lastErr error
	for range 3 {
		port, err := natsFreePort()
		if err != nil {
			lastErr = err
			continue
		}
		name := fmt.Sprintf("floe-%d-%d", os.Getpid(), time.Now().UnixNano())
		conf := fmt.Sprintf("server_name: %q\nlisten: \"127.0.0.1:%d\"\njetstream {\n  store_dir: %q\n  max_memory_store: %d\n  max_file_store: %d\n",
			name, port, filepath.Join(dir, "js"), cfg.MaxMemory, cfg.MaxFile)
		if cfg.SyncInterval != "" {
			conf += fmt.Sprintf("  sync_interval: %s\n", cfg.SyncInterval)
		}
		conf += "}\n"
		confPath := filepath.Join(dir, "nats.conf")
		if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("services: nats config: %w", err)
		}
		proc, err := Start(ProcessSpec{Path: bin, Args: []string{"-c", confPath}, LogPath: filepath.Join(dir, "nats.log")})
		if err != nil {
			lastErr = err
			continue
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err = waitNATS(wctx, addr, name, proc)
		cancel()
		if err != nil {
			proc.Stop(syscall.SIGTERM, 5*time.Second)
			lastErr = err
			continue
		}
		return &NATS{URL: "nats://" + addr, name: name, dir: dir, proc: proc}, nil
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("services: nats-server: %w", lastErr)
}

// Pid is the server's process id.
func (n *NATS) Pid() int { return n.proc.Pid() }

// Stop ends the server and removes its storage.
func (n *NATS) Stop() {
	n.proc.Stop(syscall.SIGTERM, 10*time.Second)
	_ = os.RemoveAll(n.dir)
}

// waitNATS polls addr until the nats-server there greets as name (the
// INFO line a server sends each connection first), p exits, or ctx ends.
func waitNATS(ctx context.Context, addr, name string, p *Process) error {
	for {
		served, err := natsServerName(ctx, addr)
		if err == nil && served != name {
			return fmt.Errorf("services: the nats-server on %s is %q, not this one %q (another holds the port)", addr, served, name)
		}
		if err == nil {
			return nil
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("services: nats-server exited before %s answered: %v\n%s", addr, p.Err(), p.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("services: nats-server on %s did not answer: %w (last error: %v)\n%s", addr, ctx.Err(), err, p.LogTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// natsServerName reads the server_name of the INFO greeting of the
// nats-server at addr.
func natsServerName(ctx context.Context, addr string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReaderSize(c, 64<<10).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("services: nats greeting: %w", err)
	}
	rest, ok := strings.CutPrefix(line, "INFO ")
	if !ok {
		return "", fmt.Errorf("services: nats greeting %.40q is not INFO", line)
	}
	var info struct {
		Name string `json:"server_name"`
	}
	if err := json.Unmarshal([]byte(rest), &info); err != nil {
		return "", fmt.Errorf("services: nats INFO: %w", err)
	}
	return info.Name, nil
}
