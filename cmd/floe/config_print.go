package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// runConfig is `floe config print [COMMAND] [flags]`.
func runConfig(_ context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) == 0 || args[0] != "print" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprint(stdout, "usage: floe config print [agent|dev|compactor] [flags]\n\nPrint the effective configuration of a server command.\n")
			return nil
		}
		return errors.New("config: usage: floe config print [agent|dev|compactor] [flags]")
	}
	args = args[1:]
	server := "agent"
	if len(args) > 0 {
		if _, ok := commandSections[args[0]]; ok {
			server, args = args[0], args[1:]
		}
	}
	cmd := newCommand("floe config print", "[agent|dev|compactor]", `Print as YAML the effective configuration of floe agent (default), dev or
compactor: defaults, then the file of -config (or FLOE_CONFIG), then the
FLOE_<SECTION>_<KEY> variables, then the flags, which are that command's.
Secrets (every password pgx reads from postgres.url, s3.secret_key) are masked. Exits
non-zero, after printing, when a setting is invalid.`, 0, 0)
	cf := registerConfig(cmd.fs, server)
	if _, err := cmd.parse(args, stdout); err != nil {
		return err
	}
	c, err := cf.read(cmd.fs, os.Getenv)
	if err != nil {
		return err
	}
	out, err := printConfig(&c, server)
	if err != nil {
		return err
	}
	if _, err := stdout.Write(out); err != nil {
		return err
	}
	if err := c.validate(server); err != nil {
		return cf.explain(err)
	}
	return nil
}

// printConfig renders the settings of command in c as a YAML document that
// -config reads back, secrets masked.
func printConfig(c *Config, command string) ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	var section *yaml.Node
	for _, s := range commandSettings(command) {
		if section == nil || root.Content[len(root.Content)-2].Value != s.section {
			section = &yaml.Node{Kind: yaml.MappingNode}
			root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: s.section}, section)
		}
		tag := "!!str"
		switch {
		case s.typ == durationType:
		case s.typ.Kind() == reflect.Bool:
			tag = "!!bool"
		case s.typ.Kind() == reflect.Int || s.typ.Kind() == reflect.Int64:
			tag = "!!int"
		}
		section.Content = append(section.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: s.key, LineComment: s.envs[0]},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s.masked(c)})
	}
	return yaml.Marshal(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}})
}
