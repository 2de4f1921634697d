package batcher

import "time"

// SetWaitedMinAge sets the age a file must reach before sealWaited may
// seal it (the default is two fifths of the linger), so that tests with a linger
// that never ends can see waited seals at once.
func SetWaitedMinAge(cfg *Config, d time.Duration) { cfg.waitedMinAge = d }
