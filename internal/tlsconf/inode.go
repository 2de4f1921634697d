//go:build unix

package tlsconf

import (
	"os"
	"syscall"
)

// inode is a file's device and inode number where the system has them.
func inode(fi os.FileInfo) any {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return [2]uint64{uint64(st.Dev), st.Ino}
	}
	return nil
}

func sameSys(a, b any) bool { return a == b }
