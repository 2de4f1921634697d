package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// CPUUse is where the machine's CPU went over a run's measured window, in
// cores (CPU seconds per second of wall time), so that a figure taken on a
// saturated machine says so: a "maximum" whose half still leaves the
// machine busy is the machine's, not the broker's.
type CPUUse struct {
	// Cores is the machine's CPU count.
	Cores int `json:"cores"`
	// Machine is every process on the host (/proc/stat: all but idle and
	// iowait); MachineNiced the part of it run at a positive nice value
	// (other work the harness does not control).
	Machine      float64 `json:"machine"`
	MachineNiced float64 `json:"machine_niced"`
	// Harness is floe-bench itself: producers, consumers, encoding.
	Harness float64 `json:"harness"`
	// Servers is the system under test (floe's agents from their
	// metrics; a peer broker from /proc).
	Servers float64 `json:"servers"`
	// Services are the processes the servers depend on, started by the
	// harness (PostgreSQL and versitygw with their children).
	Services float64 `json:"services"`
}

// Others is the machine's CPU that none of the run's processes used.
func (u CPUUse) Others() float64 {
	return max(u.Machine-u.Harness-u.Servers-u.Services, 0)
}

// Busy is the machine's use as a fraction of its cores.
func (u CPUUse) Busy() float64 {
	if u.Cores <= 0 {
		return 0
	}
	return u.Machine / float64(u.Cores)
}

// hostSample is one reading of the host's CPU counters.
type hostSample struct {
	ok       bool
	busy     float64 // machine, seconds
	niced    float64
	harness  float64
	services float64
}

// sampleHost reads the machine's CPU time, this process's and that of
// the process trees rooted at services (Linux /proc; elsewhere only the
// harness's own).
func sampleHost(services []int) hostSample {
	var s hostSample
	if cpu, ok := processCPU(); ok {
		s.harness = cpu.Seconds()
	}
	busy, niced, err := readProcStat()
	if err != nil {
		return s
	}
	s.ok, s.busy, s.niced = true, busy, niced
	if len(services) > 0 {
		s.services = treeCPU(services)
	}
	return s
}

// cpuUse turns two samples over secs of wall time into a CPUUse; servers
// is the system under test's CPU seconds over the same window.
func cpuUse(a, b hostSample, secs, servers float64) CPUUse {
	u := CPUUse{Cores: runtime.NumCPU()}
	if secs <= 0 {
		return u
	}
	u.Harness = (b.harness - a.harness) / secs
	u.Servers = servers / secs
	if a.ok && b.ok {
		u.Machine = (b.busy - a.busy) / secs
		u.MachineNiced = (b.niced - a.niced) / secs
		u.Services = max(b.services-a.services, 0) / secs
	}
	return u
}

// readProcStat returns the machine's busy and niced CPU seconds so far.
func readProcStat() (busy, niced float64, err error) {
	f, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("bench: %w", err)
	}
	line, _, _ := bytes.Cut(f, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("bench: /proc/stat: unexpected first line %q", line)
	}
	var v [10]float64
	for i := 1; i < len(fields) && i <= len(v); i++ {
		v[i-1], _ = strconv.ParseFloat(fields[i], 64)
	}
	// user nice system idle iowait irq softirq steal (guest time is
	// already in user and nice).
	total := v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]
	return (total - v[3] - v[4]) / clockTicks, v[1] / clockTicks, nil
}

// treeCPU is the CPU seconds of the processes rooted at roots and all
// their descendants, the reaped children's included.
func treeCPU(roots []int) float64 {
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	parent := map[int]int{}
	cpu := map[int]float64{}
	for _, path := range dirs {
		pid, ppid, secs, ok := readPidStat(path)
		if ok {
			parent[pid], cpu[pid] = ppid, secs
		}
	}
	in := map[int]bool{}
	for _, r := range roots {
		in[r] = true
	}
	var within func(pid, depth int) bool
	within = func(pid, depth int) bool {
		if in[pid] {
			return true
		}
		p, ok := parent[pid]
		if !ok || p <= 1 || depth > 64 {
			return false
		}
		return within(p, depth+1)
	}
	total := 0.0
	for pid, secs := range cpu {
		if within(pid, 0) {
			total += secs
		}
	}
	return total
}

// readPidStat reads a /proc/<pid>/stat file: the parent pid and the CPU
// seconds of the process and its reaped children.
func readPidStat(path string) (pid, ppid int, secs float64, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, 0, false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return 0, 0, 0, false
	}
	open, closeParen := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || closeParen < open {
		return 0, 0, 0, false
	}
	pid, err = strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return 0, 0, 0, false
	}
	f2 := strings.Fields(line[closeParen+1:])
	// f2[0] is field 3 (state): ppid is field 4, utime..cstime 14..17.
	if len(f2) < 15 {
		return 0, 0, 0, false
	}
	ppid, _ = strconv.Atoi(f2[1])
	for _, i := range []int{11, 12, 13, 14} {
		v, _ := strconv.ParseFloat(f2[i], 64)
		secs += v
	}
	return pid, ppid, secs / clockTicks, true
}
