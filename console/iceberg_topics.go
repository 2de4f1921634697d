package console

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// TopicTables is an IcebergSource read from the agent's topic
// descriptions: every topic with Iceberg output on, its table name (by
// tableName, the compactor's naming), and how many offsets the table
// trails the log (records, bytes, age of the oldest), and the table's last
// snapshot, size, last maintenance and rejected rows, from what the compactor records in
// the metadata store (an agent does not open the Iceberg catalog).
func TopicTables(src func() Source, namespace string, tableName func(topic string) string, maxTopics int) IcebergSource {
	return &topicTables{src: src, namespace: namespace, tableName: tableName, max: maxTopics}
}

type topicTables struct {
	src       func() Source
	namespace string
	tableName func(string) string
	max       int
}

func (t *topicTables) IcebergTables(ctx context.Context) ([]IcebergTable, error) {
	s := t.src()
	if s == nil {
		return nil, nil
	}
	lt, err := listTopics(ctx, s)
	if err != nil {
		return nil, err
	}
	var names []string
	for i, tp := range lt.GetTopics() {
		if t.max > 0 && i >= t.max {
			break
		}
		names = append(names, tp.GetName())
	}
	return t.IcebergTablesOf(ctx, names)
}

// IcebergTablesOf describes only the topics named (IcebergTopicsSource).
func (t *topicTables) IcebergTablesOf(ctx context.Context, topics []string) ([]IcebergTable, error) {
	s := t.src()
	if s == nil {
		return nil, nil
	}
	var out []IcebergTable
	for _, name := range topics {
		d, err := s.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: name})
		if status.Code(err) == codes.NotFound {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		ice := d.GetIceberg()
		if ice == nil || !ice.GetEnabled() {
			continue
		}
		tb := IcebergTable{Topic: name, Namespace: t.namespace, Table: t.tableName(name),
			CompactionLagRecords: trailing(d), SnapshotID: ice.GetSnapshotId(), CompactionLagMs: ice.GetTrailingMs(),
			CompactionLagBytes: ice.GetTrailingBytes(), Rows: ice.GetRows(), DataFiles: ice.GetDataFiles(), DataBytes: ice.GetDataBytes(),
			RejectedRows: ice.GetRejectedRows()}
		if ns, name, ok := strings.Cut(ice.GetTable(), "."); ok { // the compactor's own record of it
			tb.Namespace, tb.Table = ns, name
		}
		if ms := ice.GetSnapshotTimeMs(); ms > 0 {
			tb.SnapshotTime = time.UnixMilli(ms).UTC()
		}
		if ms := ice.GetMaintainedMs(); ms > 0 {
			tb.MaintainedTime = time.UnixMilli(ms).UTC()
		}
		out = append(out, tb)
	}
	return out, nil
}
