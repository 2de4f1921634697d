package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// produceStats counts what was produced, for the summary and the progress
// line (shown only when stderr is a terminal).
type produceStats struct {
	w          io.Writer
	start      time.Time
	records    int64 // acknowledged
	sentRecs   int64
	bytes      int64
	partitions map[int32]bool
	terminal   bool
	lastDraw   time.Time
}

func newProduceStats(w io.Writer) *produceStats {
	st := &produceStats{w: w, start: time.Now(), partitions: map[int32]bool{}}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			st.terminal = true
		}
	}
	return st
}

func (st *produceStats) sent(n int) { st.sentRecs += int64(n); st.progress() }

func (st *produceStats) acked(n, bytes int, parts []int32) {
	st.records += int64(n)
	st.bytes += int64(bytes)
	for _, p := range parts {
		st.partitions[p] = true
	}
	st.progress()
}

// progress redraws the progress line at most twice a second, after the
// first second.
func (st *produceStats) progress() {
	if !st.terminal || time.Since(st.start) < time.Second || time.Since(st.lastDraw) < 500*time.Millisecond {
		return
	}
	st.lastDraw = time.Now()
	fmt.Fprintf(st.w, "\r\033[Kproduced %d records (%s), %d in flight", st.records, humanBytes(st.bytes), st.sentRecs-st.records)
}

func (st *produceStats) stopProgress() {
	if st.terminal && !st.lastDraw.IsZero() {
		fmt.Fprint(st.w, "\r\033[K")
	}
}

func (st *produceStats) summary() {
	el := time.Since(st.start)
	fmt.Fprintf(st.w, "produced %d records (%s) to %d partitions in %v (%.0f records/s)\n",
		st.records, humanBytes(st.bytes), len(st.partitions), el.Round(time.Millisecond), float64(st.records)/max(el.Seconds(), 1e-9))
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
