package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/kafka"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/postgres"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/objectstore/s3store"
)

// serverConfigOf turns the settings of agent and dev into serve's
// configuration, logging to stderr.
func serverConfigOf(c Config, stderr io.Writer) serverConfig {
	sc := serverConfig{
		GRPCAddr: c.Server.Listen, MetricsAddr: c.Server.MetricsListen,
		AddrFile: c.Server.AddrFile,
		FailFast: c.Server.FailFast, ReadyInterval: c.Server.ReadyInterval, DrainTimeout: c.Server.DrainTimeout,
		Pprof: c.Server.Pprof, MemoryRoom: c.Server.MemoryRoomBytes,
		HTTP: httpLimits{ReadHeaderTimeout: c.Server.HTTPReadHeaderTimeout, WriteTimeout: c.Server.HTTPWriteTimeout,
			IdleTimeout: c.Server.HTTPIdleTimeout, MaxInFlight: c.Server.HTTPMaxInFlight},
		Batcher: batcher.DefaultConfig(), Agent: agent.DefaultConfig(),
		Logger:    c.logger(stderr),
		KafkaAddr: c.Kafka.Listen, Kafka: kafka.DefaultConfig(),
		Auth:    c.Auth,
		GRPCTLS: c.TLS.grpcTLS(), KafkaTLS: c.TLS.kafkaTLS(), HTTPTLS: c.TLS.httpTLS(),
	}
	k := c.Kafka
	sc.Kafka.AdvertisedHost, sc.Kafka.AdvertisedPort = k.AdvertisedHost, int32(k.AdvertisedPort)
	sc.Kafka.MaxFrameBytes, sc.Kafka.MaxConnections, sc.Kafka.MaxInFlight = k.MaxFrameBytes, k.MaxConnections, k.MaxInFlight
	sc.Kafka.MaxBufferedBytes = k.MaxBufferedBytes
	sc.Kafka.Zone, sc.Kafka.AgentTTL = k.Zone, k.AgentTTL
	sc.Kafka.MaxFetchSessions, sc.Kafka.MaxFetchSessionPartitions, sc.Kafka.FetchSessionEviction = k.MaxFetchSessions, k.MaxFetchSessionPartitions, k.FetchSessionEviction
	sc.Kafka.ProducerIDExpiration = k.ProducerIDExpiration
	b, a := c.Batcher, c.Agent
	sc.Batcher.Linger = b.Linger
	sc.Batcher.MaxFileBytes = b.MaxFileBytes
	sc.Batcher.MaxBufferedBytes = b.MaxBufferedBytes
	sc.Batcher.CommitTimeout = b.CommitTimeout
	sc.Batcher.UploadTimeout = b.UploadTimeout
	sc.Batcher.MaxFilesPerCommit = b.MaxFilesPerCommit
	sc.Batcher.SealWhenWaited = b.SealWhenWaited
	sc.Agent.MaxFetchRecords = a.MaxFetchRecords
	sc.Agent.MaxLoadingBytes = a.MaxLoadingBytes
	sc.Agent.ReadaheadBytes = a.ReadaheadBytes
	sc.Agent.ReplayBytesPerSecond = a.ReplayBytesPerSecond
	sc.Agent.ReplayMinLagRecords = a.ReplayMinLagRecords
	sc.Agent.GroupRetention = a.GroupRetention
	sc.Agent.LagMetricsMaxGroups = a.LagMetricsMaxGroups
	sc.Agent.CacheBytes = a.CacheBytes
	sc.Agent.MaxRecordBytes = a.MaxRecordBytes
	sc.Agent.MaxFetchBytes = a.MaxFetchBytes
	sc.Agent.ReplayBurstBytes = max(sc.Agent.ReplayBurstBytes, int64(sc.Agent.MaxFetchBytes))
	setEdgeLimits(&sc.Agent, a)
	if a.MaxRequestBytes != 0 {
		sc.Agent.MaxRequestBytes = a.MaxRequestBytes
	} else if sc.Agent.MaxRequestBytes > b.MaxFileBytes/2 {
		sc.Agent.MaxRequestBytes = max(b.MaxFileBytes/2, sc.Agent.MaxRecordBytes)
	}
	return sc
}

