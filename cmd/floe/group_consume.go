package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/floe-broker/floe/client"
)

// groupConsume is `floe consume TOPIC -group G`.
type groupConsume struct {
	clients        []*client.Client
	topic, group   string
	from           string
	follow         bool
	max            int64
	commitInterval time.Duration
	sessionTimeout time.Duration
	pr             *printer
	w              *bufio.Writer
	stderr         io.Writer
}

// run consumes as a member of the group: the records of the partitions the
// group assigns, from its committed positions (or -from, earliest or
// latest, where it has none), committing what was printed. Without
// -follow it stops once every assigned partition is read up to its high
// watermark at assignment, commits and leaves.
func (gc *groupConsume) run(ctx context.Context) error {
	opts := client.GroupOptions{Group: gc.group, Topic: gc.topic, SessionTimeout: gc.sessionTimeout,
		CommitInterval: gc.commitInterval, Batches: true,
		Resume: client.ResumeOptions{OnRetry: func(a string, err error, wait time.Duration) {
			fmt.Fprintf(gc.stderr, "floe: consume: %s from %s; resuming in %v\n", oneLine(err), a, wait.Round(time.Millisecond))
		}}}
	switch gc.from {
	case "earliest", "beginning":
		opts.Earliest = true
	case "latest", "end":
	default:
		return fmt.Errorf("flag -from: with -group, %q is neither earliest nor latest (use 'floe group reset' to move the group)", gc.from)
	}
	g, err := client.NewGroupConsumer(gc.clients, opts)
	if err != nil {
		return err
	}
	var n int64
	err = func() error {
		for {
			if !gc.follow && g.CaughtUp() {
				return nil
			}
			// Printed records are flushed before Poll, which may commit them.
			if err := gc.w.Flush(); err != nil {
				return err
			}
			rec, err := g.Poll(ctx)
			if err != nil {
				return err
			}
			if rec == nil {
				continue
			}
			if err := gc.pr.print(rec.GetPartition(), rec); err != nil {
				return err
			}
			if n++; gc.max > 0 && n >= gc.max {
				return nil
			}
		}
	}()
	if ferr := gc.w.Flush(); ferr != nil && err == nil {
		err = ferr
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		err = nil // interrupted: commit what was printed
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if cerr := g.Close(cctx); cerr != nil && err == nil {
		err = fmt.Errorf("commit: %w", cerr)
	}
	if err != nil {
		return fmt.Errorf("consume %q with group %q: %w", gc.topic, gc.group, err)
	}
	return nil
}
