// Package lines is the end of a text, for messages that quote a
// command's output or a log: its last lines. It imports only the standard
// library, so that every package and tool of the module can use it.
package lines

import "strings"

// Last is s's last n lines (all of them when it has n or fewer), its
// trailing newlines dropped.
func Last(s string, n int) []string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return l
}

// OnOneLine is s's last n lines, trimmed, joined by " / ".
func OnOneLine(s string, n int) string {
	return strings.Join(Last(strings.TrimSpace(s), n), " / ")
}
