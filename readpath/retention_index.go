package readpath

import "time"

// indexRefMaxAge bounds the age (by append time) of the batches the read
// index answers with; older ones are looked up in the metadata store. The
// compactor merges only files older than its MergeMinAge (10 minutes by
// default) and deletes the merged-away files a grace period (5 minutes)
// later, so a batch the index answers with still points at a stored file
// even with minutes of clock skew between the agent and the store.
const indexRefMaxAge = 2 * time.Minute

// indexStaleBefore is the append time (unix ms) below which the index does
// not answer.
func indexStaleBefore() int64 { return time.Now().Add(-indexRefMaxAge).UnixMilli() }
