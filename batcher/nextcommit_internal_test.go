package batcher

import (
	"slices"
	"testing"
)

func TestNextCommit(t *testing.T) {
	const (
		U = fileUploading
		F = fileUploadFailed
		L = fileLate
		R = fileReady
	)
	for _, tc := range []struct {
		name    string
		states  []fileState
		max     int
		settled int
		commit  []int
	}{
		{"nothing waiting", nil, 4, 0, nil},
		{"one ready", []fileState{R}, 4, 1, []int{0}},
		{"all ready together", []fileState{R, R, R}, 4, 3, []int{0, 1, 2}},
		{"up to max", []fileState{R, R, R, R, R}, 3, 3, []int{0, 1, 2}},
		{"max one: one at a time", []fileState{R, R}, 1, 1, []int{0}},
		{"stops at the first still uploading", []fileState{R, U, R}, 4, 1, []int{0}},
		{"first still uploading: nothing", []fileState{U, R}, 4, 0, nil},
		{"failed upload skipped, the rest go", []fileState{R, F, R}, 4, 3, []int{0, 2}},
		{"failed first", []fileState{F, R, R}, 4, 3, []int{1, 2}},
		{"late skipped", []fileState{L, R, L, R}, 4, 4, []int{1, 3}},
		{"only failures", []fileState{F, L, F}, 4, 3, nil},
		{"failures do not count to max", []fileState{R, F, R, F, R}, 2, 4, []int{0, 2}},
		{"failure after max settled too", []fileState{R, R, F}, 2, 3, []int{0, 1}},
		{"ready after max waits", []fileState{R, R, F, R}, 2, 3, []int{0, 1}},
		{"failure before uploading settled", []fileState{F, U, R}, 4, 1, nil},
	} {
		settled, commit := nextCommit(tc.states, tc.max)
		if settled != tc.settled || !slices.Equal(commit, tc.commit) {
			t.Errorf("%s: nextCommit(%v, %d) = %d, %v; want %d, %v", tc.name, tc.states, tc.max, settled, commit, tc.settled, tc.commit)
		}
	}
}
