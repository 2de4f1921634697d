package services

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"
)

// Halt stops the cluster with a fast shutdown (clients see their sessions
// terminated, 57P01) and keeps its data, so that Resume can start it again
// on the same port. It is for fault-injection tests; it must not run
// concurrently with the other methods of pg. An attached server cannot be
// halted.
func (pg *Postgres) Halt() error {
	if pg.proc == nil {
		return errors.New("services: an attached postgres server cannot be halted")
	}
	pg.proc.Stop(syscall.SIGINT, 15*time.Second)
	return nil
}

// Resume starts a halted cluster again, with the same arguments and port,
// and waits until it accepts connections or ctx ends.
func (pg *Postgres) Resume(ctx context.Context) error {
	if pg.proc == nil {
		return errors.New("services: an attached postgres server cannot be resumed")
	}
	old := pg.proc
	select {
	case <-old.Exited():
	default:
		return errors.New("services: postgres is running: Halt it first")
	}
	proc, err := Start(ProcessSpec{Path: old.cmd.Path, Args: old.cmd.Args[1:], Dir: old.cmd.Dir,
		LogPath: old.logPath, Credential: old.cmd.SysProcAttr.Credential})
	if err != nil {
		return err
	}
	pg.proc = proc
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		served, err := pgDataDirectory(cctx, pg.AdminURL)
		cancel()
		if want := filepath.Join(pg.dir, "data"); err == nil && served != want {
			// Another cluster took the port while this one was halted.
			proc.Stop(syscall.SIGKILL, time.Second)
			return fmt.Errorf("%w: %s by the cluster on %s, not %s", errPortTaken, pg.AdminURL, served, want)
		}
		if err == nil {
			return nil
		}
		select {
		case <-proc.Exited():
			return fmt.Errorf("services: postgres exited at restart (%v):\n%s", proc.Err(), proc.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("services: postgres not ready after restart: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
