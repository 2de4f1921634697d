//go:build !unix

package tlsconf

import "os"

// inode is nil where the system has no inode numbers.
func inode(os.FileInfo) any { return nil }

func sameSys(a, b any) bool { return a == b }