// setEdgeLimits sets the edges' bounds (agent/grpclimits.go and the
// limits of docs/operations.md) from the settings.
func setEdgeLimits(ac *agent.Config, a AgentSettings) {
	ac.MaxReadRecordBytes, ac.StreamBufferBytes = a.MaxReadRecordBytes, a.StreamBufferBytes
	ac.TimestampBeforeMax, ac.TimestampAfterMax = a.TimestampBeforeMax, a.TimestampAfterMax
	ac.MaxTopicConfigEntryBytes, ac.MaxTopicConfigBytes = a.TopicConfigEntryBytes, a.TopicConfigBytes
	ac.MaxTopics, ac.MaxPartitionsPerTopic, ac.MaxTotalPartitions = a.MaxTopics, a.MaxPartitionsPerTopic, a.MaxTotalPartitions
	ac.MaxSubscribedPartitions = a.MaxSubscribedPartitions
	ac.MaxACLs = a.MaxACLs
	ac.GRPCMaxRecvInFlightBytes, ac.MaxConnections = a.GRPCMaxRecvInflightBytes, a.GRPCMaxConnections
	ac.GRPCMaxConnectionIdle, ac.GRPCMaxConnectionAge, ac.GRPCMaxConnectionAgeGrace = a.GRPCMaxConnectionIdle, a.GRPCMaxConnectionAge, a.GRPCMaxConnectionAgeGrace
	ac.GRPCKeepaliveTime, ac.GRPCKeepaliveTimeout, ac.GRPCKeepaliveMinTime = a.GRPCKeepaliveTime, a.GRPCKeepaliveTimeout, a.GRPCKeepaliveMinTime
}

func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := newCommand("floe agent", "", `Run an agent against PostgreSQL and an S3 bucket, until SIGINT or SIGTERM.
At start it waits for PostgreSQL and the object store (not ready, retrying
with backoff, one WARN line per attempt) unless -fail-fast is given.
/healthz is liveness, /readyz readiness (both stores answer).`, 0, 0)
	cf := registerConfig(cmd.fs, "agent")
	if _, err := cmd.parse(args, stdout); err != nil {
		return err
	}
	c, err := cf.load(cmd.fs, os.Getenv)
	if err != nil {
		return err
	}
	sc := serverConfigOf(c, stderr)
	pgURL, prefix, s3c := c.Postgres.URL, c.S3.Prefix, c.s3Config()
	opts := postgres.DefaultOptions()
	opts.Logger = sc.Logger
	open := func(ctx context.Context, st *starter) (metadata.Store, objectstore.Store, error) {
		meta, s3, err := openStores(ctx, st, pgURL, opts, s3c, prefix)
		if err != nil {
			return nil, nil, err
		}
		return meta, withPrefix(s3, prefix), nil
	}
	sc.Tables = agentTables(c)
	return serve(ctx, sc, open, prometheus.NewRegistry())
}

// openStores opens PostgreSQL and the S3 bucket (checked to accept writes
// under prefix), each step retried through st: the start of agent and
// compactor.
func openStores(ctx context.Context, st *starter, pgURL string, opts postgres.Options, s3c s3store.Config, prefix string) (*postgres.Store, *s3store.Store, error) {
	var meta *postgres.Store
	err := st.retry(ctx, "metadata store", func(ctx context.Context) error {
		var err error
		if meta, err = postgres.Open(ctx, pgURL, opts); err != nil {
			err = fmt.Errorf("metadata store unavailable: %w", err)
			if !pgTransient(err) {
				return &permanentError{err}
			}
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	var s3 *s3store.Store
	err = st.retry(ctx, "object store", func(ctx context.Context) error {
		var err error
		if s3, err = s3store.New(ctx, s3c); err != nil {
			return &permanentError{fmt.Errorf("object store: %w", err)}
		}
		return probeBucket(ctx, s3, prefix)
	})
	if err != nil {
		meta.Close()
		return nil, nil, err
	}
	return meta, s3, nil
}

// pgTransient reports whether a failure to open PostgreSQL may pass by
// waiting: the server is unreachable, starting, shutting down or out of
// connections. Refused credentials, a missing database or a refused schema
// are not.
func pgTransient(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "53", "57", "58", "40": // connection, resources, operator intervention, system, rollback
			return true
		}
		return false
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	return errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
