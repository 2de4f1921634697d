package agent

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
)

// GRPCServerOptionsPool is GRPCServerOptions with its receive and send
// buffers taken from pool.
func GRPCServerOptionsPool(cfg Config, pool mem.BufferPool) []grpc.ServerOption {
	return grpcServerOptions(cfg, nil, pool)
}
