module floe.test/confluentgo

go 1.24

require github.com/confluentinc/confluent-kafka-go/v2 v2.11.1 // indirect
