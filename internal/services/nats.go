package services

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
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
	dir  string
	proc *Process
}

// StartNATS starts nats-server with JetStream on a free loopback port,
// building it into ToolsDir on first use.
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
		port, err := FreePort()
		if err != nil {
			lastErr = err
			continue
		}
		conf := fmt.Sprintf("listen: \"127.0.0.1:%d\"\njetstream {\n  store_dir: %q\n  max_memory_store: %d\n  max_file_store: %d\n",
			port, filepath.Join(dir, "js"), cfg.MaxMemory, cfg.MaxFile)
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
		err = WaitTCP(wctx, addr, proc)
		cancel()
		if err != nil {
			proc.Stop(syscall.SIGTERM, 5*time.Second)
			lastErr = err
			continue
		}
		return &NATS{URL: "nats://" + addr, dir: dir, proc: proc}, nil
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
