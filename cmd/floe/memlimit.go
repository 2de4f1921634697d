package main

// defaultMemoryRoom is server.memory_room_bytes's default: what the agent
// may hold beyond its buffered bytes and read cache.
const defaultMemoryRoom = 160 << 20

// softMemoryLimit is the soft memory limit the process sets itself (Go's
// runtime/debug.SetMemoryLimit), and whether it sets one: none when the
// environment's GOMEMLIMIT is set (the runtime honours that one, "off"
// included). The limit is what the agent holds by configuration for long
// — unacknowledged bytes (buffered) and the read cache (cache) — plus
// room for reads in progress (-max-loading-bytes), read-ahead
// (-readahead-bytes), requests in flight and the runtime (room; 0:
// defaultMemoryRoom). The loading and read-ahead budgets are not added on
// top: under a produce overload they sit idle and the heap's garbage
// would take their room. The limit covers the Go runtime's memory only:
// the resident set also counts the binary's mapped code and data (about
// 60 MiB), which is why the room is kept under floe-bench's memory bound
// of buffered + cache + 256 MiB (docs/benchmarks.md).
func softMemoryLimit(gomemlimit string, buffered, cache, room int64) (int64, bool) {
	if gomemlimit != "" {
		return 0, false
	}
	if room <= 0 {
		room = defaultMemoryRoom
	}
	return buffered + cache + room, true
}
