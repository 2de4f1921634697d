package iceberg

import (
	"context"
	"fmt"

	icegos3 "github.com/apache/iceberg-go/io/gocloud/s3"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
)

// Every object a Writer opened on an S3 warehouse writes — data files,
// manifests, manifest lists, table metadata — is written with
// If-None-Match: *, as the compactor's log files are (objectstore
// IfAbsent): iceberg-go names each of them afresh for every attempt (a
// random UUID), so an existing object at the key is another writer's, and
// the write fails (412) instead of replacing it; the commit then fails and
// the append is tried again under new names.
//
// iceberg-go builds its S3 client for each table operation from the
// context's AWS configuration when there is one (utils.WithAwsConfig,
// read by its gocloud s3 IO, and by the catalog's metadata writes, which
// use the same context): a Writer's writing methods put conditionalAWS on
// their context (Writer.writes).

// conditionalAWS is the AWS configuration iceberg-go would build from
// props (region, keys, endpoint are its props' either way), with the
// If-None-Match middleware on every client made from it.
func conditionalAWS(ctx context.Context, props map[string]string) (*aws.Config, error) {
	cfg, err := icegos3.ParseAWSConfig(ctx, props)
	if err != nil {
		return nil, fmt.Errorf("iceberg: S3 configuration: %w", err)
	}
	cfg.APIOptions = append(cfg.APIOptions, ifNoneMatch)
	return cfg, nil
}

// ifNoneMatch adds If-None-Match: * to each object write: PutObject, and
// the completion of a multipart upload (where S3 applies the condition).
func ifNoneMatch(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("floe:IfNoneMatch",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			switch p := in.Parameters.(type) {
			case *s3.PutObjectInput:
				p.IfNoneMatch = aws.String("*")
			case *s3.CompleteMultipartUploadInput:
				p.IfNoneMatch = aws.String("*")
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// writes is ctx for a Writer's writes: with the conditional AWS
// configuration on an S3 warehouse opened by Open, unchanged otherwise.
func (w *Writer) writes(ctx context.Context) context.Context {
	if w.aws == nil {
		return ctx
	}
	return utils.WithAwsConfig(ctx, w.aws)
}
