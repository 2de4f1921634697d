package agent

import (
	"fmt"

	"github.com/floe-broker/floe/readpath"
)

// validateReads checks the read settings (the last block of Config).
func (c Config) validateReads() error {
	switch {
	case c.MaxFetchRecords <= 0:
		return fmt.Errorf("agent: config MaxFetchRecords %d must be positive", c.MaxFetchRecords)
	case c.MaxLoadingBytes <= 0:
		return fmt.Errorf("agent: config MaxLoadingBytes %d must be positive", c.MaxLoadingBytes)
	case c.MaxLoadWait <= 0:
		return fmt.Errorf("agent: config MaxLoadWait %v must be positive", c.MaxLoadWait)
	case c.IndexPollInterval <= 0:
		return fmt.Errorf("agent: config IndexPollInterval %v must be positive", c.IndexPollInterval)
	case c.IndexMaxPartitions <= 0:
		return fmt.Errorf("agent: config IndexMaxPartitions %d must be positive", c.IndexMaxPartitions)
	case c.IndexMaxBatches < 0:
		return fmt.Errorf("agent: config IndexMaxBatches %d must not be negative", c.IndexMaxBatches)
	case c.ReadaheadBytes < 0:
		return fmt.Errorf("agent: config ReadaheadBytes %d must not be negative", c.ReadaheadBytes)
	case c.MaxReadRecordBytes != 0 && c.MaxReadRecordBytes < c.MaxRecordBytes:
		return fmt.Errorf("agent: config MaxReadRecordBytes %d must be 0 or at least MaxRecordBytes (%d)", c.MaxReadRecordBytes, c.MaxRecordBytes)
	}
	return nil
}

// readPath is the read path's share of the settings.
func (c Config) readPath() readpath.Config {
	return readpath.Config{CacheBytes: c.CacheBytes, CacheFileMaxBytes: c.CacheFileMaxBytes, LoadTimeout: c.LoadTimeout,
		MaxLoadingBytes: c.MaxLoadingBytes, MaxLoadWait: c.MaxLoadWait, ReadaheadBytes: c.ReadaheadBytes}
}

// readRecordLimit is the bound of one record decoded on read
// (MaxReadRecordBytes, 0: MaxRecordBytes).
func (c Config) readRecordLimit() int {
	if c.MaxReadRecordBytes > 0 {
		return c.MaxReadRecordBytes
	}
	return c.MaxRecordBytes
}
