//go:build !unix

package objectstore

import (
	"errors"
	"os"
)

// mapRange is not available here: Get reads instead.
func mapRange(*os.File, int64, int64) ([]byte, func(), error) {
	return nil, nil, errors.New("objectstore: no file mappings on this platform")
}
