package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// configFlags are a server command's -config and setting flags, as given.
type configFlags struct {
	command string
	path    string
	byFlag  map[string]setting
	raw     map[string]*rawFlag
	sources map[string]string // setting name -> where its value came from (absent: its default); set by read
}

// rawFlag keeps a setting flag's text until the file and the environment
// are read: a flag given overrides both.
type rawFlag struct {
	text   string
	isBool bool
}

func (r *rawFlag) String() string {
	if r == nil {
		return ""
	}
	return r.text
}
func (r *rawFlag) Set(s string) error { r.text = s; return nil }
func (r *rawFlag) IsBoolFlag() bool   { return r != nil && r.isBool }

// registerConfig adds -config and one flag per setting of command to fs.
func registerConfig(fs *flag.FlagSet, command string) *configFlags {
	cf := &configFlags{command: command, byFlag: map[string]setting{}, raw: map[string]*rawFlag{}}
	fs.StringVar(&cf.path, "config", "", "YAML configuration file (env FLOE_CONFIG); flags and FLOE_<SECTION>_<KEY> variables override it")
	def := DefaultServerConfig(command)
	for _, s := range commandSettings(command) {
		r := &rawFlag{text: s.format(&def), isBool: s.typ.Kind() == reflect.Bool}
		kind := ""
		switch {
		case r.isBool:
			if r.text == "false" {
				r.text = "" // no "(default false)" in the usage
			}
		case s.typ == durationType:
			kind = ", a `duration`"
		case s.typ.Kind() == reflect.String:
			kind = ", a `string`"
		default:
			kind = ", an `integer`"
		}
		cf.byFlag[s.flag], cf.raw[s.flag] = s, r
		fs.Var(r, s.flag, fmt.Sprintf("%s (%s, env %s%s)", s.help, s.name(), s.envs[0], kind))
	}
	return cf
}

// load returns the effective configuration: defaults, then the file, then
// the environment, then the flags given in fs; validated.
func (cf *configFlags) load(fs *flag.FlagSet, getenv func(string) string) (Config, error) {
	c, err := cf.read(fs, getenv)
	if err != nil {
		return c, err
	}
	if err := c.validate(cf.command); err != nil {
		return c, cf.explain(err)
	}
	return c, nil
}

// explain wraps a validation error, which starts with the setting's name,
// with where the setting's value came from.
func (cf *configFlags) explain(err error) error {
	name, _, _ := strings.Cut(err.Error(), ":")
	if src, ok := cf.sources[name]; ok {
		return fmt.Errorf("configuration: %w (set by %s)", err, src)
	}
	return fmt.Errorf("configuration: %w", err)
}

// read is load without the validation of the values.
func (cf *configFlags) read(fs *flag.FlagSet, getenv func(string) string) (Config, error) {
	c := DefaultServerConfig(cf.command)
	cf.sources = map[string]string{}
	path := cf.path
	if path == "" {
		path = getenv("FLOE_CONFIG")
	}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("config file: %w", err)
		}
		lines, err := decodeConfigLines(&c, data)
		if err != nil {
			return c, fmt.Errorf("config file %s: %w", path, err)
		}
		for name, line := range lines {
			cf.sources[name] = fmt.Sprintf("config file %s line %d", path, line)
		}
	}
	if err := applyEnv(&c, cf.command, getenv, cf.sources); err != nil {
		return c, err
	}
	var ferr error
	fs.Visit(func(f *flag.Flag) {
		if s, ok := cf.byFlag[f.Name]; ok && ferr == nil {
			if err := s.parse(&c, cf.raw[f.Name].text); err != nil {
				ferr = fmt.Errorf("flag -%s: %w", f.Name, err)
			}
			cf.sources[s.name()] = "flag -" + f.Name
		}
	})
	return c, ferr
}

// decodeConfig sets in c the settings of a YAML document: a mapping of
// sections, each a mapping of keys to scalars. Unknown sections and keys
// are errors, as are values of the wrong type; all name the setting.
func decodeConfig(c *Config, data []byte) error {
	_, err := decodeConfigLines(c, data)
	return err
}

// decodeConfigLines is decodeConfig, returning the line of each setting set.
func decodeConfigLines(c *Config, data []byte) (map[string]int, error) {
	lines := map[string]int{}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return lines, nil // an empty file
		}
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	if len(doc.Content) == 0 {
		return lines, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the document must be a mapping of sections", root.Line)
	}
	known := map[string]setting{}
	sections := map[string]bool{}
	for _, s := range allSettings() {
		known[s.name()] = s
		sections[s.section] = true
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		sec, body := root.Content[i], root.Content[i+1]
		if !sections[sec.Value] {
			return nil, fmt.Errorf("line %d: unknown section %q (known: %s)", sec.Line, sec.Value, strings.Join(sectionNames(), ", "))
		}
		if seen[sec.Value] {
			return nil, fmt.Errorf("line %d: section %s given twice", sec.Line, sec.Value)
		}
		seen[sec.Value] = true
		if body.Kind == yaml.ScalarNode && body.Tag == "!!null" {
			continue
		}
		if body.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("line %d: section %s must be a mapping of keys", body.Line, sec.Value)
		}
		for j := 0; j+1 < len(body.Content); j += 2 {
			k, v := body.Content[j], body.Content[j+1]
			name := sec.Value + "." + k.Value
			s, ok := known[name]
			if !ok {
				return nil, fmt.Errorf("line %d: unknown setting %s", k.Line, name)
			}
			if seen[name] {
				return nil, fmt.Errorf("line %d: setting %s given twice", k.Line, name)
			}
			seen[name] = true
			if v.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: %s must be a single value", v.Line, name)
			}
			if err := s.parse(c, v.Value); err != nil {
				return nil, fmt.Errorf("line %d: %w", v.Line, err)
			}
			lines[name] = v.Line
		}
	}
	return lines, nil
}

func sectionNames() []string {
	var out []string
	for _, s := range allSettings() {
		if len(out) == 0 || out[len(out)-1] != s.section {
			out = append(out, s.section)
		}
	}
	return out
}

// logger builds the configured logger writing to w.
func (c *Config) logger(w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Log.Level)) // validated
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
