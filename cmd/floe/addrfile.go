package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// listenAddrs are a server's bound listen addresses, as -addr-file holds
// them: a server told to listen on port 0 (127.0.0.1:0) says there which
// ports the kernel gave it, so that whoever started it (tests, a
// supervisor) never has to pick a port that someone else may take first.
type listenAddrs struct {
	GRPC    string `json:"grpc,omitempty"`
	Metrics string `json:"metrics"`
	// Kafka is set once the Kafka listener is bound (after the stores
	// answered); empty before, and without a Kafka listener.
	Kafka string `json:"kafka,omitempty"`
}

// writeAddrFile replaces the file at path (nothing when path is empty)
// with a as one JSON object, atomically: a reader sees the previous
// content or the new one, never part of it.
func writeAddrFile(path string, a listenAddrs) error {
	if path == "" {
		return nil
	}
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("addr file: %w", err)
	}
	_, err = tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("addr file: %w", err)
	}
	return nil
}
