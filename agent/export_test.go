package agent

import "github.com/floe-broker/floe/internal/kpartition"

// KafkaPartition exposes the key partitioner to the tests.
var KafkaPartition = kpartition.ForKey

// PoisonReadCache makes the read cache overwrite each file buffer it
// hands back (readpath.Cache.Poison).
func PoisonReadCache(a *Agent) { a.cache.Poison() }

// ReadCacheHandedBack is how many file buffers the read cache handed back
// to the batcher.
func ReadCacheHandedBack(a *Agent) int64 { return a.cache.HandedBack() }

// StreamBufferHeld is what of the agent's stream budget is held.
func StreamBufferHeld(a *Agent) int64 { return a.streamMem.held.Load() }

// SubscribedPartitions is what partitions all subscriptions read.
func SubscribedPartitions(a *Agent) int64 { return a.readers.n.Load() }

// FollowingNotices reports whether the agent follows the metadata store's
// commit notices (its Run subscribed and the store's listener listens).
func FollowingNotices(a *Agent) bool { return a.index.Live() }

// ReadBuffersReused is how many whole-file loads read into a buffer that
// an evicted file had used (readpath.Loader.ReusedBuffers).
func ReadBuffersReused(a *Agent) int64 { return a.loads.ReusedBuffers() }
