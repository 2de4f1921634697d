package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/floe-broker/floe/client"
)

// What `floe produce` says when it stops early: the line it stopped at
// and why, then exactly which lines were produced, which were not, and
// which may or may not have been (an answer that never came).

// stopReport is what is known of the lines once produce stopped.
type stopReport struct {
	stoppedAt int    // the line it stopped at (0: at the end of the input)
	why       string // one line
	refused   []int  // lines of the requests refused or not stored
	unknown   []int  // lines of the requests whose outcome is unknown
	pending   []int  // lines read and batched, never sent
	lastRead  int    // the last line batched (or refused here)
	eof       bool   // the input was batched to its end
	produced  int64  // records acknowledged
}

// recordIndex finds the record an agent's refusal names ("record 37").
var recordIndex = regexp.MustCompile(`\brecord (\d+)\b`)

// recordPrefix is the agent's naming of a record in a refusal.
var recordPrefix = regexp.MustCompile(`produce: record \d+: `)

// refusedLine is the line of the record a refusal of the request of lines
// names, or the request's first line.
func refusedLine(lines []int, msg string) int {
	if m := recordIndex.FindStringSubmatch(msg); m != nil {
		if i, err := strconv.Atoi(m[1]); err == nil && i < len(lines) {
			return lines[i]
		}
	}
	return lines[0]
}

// settle waits for the requests in flight after a failed one and returns
// what became of every line.
func (lp *lineProducer) settle(be *client.BatchError) stopReport {
	failed, unknown := lp.p.Settle()
	r := stopReport{lastRead: lp.lastRead, eof: lp.eof}
	t := be.Tag.(batchTag)
	r.stoppedAt = refusedLine(t.lines, be.Err.Error())
	// "produce: record 3: " indexes the request; the line says it better.
	r.why = recordPrefix.ReplaceAllString(oneLine(be.Err), "")
	for _, tag := range failed {
		r.refused = append(r.refused, tag.(batchTag).lines...)
	}
	for _, tag := range unknown {
		r.unknown = append(r.unknown, tag.(batchTag).lines...)
	}
	r.pending = lp.pendingLines()
	r.produced = lp.stats.records
	return r
}

// lineError is a line the command cannot produce.
type lineError struct {
	n   int
	err error
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %v", e.n, e.err) }
func (e *lineError) Unwrap() error { return e.err }

// stopped is the report of a stop on a bad line (after the lines before
// it were flushed).
func (lp *lineProducer) stopped(le *lineError) stopReport {
	return stopReport{stoppedAt: le.n, why: le.err.Error(), refused: []int{le.n}, lastRead: le.n,
		eof: lp.eof, produced: lp.stats.records}
}

// pendingLines are the lines batched and not sent.
func (lp *lineProducer) pendingLines() []int {
	var out []int
	for _, b := range lp.bufs {
		out = append(out, b.lines...)
	}
	return out
}

// String is the report in one line.
func (r stopReport) String() string {
	var b strings.Builder
	if r.stoppedAt > 0 {
		fmt.Fprintf(&b, "stopped at line %d: ", r.stoppedAt)
	}
	b.WriteString(r.why)
	not := append(slices.Clone(r.refused), r.pending...)
	produced := complement(append(slices.Clone(not), r.unknown...), r.lastRead)
	fmt.Fprintf(&b, "; produced %d records", r.produced)
	if len(produced) > 0 {
		fmt.Fprintf(&b, ": %s", linesText(produced))
	}
	if len(not) > 0 {
		fmt.Fprintf(&b, "; not produced: %s", linesText(not))
	}
	if len(r.unknown) > 0 {
		fmt.Fprintf(&b, "; outcome unknown (no answer): %s", linesText(r.unknown))
	}
	if !r.eof {
		fmt.Fprintf(&b, "; nothing after line %d was sent", r.lastRead)
	}
	return b.String()
}

// complement lists the lines 1..last not in not.
func complement(not []int, last int) []int {
	skip := make(map[int]bool, len(not))
	for _, l := range not {
		skip[l] = true
	}
	var out []int
	for l := 1; l <= last; l++ {
		if !skip[l] {
			out = append(out, l)
		}
	}
	return out
}

// linesText is "line 3" or "lines 1-600, 701-800".
func linesText(lines []int) string {
	if len(slices.Compact(slices.Sorted(slices.Values(lines)))) == 1 {
		return "line " + ranges(lines)
	}
	return "lines " + ranges(lines)
}

// maxRanges bounds the ranges a report spells out.
const maxRanges = 10

// ranges writes lines as sorted ranges: "1-600, 701-800".
func ranges(lines []int) string {
	lines = slices.Compact(slices.Sorted(slices.Values(lines)))
	var parts []string
	for i := 0; i < len(lines); {
		j := i
		for j+1 < len(lines) && lines[j+1] == lines[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(lines[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", lines[i], lines[j]))
		}
		i = j + 1
	}
	if len(parts) > maxRanges {
		parts = append(parts[:maxRanges], fmt.Sprintf("and %d more ranges", len(parts)-maxRanges))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
