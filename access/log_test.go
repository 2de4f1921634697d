package access_test

import (
	"context"
	"log/slog"
	"sync"
)

// countHandler counts WARN records.
type countHandler struct {
	mu sync.Mutex // protects n
	n  int
}

func newLogger(h *countHandler) *slog.Logger { return slog.New(h) }

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
	}
	return nil
}
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }
