// Package kafka is floe's Kafka wire-protocol front end: Kafka clients
// (franz-go, sarama, the Java client, librdkafka, ...) produce to and
// consume from floe unchanged. Requests and responses are franz-go's kmsg
// types; each API key lives in a file of its own (NN_name.go, after
// franz-go's kfake), whose header comment names the versions served and
// every deviation from Apache Kafka.
//
// Every agent presents itself as the leader of every partition (agents are
// stateless: any of them can append to and read any partition), so a
// client that connects to any agent, or to a Service in front of several,
// sees a cluster of one broker. Produce hands the stored bytes of each
// record batch to the same batcher the gRPC ProduceBatches uses (validated
// by kbatch.Validate); Fetch serves stored batches as bytes with their
// base offsets patched, written from the read cache into the response
// frame without a copy, with fetch sessions (KIP-227) held per agent
// (fetch_sessions.go); committed offsets are floe's group positions, one
// state with the gRPC groups. See docs/kafka.md.
//
// With authentication on, a connection authenticates with SASL (PLAIN,
// SCRAM; conn_auth.go, sasl_scram.go) before anything but ApiVersions, and
// every request passes the one authorization rule of authz.go at the
// dispatch point (docs/security.md).
//
// A connection is served by two goroutines: a reader that reads one frame
// at a time (refusing frames over Config.MaxFrameBytes from their size
// prefix, before allocating), decodes it and dispatches it, and a writer
// that answers in request order, as Kafka requires. At most
// Config.MaxInFlight requests per connection are unanswered and at most
// Config.MaxBufferedBytes of their frames are held; past either the reader
// stops reading (TCP backpressure). Responses not yet written are bounded
// by Config.MaxBufferedBytes too: a fetch is admitted, in request order,
// once its byte bound fits (respbudget.go), so a client that stops reading
// its socket cannot make the agent buffer without limit. A malformed frame
// closes its own connection only, with a log line naming the client.
//
// Every live agent is a broker (cluster.go): agents learn each other from
// heartbeat rows in the metadata store, partition leaders and classic
// group coordinators are placed by pure rendezvous-hashing rules, the
// same on every agent.
package kafka
