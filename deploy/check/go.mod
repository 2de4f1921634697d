module github.com/floe-broker/floe/deploy/check

go 1.26.8
