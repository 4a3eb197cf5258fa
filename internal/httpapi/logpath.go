package httpapi

import "strings"

// LoggedPath is a request's path as a log shows it: a hook call's token,
// which adds tasks to whoever holds it, is cut to its first characters.
// Every log line that names a request's path goes through it.
func LoggedPath(p string) string {
	rest, ok := strings.CutPrefix(p, hookPrefix)
	if !ok {
		return p
	}
	instance, token, ok := strings.Cut(rest, "/")
	if !ok || len(token) <= 7 {
		return p
	}
	return hookPrefix + instance + "/" + token[:7] + "…"
}
