package services

import "syscall"

// PostgresBinDir is the directory holding PostgreSQL 15's programs
// (initdb, postgres, pg_basebackup), as StartPostgres finds it.
func PostgresBinDir() (string, error) { return pgBinDir() }

// PostgresCredential is the credential PostgreSQL's processes run with:
// the postgres user's when running as root, else nil (this user).
func PostgresCredential() (*syscall.Credential, error) { return pgCredential() }
