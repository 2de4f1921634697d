package compactor

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/metadata"
)

// metrics are the compactor's Prometheus collectors:
//
//	floe_compactor_passes_total{task,result}      task: the job; result: ok, error, not_held
//	floe_compactor_log_start_advances_total       partitions whose log start moved
//	floe_compactor_batches_collected_total        batch rows removed
//	floe_compactor_files_marked_total             files marked 'deleting'
//	floe_compactor_files_merged_total             small files merged into bigger ones
//	floe_compactor_files_deleted_total            files deleted (object and row)
//	floe_compactor_bytes_deleted_total            their bytes
//	floe_compactor_delete_failures_total          object deletes that failed (retried)
//	floe_compactor_objects_listed_total           objects seen by the orphan listing
//	floe_compactor_orphans_found_total            unknown objects seen (again each pass until deleted)
//	floe_compactor_orphans_deleted_total          orphans deleted
//	floe_compactor_deletion_queue_files           files marked 'deleting'
//	floe_compactor_deletion_queue_bytes           their bytes
//	floe_compactor_deletion_queue_oldest_seconds  age of the oldest mark
//	floe_compactor_topic_bytes{topic,kind}        kind: files, live, dead (TopicStorage)
//	floe_compactor_topic_files{topic}             files holding the topic's batches
//	floe_compactor_iceberg_rows_total             rows appended to Iceberg tables
//	floe_compactor_iceberg_batch_bytes_total      bytes of the log's batches they came from
//	floe_compactor_iceberg_failures_total         table passes that failed (retried next pass)
type metrics struct {
	passes                                              *prometheus.CounterVec
	advances, collected, marked, deleted, bytesDeleted  prometheus.Counter
	merged                                              prometheus.Counter
	icebergRows, icebergBytes, icebergFailures          prometheus.Counter
	deleteFailures, listed, orphansFound, orphansDelete prometheus.Counter
	queueFiles, queueBytes, queueOldest                 prometheus.Gauge
	topicBytes, topicFiles                              *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_compactor_" + name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: "floe_compactor_" + name, Help: help})
	}
	m := &metrics{
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_compactor_passes_total",
			Help: "Job passes, by task (the job) and result (ok, error, not_held)."}, []string{"task", "result"}),
		advances:        counter("log_start_advances_total", "Partitions whose log start offset retention moved."),
		collected:       counter("batches_collected_total", "Unreachable batch rows removed."),
		marked:          counter("files_marked_total", "Files marked for deletion."),
		merged:          counter("files_merged_total", "Small files whose live batches were merged into a bigger file."),
		deleted:         counter("files_deleted_total", "Dead files deleted from the object store and the metadata."),
		bytesDeleted:    counter("bytes_deleted_total", "Bytes of the dead files deleted."),
		deleteFailures:  counter("delete_failures_total", "Object deletes that failed (retried on a later pass)."),
		listed:          counter("objects_listed_total", "Objects seen by the orphan listing."),
		orphansFound:    counter("orphans_found_total", "Objects the metadata does not know, each time seen."),
		orphansDelete:   counter("orphans_deleted_total", "Orphan objects deleted."),
		icebergRows:     counter("iceberg_rows_total", "Rows appended to the topics' Iceberg tables."),
		icebergBytes:    counter("iceberg_batch_bytes_total", "Bytes of the log's batches appended to Iceberg tables."),
		icebergFailures: counter("iceberg_failures_total", "Table appends that failed (retried from the table's watermark next pass)."),
		queueFiles:      gauge("deletion_queue_files", "Files marked for deletion."),
		queueBytes:      gauge("deletion_queue_bytes", "Bytes of the files marked for deletion."),
		queueOldest:     gauge("deletion_queue_oldest_seconds", "Age of the oldest mark for deletion (0 when none)."),
		topicBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "floe_compactor_topic_bytes",
			Help: "A topic's bytes: files (sizes of the files holding its batches), live, dead (below the log start, not collected yet)."},
			[]string{"topic", "kind"}),
		topicFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "floe_compactor_topic_files",
			Help: "Files holding a topic's batches."}, []string{"topic"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.passes, m.advances, m.collected, m.marked, m.merged, m.deleted, m.bytesDeleted,
		m.deleteFailures, m.listed, m.orphansFound, m.orphansDelete, m.queueFiles, m.queueBytes, m.queueOldest,
		m.topicBytes, m.topicFiles, m.icebergRows, m.icebergBytes, m.icebergFailures} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("compactor: metrics already registered (one compactor per registry): %w", err)
			}
			return nil, fmt.Errorf("compactor: register metrics: %w", err)
		}
	}
	return m, nil
}

// setTopics replaces the per-topic gauges.
func (m *metrics) setTopics(names []string, st []metadata.TopicStorage) {
	m.topicBytes.Reset()
	m.topicFiles.Reset()
	for i, n := range names {
		m.topicBytes.WithLabelValues(n, "files").Set(float64(st[i].FileBytes))
		m.topicBytes.WithLabelValues(n, "live").Set(float64(st[i].LiveBytes))
		m.topicBytes.WithLabelValues(n, "dead").Set(float64(st[i].DeadBytes))
		m.topicFiles.WithLabelValues(n).Set(float64(st[i].Files))
	}
}
