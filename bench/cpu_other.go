//go:build !unix

package bench

import "time"

// processCPU is unknown here.
func processCPU() (time.Duration, bool) { return 0, false }
