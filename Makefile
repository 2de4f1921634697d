GO ?= go
TOOLS := $(CURDIR)/.tools
export PATH := $(TOOLS):$(PATH)

.PHONY: all build run test fuzz fuzz-short test-deploy test-engines test-kafka bench bench-report proto tools clean chaos

all: build

# bin/floe is the broker and its CLI; bin/floe-bench the benchmark harness
# (kept out of the broker; it runs the bin/floe beside it).
# The version and commit stamped into bin/floe (floe version).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null)

# bin/floe is static (no cgo) and built with -trimpath; deploy/Dockerfile
# runs this same command (deploy/check compares the two).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o bin/floe ./cmd/floe
	$(GO) build -o bin/floe-bench ./cmd/floe-bench

run: build
	./bin/floe dev

# The S3 server the tests run against, and the benchmark peer (versions
# pinned; internal/services builds them on demand too).
tools: $(TOOLS)/versitygw $(TOOLS)/nats-server $(TOOLS)/helm

$(TOOLS)/versitygw:
	GOBIN=$(TOOLS) $(GO) install github.com/versity/versitygw/cmd/versitygw@v1.8.0

$(TOOLS)/nats-server:
	GOBIN=$(TOOLS) $(GO) install github.com/nats-io/nats-server/v2@v2.15.3

# helm renders deploy/helm/floe in the deploy checks (deploy/check).
$(TOOLS)/helm:
	GOBIN=$(TOOLS) $(GO) install helm.sh/helm/v3/cmd/helm@v3.22.0

# Every test; then the agent package again with its harnesses on the real
# backends; a few seconds of every fuzz target; then the static checks of
# deploy/ (their own module, so that k8s.io/api stays out of the broker's
# go.mod). The real PostgreSQL and S3 server (versitygw) are started by the
# tests themselves (internal/testenv): the stores' own suites, the batcher,
# compactor and cmd/floe end-to-end tests run on them, while many unit tests
# use SQLite and the in-memory store. The agent tests' harnesses (start,
# startGuarded) run on SQLite and the in-memory store, then on PostgreSQL
# and S3 (FLOE_TEST_AGENT_BACKEND=postgres+s3); agent tests that build
# their own stores choose them themselves.
test: tools
	CI=$${CI:-} $(GO) test -count=1 -timeout 25m ./...
	CI=$${CI:-} FLOE_TEST_AGENT_BACKEND=postgres+s3 $(GO) test -count=1 -timeout 10m ./agent/
	$(MAKE) fuzz-short
	$(MAKE) test-deploy

# Every fuzz target of the module (.ci/fuzz lists them: func FuzzX in a
# _test.go file), one after another: fuzz-short for a few seconds each (in
# make test), fuzz for FUZZTIME each (make fuzz FUZZTIME=1h). Their seed
# corpora (testdata/fuzz/FuzzX/) run in every go test too.
FUZZTIME ?= 10m
fuzz-short:
	FUZZTIME=3s GO=$(GO) bash .ci/fuzz

fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) bash .ci/fuzz

# Kafka clients other than Go's against the Kafka listener: Apache Kafka's
# Java client and its command-line tools (kafka/testdata/java/pom.xml's
# version, from Maven Central, cached in ~/.cache/floe/m2), run with Java 17;
# confluent-kafka-go (librdkafka through cgo, kafka/testdata/confluentgo, a
# module of its own; the Go module cache holds its static librdkafka); kcat (Debian's, librdkafka);
# confluent-kafka-python (PyPI, in a venv under ~/.cache/floe keyed by its
# version); kafkajs (npm, pinned, under ~/.cache/floe). franz-go and sarama
# run in make test.
KAFKA_M2 ?= $(HOME)/.cache/floe/m2
CONFLUENT_KAFKA_PY ?= 2.16.1
KAFKAJS ?= 2.2.4
KAFKA_PY_VENV = $(HOME)/.cache/floe/py-confluent-kafka-$(CONFLUENT_KAFKA_PY)
KAFKAJS_DIR = $(HOME)/.cache/floe/npm-kafkajs-$(KAFKAJS)
test-kafka:
	mvn -q -f kafka/testdata/java/pom.xml -Dmaven.repo.local=$(KAFKA_M2) dependency:build-classpath -Dmdep.outputFile=$(KAFKA_M2)/floe-kafka-java.cp
	[ -x $(KAFKA_PY_VENV)/bin/python ] && $(KAFKA_PY_VENV)/bin/python -c 'import confluent_kafka' 2>/dev/null || \
		{ python3 -m venv $(KAFKA_PY_VENV) && $(KAFKA_PY_VENV)/bin/pip install -q confluent-kafka==$(CONFLUENT_KAFKA_PY); }
	[ -d $(KAFKAJS_DIR)/node_modules/kafkajs ] || \
		{ mkdir -p $(KAFKAJS_DIR) && npm install --no-audit --no-fund --prefix $(KAFKAJS_DIR) kafkajs@$(KAFKAJS); }
	FLOE_KAFKA_JAVA_CP=$$(cat $(KAFKA_M2)/floe-kafka-java.cp) FLOE_KAFKA_PYTHON=$(KAFKA_PY_VENV)/bin/python FLOE_KAFKAJS_DIR=$(KAFKAJS_DIR) \
		CI=$${CI:-} $(GO) test -tags 'kafkajava kafkaclients' -count=1 -timeout 10m -run 'TestJavaClient|TestJavaRegexSubscription|TestKafkaTools|TestKcat|TestConfluentKafkaPython|TestConfluentKafkaGo|TestKafkaJS' ./kafka/

