package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times (100 on
// every Linux architecture Go supports).
const clockTicks = 100

// ProcStat is a local process's CPU time and resident memory, read from
// /proc: how the peer (nats-server), which exposes no Prometheus metrics,
// is measured.
type ProcStat struct {
	CPUSeconds float64
	RSSBytes   float64
}

// ReadProcStat reads pid's figures from /proc.
func ReadProcStat(pid int) (ProcStat, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcStat{}, fmt.Errorf("bench: process %d: %w", pid, err)
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ProcStat{}, fmt.Errorf("bench: process %d: malformed stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15, rss 24.
	if len(f) < 22 {
		return ProcStat{}, fmt.Errorf("bench: process %d: short stat", pid)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	rss, err3 := strconv.ParseFloat(f[21], 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return ProcStat{}, fmt.Errorf("bench: process %d: malformed stat", pid)
	}
	return ProcStat{CPUSeconds: (utime + stime) / clockTicks, RSSBytes: rss * float64(os.Getpagesize())}, nil
}

// pidStats is a local peer server's ServerStats from /proc (nothing
// without a pid).
func pidStats(pid int) (ServerStats, error) {
	if pid <= 0 {
		return ServerStats{}, nil
	}
	ps, err := ReadProcStat(pid)
	if err != nil {
		return ServerStats{}, err
	}
	return ServerStats{CPUSeconds: ps.CPUSeconds, RSSBytes: []float64{ps.RSSBytes}}, nil
}
