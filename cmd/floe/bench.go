package main

import (
	"context"
	"errors"
	"io"
)

// runBench is replaced by the benchmark harness.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("bench: not built yet")
}