# The Dockerfile, the Helm chart and the compose file, checked statically
# (no container engine or cluster needed).
test-deploy: $(TOOLS)/helm
	cd deploy/check && CI=$${CI:-} $(GO) test -count=1 -timeout 10m ./...

# The engine suite (engines/, docs/engines.md): PostgreSQL, MinIO, a floe
# agent and compactor as processes; pyiceberg, DuckDB, Spark and Trino read
# every table and the rows are compared in Go. engines/setup.sh installs the
# engines into ~/.cache/floe/engines (pinned, checksummed; seconds when
# cached); MinIO is built into ~/.cache/floe/tools, outside the clone, so
# that a fresh clone does not build it again (AGPL: a test server, never
# linked; a pseudo-version pin, as its releases have no semver tags).
ENGINES_TOOLS := $(HOME)/.cache/floe/tools

test-engines: $(ENGINES_TOOLS)/minio
	bash engines/setup.sh
	cd engines && PATH=$(ENGINES_TOOLS):$$PATH CI=$${CI:-} $(GO) test -tags engines -count=1 -timeout 14m -v -run 'TestEngines|TestDevTables|TestMaintenanceUnderPlannedScan|TestTrinoPortOfAnotherServer' .
	PATH=$(ENGINES_TOOLS):$$PATH CI=$${CI:-} $(GO) test -tags engines -count=1 -timeout 5m -run 'TestMinIOPortOfAnotherServer' ./internal/services/

$(ENGINES_TOOLS)/minio:
	GOBIN=$(ENGINES_TOOLS) $(GO) install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c

# Go benchmarks of the hot paths (each reports its ratio to the limit it
# measures in the same run), then a short floe-bench against floe dev.
bench: tools build
	$(GO) test -run '^$$' -bench . -benchtime 2s ./...
	./bin/floe-bench -start dev -workload e2e -rate 5000 -duration 5s -warmup 1s -out bench-out
	$(MAKE) test-kafka-peer

# The Apache Kafka peer of floe-bench: a KRaft broker started and stopped
# by the harness from the jars make test-kafka cached, driven by the
# franz-go workload (Java 17+).
.PHONY: test-kafka-peer
test-kafka-peer:
	CI=$${CI:-} $(GO) test -tags kafkabroker -count=1 -timeout 8m -run 'TestKafkaBrokerPeer|TestKafkaBrokerPortOfAnotherBroker' ./bench/

bench-report: build
	./bin/floe-bench -start dev -workload e2e -sweep -sweep-steps 10,25,50,75,100,125 \
		-duration 2s -warmup 1s -peer jetstream -peer-sync default -out bench-out

# A bounded fault campaign (docs/chaos.md): runs of CHAOS_DURATION of
# faults each against three agents, a compactor, PostgreSQL and versitygw,
# until CHAOS_BUDGET; every history checked, a table printed; non-zero on
# any anomaly (the failed runs' histories, seeds and logs in chaos-out/).
CHAOS_BUDGET ?= 4m
CHAOS_DURATION ?= 40s
chaos: build $(TOOLS)/versitygw
	$(GO) build -o bin/floe-chaos ./cmd/floe-chaos
	./bin/floe-chaos run -runs 100 -duration $(CHAOS_DURATION) -budget $(CHAOS_BUDGET) $(CHAOS_FLAGS)

proto:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
	protoc -I api --go_out=api --go_opt=paths=source_relative \
		--go-grpc_out=api --go-grpc_opt=paths=source_relative floe/v1/floe.proto

clean:
	rm -rf bin
