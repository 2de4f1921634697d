package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/kafka"
)

// startKafka serves the Kafka protocol for ag on sc.KafkaAddr (nothing
// when it is empty) and returns the bound address ("" without). stop ends it: no new connection, the open ones
// closed; the channel it returns yields Serve's error once every
// connection's goroutines have ended (produces already appended wait for
// their commit, which the batcher's drain flushes).
func startKafka(sc serverConfig, ag *agent.Agent, grpcAddr string, log *slog.Logger, reg prometheus.Registerer) (stop func() <-chan error, addr string, err error) {
	done := make(chan error, 1)
	if sc.KafkaAddr == "" {
		// No listener: the agent still forgets idle producer ids (gRPC
		// producers bump epochs too).
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			kafka.ExpireProducerIDs(ctx, ag, sc.Kafka.ProducerIDExpiration, log)
			done <- nil
		}()
		return func() <-chan error { cancel(); return done }, "", nil
	}
	kc := sc.Kafka
	if kc.GRPCAddr == "" {
		kc.GRPCAddr = grpcAddr
	}
	srv, err := kafka.New(kc, ag, sc.auth.kafkaOptions(kafka.Options{Logger: log, Registry: reg}))
	if err != nil {
		return nil, "", err
	}
	lis, err := net.Listen("tcp", sc.KafkaAddr)
	if err != nil {
		return nil, "", fmt.Errorf("listen on %s (kafka.listen): %w", sc.KafkaAddr, err)
	}
	addr = lis.Addr().String()
	if lis, err = listenTLS(lis, sc.KafkaTLS, "kafka", log, sc.tlsMetrics); err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ag.SetCluster(srv) // DescribePlacement answers from the listener's view of the agents
	go func() { done <- srv.Serve(ctx, lis) }()
	return func() <-chan error { cancel(); return done }, addr, nil
}
