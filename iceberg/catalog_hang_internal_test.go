package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	icego "github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"

	"github.com/floe-broker/floe/internal/testenv"
)

// TestOpenReturnsWhenPostgresHangs: PostgreSQL freezing (SIGSTOP) while
// the catalog is opened, inside iceberg-go's NewCatalog (whose statements
// take no context), does not hold Open past its context: Open fails with
// the context's error before the server is resumed, and once it is, the
// next Open succeeds (nothing was left locked). Today's code waited for
// the server: an agent's first table read, or a compactor's start, hung
// for as long as PostgreSQL did.
func TestOpenReturnsWhenPostgresHangs(t *testing.T) {
	s3 := testenv.S3(t)
	cfg := DefaultPostgresConfig(testenv.Postgres(t), s3.Bucket)
	cfg.S3Endpoint, cfg.S3Region, cfg.S3AccessKey, cfg.S3SecretKey = s3.Endpoint, s3.Region, s3.AccessKey, s3.SecretKey

	var resumed atomic.Bool
	paused := make(chan func(), 1)
	t.Cleanup(func() { newSQLCatalog = sqlcat.NewCatalog })
	newSQLCatalog = func(name string, db *sql.DB, d sqlcat.SupportedDialect, props icego.Properties) (*sqlcat.Catalog, error) {
		newSQLCatalog = sqlcat.NewCatalog // the next Open runs as usual
		paused <- testenv.PausePostgres(t)
		return sqlcat.NewCatalog(name, db, d, props)
	}
	opened, back := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(back)
		// Today's code returns only once the server answers: resume it
		// after a while so that the test fails rather than hangs.
		resume := <-paused
		select {
		case <-opened:
		case <-time.After(20 * time.Second):
		}
		resumed.Store(true)
		resume()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	w, err := Open(ctx, cfg, slog.New(slog.DiscardHandler))
	wasResumed := resumed.Load()
	close(opened)
	if err == nil {
		w.Close()
	}
	if wasResumed || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Open with PostgreSQL frozen in NewCatalog: %v, returned after the server was resumed: %v; want the context's deadline, before", err, wasResumed)
	}
	<-back
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	w, err = Open(ctx2, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("Open once PostgreSQL is back: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
