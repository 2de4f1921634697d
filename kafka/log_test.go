package kafka_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
)

// logBuf collects a test's log lines.
type logBuf struct {
	mu sync.Mutex // protects b
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var logs sync.Map // testing.TB -> *logBuf

func testLogger(t testing.TB) *slog.Logger {
	lb := &logBuf{}
	logs.Store(t, lb)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kafka server log:\n%s", lb.String())
		}
		logs.Delete(t)
	})
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func logOf(t testing.TB) string {
	if v, ok := logs.Load(t); ok {
		return v.(*logBuf).String()
	}
	return ""
}
