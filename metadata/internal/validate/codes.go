package validate

import (
	"errors"

	"github.com/floe-broker/floe/metadata"
)

// refusals maps the refusal codes that the commit functions return and
// that files store with their results to the errors of BatchResult.Err;
// code 0 is "accepted". The codes are part of the stored schema: never
// renumber them.
var refusals = [...]error{
	0: nil,
	1: metadata.ErrTopicNotFound,
	2: metadata.ErrPartitionNotFound,
	3: metadata.ErrOutOfOrderSequence,
	4: metadata.ErrProducerFenced,
	5: metadata.ErrUnknownProducer,
}

// RefusalError returns the error of refusal code c (nil for 0); ok is false
// for a code it does not know.
func RefusalError(c int16) (err error, ok bool) {
	if c < 0 || int(c) >= len(refusals) {
		return nil, false
	}
	return refusals[c], true
}

// RefusalCode returns the code of a BatchResult.Err (0 for nil); ok is false
// for an error that is no refusal.
func RefusalCode(err error) (c int16, ok bool) {
	if err == nil {
		return 0, true
	}
	for i, r := range refusals[1:] {
		if errors.Is(err, r) {
			return int16(i + 1), true
		}
	}
	return 0, false
}
