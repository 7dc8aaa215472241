// Package processenv is the one place the module changes its own process's
// environment: the variables that client-go, kind's library or a child
// process read from it and no API passes (client-go's watch-list
// consistency detector, kind's Docker network, the PATH through which kind
// finds docker). Everything else the harness and the backends take as
// values.
//
// One process runs one spec at a time, and its environment is the
// process's: a variable this package set stays set. Set records who set
// it, and refuses a second owner's different value, naming both, instead
// of letting the second quietly change what the first relies on. It
// imports only the standard library (package watchlistdetector must
// initialise before client-go).
package processenv

import (
	"fmt"
	"os"
	"sync"
)

var (
	mu  sync.Mutex
	set = map[string]setting{}
)

// setting is a variable this package set: its value and who asked.
type setting struct{ value, owner string }

// Set sets the process's variable name to value for owner (a package or
// backend, named in errors). Setting it again to the same value is a no-op;
// to another value it is an error naming both owners, and the variable
// keeps the first. A value the variable had when the process started is
// replaced (the caller decides whether that may be).
func Set(name, value, owner string) error {
	mu.Lock()
	defer mu.Unlock()
	if s, ok := set[name]; ok {
		if s.value == value {
			return nil
		}
		return fmt.Errorf("process environment: %s wants %s=%q, but %s set it to %q in this process (one process's environment serves one configuration: run them in separate processes)", owner, name, value, s.owner, s.value)
	}
	if err := os.Setenv(name, value); err != nil {
		return fmt.Errorf("process environment: %s: set %s: %w", owner, name, err)
	}
	set[name] = setting{value, owner}
	return nil
}

// Owner is who set name through Set, and to what; ok is false when nobody
// did.
func Owner(name string) (owner, value string, ok bool) {
	mu.Lock()
	defer mu.Unlock()
	s, ok := set[name]
	return s.owner, s.value, ok
}
