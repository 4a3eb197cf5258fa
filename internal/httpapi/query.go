package httpapi

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/errandhq/errand/internal/task"
)

// routeQueries are the query parameters each route reads ("METHOD
// pattern", as in Routes and OpsRoutes); a route not listed reads none.
// The hooks route is not checked: a hook's caller is another system,
// whose URL may carry parameters of its own.
var routeQueries = map[string][]string{
	"DELETE /v1/instances/{instance}":                {"confirm"},
	"DELETE /v1/tasks/{instance}/queues/{queue}":     {"confirm"},
	"POST /v1/tasks/{instance}/queues/{queue}/purge": {"confirm"},
	"GET /v1/tasks/{instance}/queues/{queue}/tasks":  {"state", "name", "limit", "cursor"},
	"GET /v1/tasks/{instance}/tasks/{id}":            {"waitSeconds"},
	"GET /v1/channels/{instance}/{channel}":          {"since", "token"},
	"GET /api/tasks":                                 {"limit", "offset"},
}

// checkQuery refuses a query parameter the route does not read, one given
// twice and a query that does not parse, as a body's unknown or repeated
// field is refused: INVALID_ARGUMENT naming it, before the handler runs
// (after the caller's key, grant and rate limit, as a body's check is).
// A misspelt parameter (?stat=failed) would otherwise be dropped in
// silence and the call answered as if it had not been sent.
func checkQuery(r *http.Request, route string) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return task.FieldErrorf(task.CodeInvalidArgument, "query", "does not parse: %v", err)
	}
	allowed := routeQueries[route]
	names := make([]string, 0, len(vals))
	for name := range vals {
		names = append(names, name)
	}
	slices.Sort(names) // the first in order is named, whatever the map's
	for _, name := range names {
		field := name
		if !plainName(name) {
			field = task.Quote(name)
		}
		if !slices.Contains(allowed, name) {
			takes := "none"
			if len(allowed) > 0 {
				takes = strings.Join(allowed, ", ")
			}
			return task.FieldErrorf(task.CodeInvalidArgument, field, "unknown query parameter (this route takes %s)", takes)
		}
		if len(vals[name]) > 1 {
			return task.FieldErrorf(task.CodeInvalidArgument, field, "is given twice")
		}
	}
	return nil
}

// plainName reports whether a parameter's name can be named as it is: up
// to 64 letters, digits, '_', '-' and '.'.
func plainName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
