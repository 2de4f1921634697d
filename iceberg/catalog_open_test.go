package iceberg_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/iceberg/icetest"
)

// Replicas of floe compactor starting at once on a fresh PostgreSQL all
// open the catalog: the first ones create its tables, none fails on
// another's concurrent CREATE (PostgreSQL's `type "iceberg_tables"
// already exists`, which made a replica exit at start).
func TestOpenPostgresConcurrently(t *testing.T) {
	for round := range 3 {
		cfg := icetest.PostgresConfig(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		const n = 6
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				w, err := iceberg.Open(ctx, cfg, slog.New(slog.DiscardHandler))
				if err == nil {
					err = w.Close()
				}
				errs[i] = err
			}()
		}
		close(start)
		wg.Wait()
		cancel()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d: open %d of %d at once: %v", round, i, n, err)
			}
		}
	}
}
