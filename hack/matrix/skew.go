package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
)

// writeSkew writes the skew table of a run with more than one kube-apiserver
// version: a row per client-go version, a column per kube-apiserver version,
// each cell the default-gate column's passed and failed specs, the
// scenarios that failed, and the skew (the client's minor minus the
// server's: client-go supports a server one minor older or newer,
// https://github.com/kubernetes/client-go#compatibility-client-go---kubernetes-clusters).
// It writes nothing when the run has one server version.
func writeSkew(b *strings.Builder, cols []column) {
	type key struct{ clientGo, kube string }
	cells := map[key]column{}
	clients, servers := map[string]bool{}, map[string]bool{}
	for _, c := range cols {
		if len(c.Gates) > 0 || c.NotApplicable != "" || c.Kube == "" {
			continue
		}
		cells[key{c.ClientGo, c.Kube}] = c
		clients[c.ClientGo], servers[c.Kube] = true, true
	}
	if len(servers) < 2 {
		return
	}
	rows := slices.SortedFunc(maps.Keys(clients), semver.Compare)
	heads := slices.SortedFunc(maps.Keys(servers), semver.Compare)
	b.WriteString("\n## Version skew\n\nA row per client-go version, a column per kube-apiserver version (default gates): specs passed / failed, " +
		"the scenarios that failed, and the skew in brackets (client minor minus server minor; client-go supports a server " +
		"one minor older or newer, and a client newer than its cluster is the common production case).\n\n| client-go |")
	for _, h := range heads {
		fmt.Fprintf(b, " kube-apiserver %s |", h)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(heads)) + "\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s |", r)
		for _, h := range heads {
			c, ok := cells[key{r, h}]
			if !ok {
				b.WriteString(" - |")
				continue
			}
			fmt.Fprintf(b, " %s (%s) |", skewCell(c), skewOf(r, h))
		}
		b.WriteString("\n")
	}
}

// skewCell is a column's counts and failing scenarios, or why it did not run.
func skewCell(c column) string {
	if c.Error != "" {
		return "did not run"
	}
	passed, _, failed := countOutcomes(c)
	s := fmt.Sprintf("%d / %d", passed, len(failed))
	var ids []string
	for _, f := range failed {
		if id := strings.Fields(f)[0]; !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		s += ": " + strings.Join(ids, ", ")
	}
	return s
}

// skewOf is client-go's minor (v0.37.2: 37) minus kube-apiserver's
// (v1.36.3: 36), signed: "+1", "0", "-2".
func skewOf(clientGo, kube string) string {
	minor := func(v string) int {
		parts := strings.Split(strings.TrimPrefix(semver.MajorMinor(v), "v"), ".")
		if len(parts) < 2 {
			return 0
		}
		n, _ := strconv.Atoi(parts[1])
		return n
	}
	d := minor(clientGo) - minor(kube)
	if d > 0 {
		return fmt.Sprintf("+%d", d)
	}
	return strconv.Itoa(d)
}
