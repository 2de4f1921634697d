package services

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// FloeAddrs are the addresses a floe server bound, as it writes them to
// its -addr-file (server.addr_file, compactor.addr_file): started with
// 127.0.0.1:0 listeners, it says there which ports the kernel gave it, so
// that whoever started it never picks a port someone else may take first.
type FloeAddrs struct {
	GRPC    string `json:"grpc"`
	Metrics string `json:"metrics"`
	// Kafka is set once the agent's Kafka listener is bound (after its
	// stores answered); empty before, and without a Kafka listener.
	Kafka string `json:"kafka"`
}

// ReadAddrFile reads a floe -addr-file. Before the server wrote it the
// error is os.ErrNotExist; the file is replaced atomically, so it is
// never read half written.
func ReadAddrFile(path string) (FloeAddrs, error) {
	var a FloeAddrs
	data, err := os.ReadFile(path)
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return a, fmt.Errorf("services: addr file %s: %w", path, err)
	}
	return a, nil
}

// mtimeSlack is how far a file's modification time may lag the clock
// (the kernel stamps files with a coarse clock, a tick behind).
const mtimeSlack = 50 * time.Millisecond

// WaitAddrFile waits until the -addr-file at path holds addresses that ok
// accepts (nil: any), the process p (which writes it) exits, or ctx ends.
// A file older than p (a predecessor's, on a restart) is not read: what
// is read is p's, proof that p itself bound those addresses.
func WaitAddrFile(ctx context.Context, path string, p *Process, ok func(FloeAddrs) bool) (FloeAddrs, error) {
	for {
		a, err := ReadAddrFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return a, err
		}
		if fi, serr := os.Stat(path); err == nil && (serr != nil || fi.ModTime().Before(p.started.Add(-mtimeSlack))) {
			a, err = FloeAddrs{}, os.ErrNotExist // not p's (yet)
		}
		if err == nil && (ok == nil || ok(a)) {
			return a, nil
		}
		select {
		case <-p.Exited():
			return a, fmt.Errorf("services: process exited before writing its addresses to %s (%+v): %v\n%s", path, a, p.Err(), p.LogTail())
		case <-ctx.Done():
			return a, fmt.Errorf("services: addr file %s: %w (holds %+v)\n%s", path, ctx.Err(), a, p.LogTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// FreshAddrFile removes the -addr-file at path, if any, so that a
// process started next on it writes it anew (WaitAddrFile reads no file
// older than its process; removing it also keeps a reader of the file
// alone from a predecessor's addresses).
func FreshAddrFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("services: addr file: %w", err)
	}
	return nil
}

// WaitFloe waits until the floe server p has written its addresses to
// addrFile (as ok asks; nil: any) and its metrics listener, at the
// address it wrote, answers path (/readyz, /healthz) with 2xx. It
// returns the addresses.
func WaitFloe(ctx context.Context, p *Process, addrFile, path string, ok func(FloeAddrs) bool) (FloeAddrs, error) {
	a, err := WaitAddrFile(ctx, addrFile, p, ok)
	if err != nil {
		return a, err
	}
	return a, WaitHTTPOK(ctx, "http://"+a.Metrics+path, p)
}
