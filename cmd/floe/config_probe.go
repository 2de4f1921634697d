package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// withPrefix returns store under prefix (none when empty).
func withPrefix(store objectstore.Store, prefix string) objectstore.Store {
	if p := strings.Trim(prefix, "/"); p != "" {
		return objectstore.WithPrefix(store, p)
	}
	return store
}

// probeBucket checks at start that the bucket exists and accepts writes
// under prefix: a missing bucket or a refused write is a *permanentError
// (waiting does not fix it), anything else may pass.
func probeBucket(ctx context.Context, s3 *s3store.Store, prefix string) error {
	if err := s3.CheckBucket(ctx); err != nil {
		return storeStartError(err)
	}
	return probeWrites(ctx, withPrefix(s3, prefix))
}

// probeWrites PUTs and DELETEs a small object of its own.
func probeWrites(ctx context.Context, store objectstore.Store) error {
	host, _ := os.Hostname()
	key := fmt.Sprintf("floe-start-probe/%s-%d-%d", host, os.Getpid(), time.Now().UnixNano())
	if err := store.Put(ctx, key, []byte("floe start probe\n"), objectstore.PutOptions{}); err != nil {
		return storeStartError(fmt.Errorf("write probe (put %s): %w", key, err))
	}
	if err := store.Delete(ctx, key); err != nil {
		return storeStartError(fmt.Errorf("write probe (delete %s): %w", key, err))
	}
	return nil
}

func storeStartError(err error) error {
	err = fmt.Errorf("object store: %w", err)
	if objectstore.IsPermanent(err) {
		return &permanentError{err}
	}
	return err
}
