package metadatatest

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

func testTopicLifecycle(t *testing.T, s metadata.Store) {
	c := ctx(t)
	before := time.Now().Add(-5 * time.Second)
	cfg := map[string]string{"retention.ms": "3600000", "cleanup.policy": "delete"}
	b, err := s.CreateTopic(c, metadata.TopicSpec{Name: "beta", Partitions: 3, Config: cfg})
	if err != nil {
		t.Fatalf("CreateTopic(beta): %v", err)
	}
	if b.ID == 0 || b.Name != "beta" || b.Partitions != 3 || !reflect.DeepEqual(b.Config, cfg) {
		t.Errorf("CreateTopic(beta) = %+v", b)
	}
	if b.CreatedAt.Before(before) || b.CreatedAt.After(time.Now().Add(5*time.Second)) {
		t.Errorf("CreatedAt %v is not about now", b.CreatedAt)
	}
	a := createTopic(t, s, "alpha", 1)
	g := createTopic(t, s, "gamma.events_v2-x", 5)
	if a.ID == b.ID || a.ID == g.ID || b.ID == g.ID {
		t.Errorf("topic ids not unique: %d %d %d", a.ID, b.ID, g.ID)
	}
	if a.Config == nil || len(a.Config) != 0 {
		t.Errorf("topic created without config has config %#v, want an empty map", a.Config)
	}

	list, err := s.ListTopics(c)
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	if !reflect.DeepEqual(list, []metadata.Topic{a, b, g}) {
		t.Errorf("ListTopics = %+v\nwant %+v", list, []metadata.Topic{a, b, g})
	}

	d, err := s.DescribeTopic(c, "beta")
	if err != nil {
		t.Fatalf("DescribeTopic(beta): %v", err)
	}
	want := metadata.TopicDescription{Topic: b, PartitionStates: []metadata.PartitionState{{Partition: 0}, {Partition: 1}, {Partition: 2}}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("DescribeTopic(beta) = %+v\nwant %+v", d, want)
	}
	byID, err := s.TopicByID(c, g.ID)
	if err != nil || !reflect.DeepEqual(byID, g) {
		t.Errorf("TopicByID(%d) = %+v, %v; want %+v", g.ID, byID, err, g)
	}
	states, err := s.PartitionStates(c, g.ID)
	if err != nil || len(states) != 5 || states[4] != (metadata.PartitionState{Partition: 4}) {
		t.Errorf("PartitionStates(gamma) = %+v, %v", states, err)
	}

	if _, err := s.DescribeTopic(c, "nope"); !errors.Is(err, metadata.ErrTopicNotFound) {
		t.Errorf("DescribeTopic(nope) = %v, want ErrTopicNotFound", err)
	}
	if _, err := s.TopicByID(c, 1<<40); !errors.Is(err, metadata.ErrTopicNotFound) {
		t.Errorf("TopicByID(unknown) = %v, want ErrTopicNotFound", err)
	}
	if _, err := s.PartitionStates(c, 1<<40); !errors.Is(err, metadata.ErrTopicNotFound) {
		t.Errorf("PartitionStates(unknown) = %v, want ErrTopicNotFound", err)
	}

	// Delete, then re-create under the same name.
	if err := s.DeleteTopic(c, "beta"); err != nil {
		t.Fatalf("DeleteTopic(beta): %v", err)
	}
	if err := s.DeleteTopic(c, "beta"); !errors.Is(err, metadata.ErrTopicNotFound) {
		t.Errorf("second DeleteTopic(beta) = %v, want ErrTopicNotFound", err)
	}
	if _, err := s.DescribeTopic(c, "beta"); !errors.Is(err, metadata.ErrTopicNotFound) {
		t.Errorf("DescribeTopic(deleted) = %v, want ErrTopicNotFound", err)
	}
	if _, err := s.TopicByID(c, b.ID); !errors.Is(err, metadata.ErrTopicNotFound) {
		t.Errorf("TopicByID(deleted) = %v, want ErrTopicNotFound", err)
	}
	list, err = s.ListTopics(c)
	if err != nil || !reflect.DeepEqual(list, []metadata.Topic{a, g}) {
		t.Errorf("ListTopics after delete = %+v, %v", list, err)
	}
	b2 := createTopic(t, s, "beta", 7)
	if b2.ID == b.ID || b2.ID == a.ID || b2.ID == g.ID {
		t.Errorf("re-created topic got id %d, already used", b2.ID)
	}
	d, err = s.DescribeTopic(c, "beta")
	if err != nil || d.ID != b2.ID || len(d.PartitionStates) != 7 {
		t.Errorf("DescribeTopic(re-created beta) = %+v, %v", d, err)
	}
	if _, err := s.CreateTopic(c, metadata.TopicSpec{Name: "beta", Partitions: 1}); !errors.Is(err, metadata.ErrTopicExists) {
		t.Errorf("CreateTopic(existing) = %v, want ErrTopicExists", err)
	}
}

func testTopicValidation(t *testing.T, s metadata.Store) {
	c := ctx(t)
	for _, name := range []string{"", ".", "..", strings.Repeat("x", metadata.MaxTopicNameLen+1),
		"has space", "slash/y", "colon:z", "ünïcode", "tab\t", "star*"} {
		_, err := s.CreateTopic(c, metadata.TopicSpec{Name: name, Partitions: 1})
		if !errors.Is(err, metadata.ErrInvalidTopicName) {
			t.Errorf("CreateTopic(%q) = %v, want ErrInvalidTopicName", name, err)
		}
	}
	for _, n := range []int32{0, -1, metadata.MaxPartitions + 1} {
		_, err := s.CreateTopic(c, metadata.TopicSpec{Name: "ok", Partitions: n})
		if !errors.Is(err, metadata.ErrInvalidPartitions) {
			t.Errorf("CreateTopic(ok, %d partitions) = %v, want ErrInvalidPartitions", n, err)
		}
	}
	if list, err := s.ListTopics(c); err != nil || len(list) != 0 {
		t.Errorf("refused creates left topics: %+v, %v", list, err)
	}
	long := strings.Repeat("L", metadata.MaxTopicNameLen)
	for _, name := range []string{long, "a", "...", "A-b_c.9"} {
		createTopic(t, s, name, 1)
	}
	if _, err := s.CreateTopic(c, metadata.TopicSpec{Name: "a", Partitions: 2}); !errors.Is(err, metadata.ErrTopicExists) {
		t.Errorf("CreateTopic(a) twice = %v, want ErrTopicExists", err)
	}
	d, err := s.DescribeTopic(c, "a")
	if err != nil || d.Partitions != 1 || len(d.PartitionStates) != 1 {
		t.Errorf("duplicate create changed topic a: %+v, %v", d, err)
	}
}

// testTopicConcurrentCreate races creators of one name: exactly one wins.
func testTopicConcurrentCreate(t *testing.T, s metadata.Store) {
	c := ctx(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.CreateTopic(c, metadata.TopicSpec{Name: "race", Partitions: int32(i + 1)})
		}()
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, metadata.ErrTopicExists):
			t.Errorf("creator %d: %v, want nil or ErrTopicExists", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d creators won, want 1", won)
	}
	d, err := s.DescribeTopic(c, "race")
	if err != nil || int(d.Partitions) != len(d.PartitionStates) {
		t.Errorf("DescribeTopic(race) = %+v, %v", d, err)
	}
}
