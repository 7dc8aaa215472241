package cluster

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A Var is an environment variable a run reads: the harness's, a
// backend's (Backend.Vars) or a package's its backends share (the
// binaries' versions). Each is declared once, with what it means and the
// values it takes; ReadEnv reads them all, once, and refuses a bad value
// before anything starts.
type Var struct {
	Name string
	// Kind is the values it takes.
	Kind VarKind
	// Doc says what it does, for the error on a bad value and the docs.
	Doc string
}

// VarKind is the values a Var takes ("" always allowed: unset).
type VarKind int

const (
	// Text is any value.
	Text VarKind = iota
	// Flag is true or false.
	Flag
	// Count is a positive number.
	Count
	// Paths is one absolute path, or several separated by the list
	// separator (KUBECONFIG): go test and ginkgo run each suite in its
	// package's directory, so a relative path would not resolve against
	// the directory the command was typed in.
	Paths
)

// Env is a run's configuration: the value of each Var the run reads, read
// once from the environment (ReadEnv) and handed down (Harness.Env, the
// backends' functions), so a backend or a provider can be given values
// without touching the process's environment. The zero Env is empty.
type Env map[string]string

// Get is name's value, "" when unset.
func (e Env) Get(name string) string { return e[name] }

// Flag says whether name is set to true (ReadEnv refuses anything but
// true, false or unset for a Flag).
func (e Env) Flag(name string) bool { return e[name] == "true" }

// Count is name's positive number, or def when unset (ReadEnv refuses
// anything else for a Count).
func (e Env) Count(name string, def int) int {
	if n, err := strconv.Atoi(e[name]); err == nil && n > 0 {
		return n
	}
	return def
}

// With is a copy of e with name set to value ("" unsets it).
func (e Env) With(name, value string) Env {
	out := maps.Clone(e)
	if out == nil {
		out = Env{}
	}
	if value == "" {
		delete(out, name)
	} else {
		out[name] = value
	}
	return out
}

// ReadEnv reads vars with getenv (os.Getenv for the process's
// environment) into an Env, and says every value its Var refuses, with
// what the variable means.
func ReadEnv(getenv func(string) string, vars ...Var) (Env, error) {
	env := Env{}
	var errs []error
	for _, v := range vars {
		val := getenv(v.Name)
		if val == "" {
			continue
		}
		if err := v.check(val); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w (%s: %s)", v.Name, val, err, v.Name, v.Doc))
			continue
		}
		env[v.Name] = val
	}
	return env, errors.Join(errs...)
}

// check says why val is not a value of v.
func (v Var) check(val string) error {
	switch v.Kind {
	case Flag:
		if val != "true" && val != "false" {
			return errors.New("want true or false")
		}
	case Count:
		if n, err := strconv.Atoi(val); err != nil || n <= 0 {
			return errors.New("want a positive number")
		}
	case Paths:
		var rel []string
		for _, p := range filepath.SplitList(val) {
			if p != "" && !filepath.IsAbs(p) {
				rel = append(rel, p)
			}
		}
		if len(rel) > 0 {
			return fmt.Errorf("relative path %s: go test and ginkgo run each suite in its package directory, "+
				"so it would not resolve against the directory the command was typed in; give an absolute path", strings.Join(rel, ", "))
		}
	}
	return nil
}

// VarNames are the names of vars, sorted, each once.
func VarNames(vars ...Var) []string {
	var names []string
	for _, v := range vars {
		names = append(names, v.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}
