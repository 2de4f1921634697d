//go:build engines

package engines

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/services"
)

// TestTrinoPortOfAnotherServer: Trino's readiness on its picked port
// takes a started Trino of another environment (another run's Trino on
// the port) for a taken port, never for its own; its own environment is
// ready once it is no longer starting.
func TestTrinoPortOfAnotherServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := services.Start(services.ProcessSpec{Path: "/bin/sleep", Args: []string{"60"}, LogPath: filepath.Join(t.TempDir(), "log")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(9, time.Second)
	info := func(environment string, starting func() bool) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"nodeVersion":{"version":"476"},"environment":%q,"coordinator":true,"starting":%t}`, environment, starting())
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	other := info("floe_engines_other", func() bool { return false })
	if err := waitTrino(ctx, other.URL, "floe_engines_mine", p); !errors.Is(err, errTrinoPortTaken) {
		t.Fatalf("another environment's Trino on the port: %v, want errTrinoPortTaken", err)
	}
	var polls atomic.Int32
	own := info("floe_engines_mine", func() bool { return polls.Add(1) < 3 })
	if err := waitTrino(ctx, own.URL, "floe_engines_mine", p); err != nil || polls.Load() < 3 {
		t.Fatalf("its own Trino: %v after %d polls, want ready once no longer starting", err, polls.Load())
	}
}
