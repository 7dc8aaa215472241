package cluster

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestReadEnv: each kind takes its values and refuses the others, every
// bad value is said at once with what its variable means, and the good
// ones are read; unset is always fine.
func TestReadEnv(t *testing.T) {
	vars := []Var{
		{Name: "T_TEXT", Doc: "any text"},
		{Name: "T_FLAG", Kind: Flag, Doc: "a switch"},
		{Name: "T_COUNT", Kind: Count, Doc: "how many"},
		{Name: "T_PATHS", Kind: Paths, Doc: "files"},
		{Name: "T_UNSET", Kind: Count, Doc: "never set"},
	}
	good := map[string]string{"T_TEXT": "x y", "T_FLAG": "false", "T_COUNT": "3", "T_PATHS": "/a" + string(os.PathListSeparator) + "/b"}
	env, err := ReadEnv(func(n string) string { return good[n] }, vars...)
	if err != nil {
		t.Fatal(err)
	}
	if env.Get("T_TEXT") != "x y" || env.Flag("T_FLAG") || env.Count("T_COUNT", 1) != 3 || env.Count("T_UNSET", 7) != 7 {
		t.Errorf("read %v", env)
	}
	bad := map[string]string{"T_TEXT": "ok", "T_FLAG": "yes", "T_COUNT": "0", "T_PATHS": "/a" + string(os.PathListSeparator) + "rel"}
	env, err = ReadEnv(func(n string) string { return bad[n] }, vars...)
	if err == nil {
		t.Fatal("bad values accepted")
	}
	for _, want := range []string{`T_FLAG="yes": want true or false (T_FLAG: a switch)`, `T_COUNT="0": want a positive number`, "relative path rel", "(T_PATHS: files)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if got := slices.Sorted(maps.Keys(env)); !slices.Equal(got, []string{"T_TEXT"}) {
		t.Errorf("with bad values, read %v; want the good one only", got)
	}
	// With copies.
	e2 := env.With("T_FLAG", "true")
	if !e2.Flag("T_FLAG") || env.Flag("T_FLAG") || e2.With("T_TEXT", "").Get("T_TEXT") != "" || e2.Get("T_TEXT") != "ok" {
		t.Errorf("With changed the original or did not set: %v, %v", env, e2)
	}
	if got := VarNames(vars[1], vars[0], vars[1]); !slices.Equal(got, []string{"T_FLAG", "T_TEXT"}) {
		t.Errorf("VarNames %v", got)
	}
}
