package agent

import "time"

// SetReadahead sets the read-ahead's minimum lag (bytes behind the head)
// and idle period; call it before the agent serves reads.
func SetReadahead(a *Agent, minLag int64, idle time.Duration) {
	ra := a.loads.ra
	ra.minLag.Store(minLag)
	ra.mu.Lock()
	ra.idle = idle
	ra.mu.Unlock()
}

// ReadaheadStats returns the read-ahead budget taken, the bytes readers
// took from it and its streams.
func ReadaheadStats(a *Agent) (held, served int64, streams int) {
	ra := a.loads.ra
	ra.mu.Lock()
	defer ra.mu.Unlock()
	return ra.held, ra.served.Load(), len(ra.streams)
}
