package main

import "testing"

// TestSoftMemoryLimit: the agent's soft memory limit is its buffered
// bytes, its read cache and the configured room (the default for 0), and
// none when GOMEMLIMIT is set in the environment.
func TestSoftMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name                  string
		env                   string
		buffered, cache, room int64
		want                  int64
		set                   bool
	}{
		{"defaults", "", 64 * mib, 256 * mib, 0, 64*mib + 256*mib + defaultMemoryRoom, true},
		{"room set", "", 64 * mib, 256 * mib, 100 * mib, 420 * mib, true},
		{"no cache", "", 64 * mib, 0, 32 * mib, 96 * mib, true},
		{"GOMEMLIMIT set", "1GiB", 64 * mib, 256 * mib, 0, 0, false},
		{"GOMEMLIMIT off", "off", 64 * mib, 256 * mib, 100 * mib, 0, false},
	} {
		got, set := softMemoryLimit(tc.env, tc.buffered, tc.cache, tc.room)
		if got != tc.want || set != tc.set {
			t.Errorf("%s: softMemoryLimit = %d, %v; want %d, %v", tc.name, got, set, tc.want, tc.set)
		}
	}
	// Under floe-bench's memory bound (buffered + cache + 256 MiB) with
	// room for the binary's mapped code and data, which the limit does not
	// cover (about 60 MiB resident).
	if defaultMemoryRoom > 256*mib-80*mib {
		t.Errorf("defaultMemoryRoom %d MiB leaves under 80 MiB of floe-bench's 256 MiB for what the limit does not cover", defaultMemoryRoom/mib)
	}
}
