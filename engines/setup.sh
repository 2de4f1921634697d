#!/usr/bin/env bash
# Installs the query engines the engine suite (engines/, make test-engines)
# drives, into a cache outside the clone so that a second run starts in
# seconds: ~/.cache/floe/engines/ (FLOE_ENGINES_CACHE overrides it).
#   venv-KEY/   pyiceberg, DuckDB with its Iceberg extension, pyspark
#   jars/       Iceberg's Spark runtime and AWS bundle, PostgreSQL's and
#               SQLite's JDBC drivers (Maven Central)
#   trino-V/    Trino's core server with the Iceberg plugin (Maven Central)
# Every download is pinned by version and checked against its SHA-1 (Maven Central's published one, pinned here).
# Prints the cache folder on its last line.
set -euo pipefail

CACHE="${FLOE_ENGINES_CACHE:-$HOME/.cache/floe/engines}"
MAVEN="${FLOE_MAVEN_URL:-https://repo1.maven.org/maven2}"
PYTHON="${PYTHON:-python3}"

PY_PACKAGES=(
  "pyiceberg[sql-postgres,sql-sqlite,pyarrow]==0.12.0"
  "duckdb==1.5.5"
  "duckdb-extension-iceberg==1.5.5"
  "duckdb-extension-httpfs==1.5.5"
  "duckdb-extension-avro==1.5.5"
  "pyspark==3.5.8"
)
TRINO_VERSION=476

mkdir -p "$CACHE/jars"

# fetch GROUP_PATH ARTIFACT_FILE SHA1 DEST
fetch() {
  local url="$MAVEN/$1/$2" dest="$4"
  if [ -f "$dest" ] && echo "$3  $dest" | sha1sum -c --status; then
    return 0
  fi
  echo "engines: downloading $2" >&2
  curl -fsSL --retry 3 -o "$dest.part" "$url"
  if ! echo "$3  $dest.part" | sha1sum -c --status; then
    echo "engines: $2: checksum mismatch (got $(sha1sum "$dest.part" | cut -c1-40))" >&2
    rm -f "$dest.part"
    return 1
  fi
  mv "$dest.part" "$dest"
}

# The Python engines, in a venv keyed by the pinned versions.
key=$(printf '%s\n' "$($PYTHON -c 'import sys; print(sys.version)')" "${PY_PACKAGES[@]}" | sha256sum | cut -c1-12)
VENV="$CACHE/venv-$key"
if [ ! -f "$VENV/.complete" ]; then
  echo "engines: creating $VENV" >&2
  rm -rf "$VENV"
  $PYTHON -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "${PY_PACKAGES[@]}" >&2
  touch "$VENV/.complete"
fi
ln -sfn "$VENV" "$CACHE/venv"

fetch org/apache/iceberg/iceberg-spark-runtime-3.5_2.12/1.10.0 iceberg-spark-runtime-3.5_2.12-1.10.0.jar \
  e9e56f219ee65d302a96d598470365733b824018 "$CACHE/jars/iceberg-spark-runtime-3.5_2.12-1.10.0.jar"
fetch org/apache/iceberg/iceberg-aws-bundle/1.10.0 iceberg-aws-bundle-1.10.0.jar \
  568a0630442613a4d211b72668cc48713b7d335e "$CACHE/jars/iceberg-aws-bundle-1.10.0.jar"
fetch org/postgresql/postgresql/42.7.4 postgresql-42.7.4.jar \
  264310fd7b2cd76738787dc0b9f7ea2e3b11adc1 "$CACHE/jars/postgresql-42.7.4.jar"
fetch org/xerial/sqlite-jdbc/3.46.1.3 sqlite-jdbc-3.46.1.3.jar \
  6840edacf0868e0466a05bfbb29aaa4916f15869 "$CACHE/jars/sqlite-jdbc-3.46.1.3.jar"

# Trino: the core server (no plugins) plus the Iceberg plugin, 540 MB
# instead of the full server's 820 MB.
TRINO="$CACHE/trino-$TRINO_VERSION"
if [ ! -f "$TRINO/.complete" ]; then
  fetch io/trino/trino-server-core/$TRINO_VERSION trino-server-core-$TRINO_VERSION.tar.gz \
    6bae2db438f8e6a2a8d9c8b566bb5e5b05870138 "$CACHE/trino-server-core-$TRINO_VERSION.tar.gz"
  fetch io/trino/trino-iceberg/$TRINO_VERSION trino-iceberg-$TRINO_VERSION.zip \
    6a9841be7b21c71110a1efc3a98e5dd833b20a8e "$CACHE/trino-iceberg-$TRINO_VERSION.zip"
  rm -rf "$TRINO" "$TRINO.part"
  mkdir -p "$TRINO.part"
  tar -xzf "$CACHE/trino-server-core-$TRINO_VERSION.tar.gz" -C "$TRINO.part" --strip-components=1
  mkdir -p "$TRINO.part/plugin"
  (cd "$TRINO.part/plugin" && unzip -q "$CACHE/trino-iceberg-$TRINO_VERSION.zip")
  rm -f "$CACHE/trino-server-core-$TRINO_VERSION.tar.gz" "$CACHE/trino-iceberg-$TRINO_VERSION.zip"
  mv "$TRINO.part" "$TRINO"
  touch "$TRINO/.complete"
fi
ln -sfn "$TRINO" "$CACHE/trino"

echo "$CACHE"
