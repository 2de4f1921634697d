package s3store

import (
	"errors"
	"fmt"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/floe-broker/floe/objectstore"
)

// errorCode returns the S3 error code ("NoSuchKey") and HTTP status of err,
// or "" and 0 when it carries none.
func errorCode(err error) (code string, status int) {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		status = respErr.HTTPStatusCode()
	}
	return code, status
}

// permanent returns err as an *objectstore.PermanentError with a clear
// message when retrying cannot fix it (missing bucket, bad credentials,
// access denied), else nil.
func (s *Store) permanent(err error) error {
	code, status := errorCode(err)
	var msg string
	switch {
	case code == "NoSuchBucket":
		msg = fmt.Sprintf("s3: bucket %q does not exist at %s", s.cfg.Bucket, s.endpointName())
	case code == "InvalidAccessKeyId" || code == "XAdminUserNotFound": // the latter from versitygw
		msg = fmt.Sprintf("s3: access denied to bucket %q at %s: the access key is not known to the server", s.cfg.Bucket, s.endpointName())
	case code == "SignatureDoesNotMatch":
		msg = fmt.Sprintf("s3: access denied to bucket %q at %s: the secret key does not match the access key", s.cfg.Bucket, s.endpointName())
	case code == "AccessDenied" || status == http.StatusForbidden:
		msg = fmt.Sprintf("s3: access denied to bucket %q at %s: check the credentials and the bucket policy", s.cfg.Bucket, s.endpointName())
	default:
		return nil
	}
	return &objectstore.PermanentError{Err: &sdkError{msg: msg, err: err}}
}

// sdkError is a clear message that still unwraps to the SDK's error.
type sdkError struct {
	msg string
	err error
}

func (e *sdkError) Error() string { return e.msg + " (" + e.err.Error() + ")" }
func (e *sdkError) Unwrap() error { return e.err }
