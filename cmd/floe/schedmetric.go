package main

import "regexp"

// schedLatencies selects the Go runtime's scheduling-latency histogram
// for the agent's /metrics (go_sched_latencies_seconds).
var schedLatencies = regexp.MustCompile(`^/sched/latencies:seconds$`)
