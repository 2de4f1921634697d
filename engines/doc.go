// Package engines is floe's engine suite: real query engines (pyiceberg,
// DuckDB, Spark, Trino) read the Iceberg tables that a real `floe agent`
// and `floe compactor` wrote to PostgreSQL and MinIO, and every row they
// return is compared in Go with what was produced.
//
// The tests carry the build tag "engines" and run with `make
// test-engines`, which installs the engines first (engines/setup.sh, into
// ~/.cache/floe/engines). docs/engines.md describes the suite.
package engines
