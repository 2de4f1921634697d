package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress prints a progress line while runs go: redrawn in place (\r)
// a few times a second on a terminal, else one line every few seconds.
type Progress struct {
	w        io.Writer
	terminal bool
	every    time.Duration

	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
}

// NewProgress writes to w; terminal selects the in-place bar.
func NewProgress(w io.Writer, terminal bool) *Progress {
	every := 5 * time.Second
	if terminal {
		every = 250 * time.Millisecond
	}
	return &Progress{w: w, terminal: terminal, every: every}
}

// Begin shows a timed phase from start to end.
func (p *Progress) Begin(label string, start, end time.Time, live *Counters) {
	p.begin(func() string {
		now := time.Now()
		total := end.Sub(start)
		el := min(max(now.Sub(start), 0), total)
		frac := 0.0
		if total > 0 {
			frac = float64(el) / float64(total)
		}
		return fmt.Sprintf("%s %s %3.0f%% %5.1fs/%.0fs sent %d acked %d failed %d consumed %d",
			label, bar(frac, 20), frac*100, el.Seconds(), total.Seconds(),
			live.Sent.Load(), live.Acked.Load(), live.Failed.Load(), live.Consumed.Load())
	})
}

// BeginCount shows a phase that ends after total records (as counted by
// done).
func (p *Progress) BeginCount(label string, total int64, live *Counters, done func() int64) {
	start := time.Now()
	p.begin(func() string {
		n := done()
		frac := 0.0
		if total > 0 {
			frac = min(float64(n)/float64(total), 1)
		}
		return fmt.Sprintf("%s %s %3.0f%% %d/%d records %.1fs failed %d",
			label, bar(frac, 20), frac*100, n, total, time.Since(start).Seconds(), live.Failed.Load())
	})
}

// Note prints a line of its own (between phases).
func (p *Progress) Note(format string, args ...any) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *Progress) begin(line func() string) {
	p.End()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	stop, done := p.stop, p.done
	go func() {
		defer close(done)
		t := time.NewTicker(p.every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				if p.terminal {
					fmt.Fprintf(p.w, "\r%s\x1b[K\n", line())
				} else {
					fmt.Fprintln(p.w, line())
				}
				return
			case <-t.C:
				if p.terminal {
					fmt.Fprintf(p.w, "\r%s\x1b[K", line())
				} else {
					fmt.Fprintln(p.w, line())
				}
			}
		}
	}()
}

// End stops the current phase's line, printing it a last time.
func (p *Progress) End() {
	p.mu.Lock()
	stop, done := p.stop, p.done
	p.stop, p.done = nil, nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

func bar(frac float64, width int) string {
	n := int(frac*float64(width) + 0.5)
	n = min(max(n, 0), width)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}
