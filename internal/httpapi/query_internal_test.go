package httpapi

import "testing"

// TestRouteQueriesNameRoutes: every route of routeQueries is a route of
// the tables, so a renamed route cannot leave its parameters refused.
func TestRouteQueriesNameRoutes(t *testing.T) {
	known := map[string]bool{}
	for _, rt := range Routes {
		known[rt.Method+" "+rt.Pattern] = true
	}
	for _, rt := range OpsRoutes {
		known[rt.Method+" "+rt.Pattern] = true
	}
	for route := range routeQueries {
		if !known[route] {
			t.Errorf("routeQueries names %q, which is no route", route)
		}
	}
}
