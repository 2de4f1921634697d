package kafka

import (
	"fmt"
	"time"
)

// Config holds the Kafka listener's settings and limits.
type Config struct {
	// AdvertisedHost and AdvertisedPort are the address Metadata gives
	// clients for this broker (pods behind a Service advertise the
	// Service's). Empty host / zero port: the address the client connected
	// to.
	AdvertisedHost string
	AdvertisedPort int32
	// NodeID is the broker id this agent presents until its first beat
	// in the metadata store's agents table gives it its own (cluster.go).
	NodeID int32
	// Zone is this agent's availability zone: clients whose client.id
	// names it (floe_az=<zone>) are given this zone's agents as leaders.
	Zone string
	// GRPCAddr is this agent's gRPC listener (host:port; an empty or
	// unspecified host: the host of the Kafka address its row registers).
	// Its row in the agents table names it, so that gRPC clients with
	// partition affinity learn where to reach each agent
	// (TopicService.DescribePlacement). "": none.
	GRPCAddr string
	// AgentTTL is how long this agent's row in the agents table lives
	// after its last beat (it beats every AgentTTL/4): an agent that dies
	// drops out of the other agents' Metadata, and its classic groups move
	// to survivors, this long after its last beat.
	AgentTTL time.Duration
	// ClusterID is the cluster id Metadata and DescribeCluster report.
	ClusterID string
	// MaxFrameBytes bounds one request frame; a larger size prefix closes
	// the connection before anything is allocated.
	MaxFrameBytes int
	// MaxConnections bounds open client connections; past it new ones
	// are closed at once.
	MaxConnections int
	// MaxInFlight bounds the unanswered requests of one connection.
	MaxInFlight int
	// MaxBufferedBytes bounds the request bytes one connection holds read
	// but not yet answered (at least MaxFrameBytes).
	MaxBufferedBytes int64
	// WriteTimeout bounds writing one response; a client that does not
	// read for that long is disconnected.
	WriteTimeout time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the session timeouts
	// classic-protocol group members may ask for (Kafka's
	// group.min/max.session.timeout.ms).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is how long the first join of an empty group
	// waits for more members, again after each delay in which one
	// arrived, up to the longest rebalance timeout (Kafka's
	// group.initial.rebalance.delay.ms; initial_delay.go). 0: none.
	InitialRebalanceDelay time.Duration
	// MaxGroups bounds the classic-protocol groups held in memory.
	MaxGroups int
	// MaxGroupMembers bounds the members of one classic-protocol group.
	MaxGroupMembers int
	// MaxFetchSessions bounds the fetch sessions (KIP-227) the agent
	// holds (Kafka's max.incremental.fetch.session.cache.slots); 0: none
	// are created, every fetch is a full one.
	MaxFetchSessions int
	// MaxFetchSessionPartitions bounds the partitions of one fetch
	// session: a full fetch of more gets no session, an incremental one
	// that would pass it closes its session.
	MaxFetchSessionPartitions int
	// FetchSessionEviction is how long a session is kept from eviction:
	// one unused this long is evicted first when the cache is full; a
	// younger one is never evicted (Kafka's 120 s).
	FetchSessionEviction time.Duration
	// ProducerIDExpiration: a producer id whose epoch was not bumped
	// (InitProducerId with an id and epoch) for this long is forgotten
	// (Kafka's producer.id.expiration.ms, 1 day); 0 keeps them forever.
	ProducerIDExpiration time.Duration
}

// DefaultConfig returns production defaults.
func DefaultConfig() Config {
	return Config{
		ClusterID:             "floe",
		MaxFrameBytes:         16 << 20,
		MaxConnections:        4096,
		MaxInFlight:           16,
		MaxBufferedBytes:      32 << 20,
		WriteTimeout:          60 * time.Second,
		MinSessionTimeout:     6 * time.Second,
		MaxSessionTimeout:     30 * time.Minute,
		InitialRebalanceDelay: 0,
		MaxGroups:             10000,
		MaxGroupMembers:       1000,
		AgentTTL:              10 * time.Second,

		MaxFetchSessions:          1000,
		MaxFetchSessionPartitions: 100000,
		FetchSessionEviction:      2 * time.Minute,
		ProducerIDExpiration:      24 * time.Hour,
	}
}

func (c Config) validate() error {
	switch {
	case c.MaxFrameBytes < 1024:
		return fmt.Errorf("kafka: config MaxFrameBytes %d must be at least 1024", c.MaxFrameBytes)
	case c.MaxConnections <= 0:
		return fmt.Errorf("kafka: config MaxConnections %d must be positive", c.MaxConnections)
	case c.MaxInFlight <= 0:
		return fmt.Errorf("kafka: config MaxInFlight %d must be positive", c.MaxInFlight)
	case c.MaxBufferedBytes < int64(c.MaxFrameBytes):
		return fmt.Errorf("kafka: config MaxBufferedBytes %d must be at least MaxFrameBytes (%d)", c.MaxBufferedBytes, c.MaxFrameBytes)
	case c.WriteTimeout <= 0:
		return fmt.Errorf("kafka: config WriteTimeout %v must be positive", c.WriteTimeout)
	case c.MinSessionTimeout <= 0 || c.MaxSessionTimeout < c.MinSessionTimeout:
		return fmt.Errorf("kafka: config MinSessionTimeout %v and MaxSessionTimeout %v must be positive and ordered", c.MinSessionTimeout, c.MaxSessionTimeout)
	case c.InitialRebalanceDelay < 0:
		return fmt.Errorf("kafka: config InitialRebalanceDelay %v must not be negative", c.InitialRebalanceDelay)
	case c.MaxGroups <= 0:
		return fmt.Errorf("kafka: config MaxGroups %d must be positive", c.MaxGroups)
	case c.MaxGroupMembers <= 0:
		return fmt.Errorf("kafka: config MaxGroupMembers %d must be positive", c.MaxGroupMembers)
	case c.AgentTTL < 100*time.Millisecond:
		return fmt.Errorf("kafka: config AgentTTL %v must be at least 100ms", c.AgentTTL)
	case len(c.Zone) > 255:
		return fmt.Errorf("kafka: config Zone must be at most 255 bytes")
	case c.MaxFetchSessions < 0:
		return fmt.Errorf("kafka: config MaxFetchSessions %d must not be negative", c.MaxFetchSessions)
	case c.MaxFetchSessionPartitions <= 0:
		return fmt.Errorf("kafka: config MaxFetchSessionPartitions %d must be positive", c.MaxFetchSessionPartitions)
	case c.FetchSessionEviction <= 0:
		return fmt.Errorf("kafka: config FetchSessionEviction %v must be positive", c.FetchSessionEviction)
	case c.ProducerIDExpiration < 0:
		return fmt.Errorf("kafka: config ProducerIDExpiration %v must not be negative", c.ProducerIDExpiration)
	case c.AdvertisedPort < 0:
		return fmt.Errorf("kafka: config AdvertisedPort %d must not be negative", c.AdvertisedPort)
	}
	return nil
}
