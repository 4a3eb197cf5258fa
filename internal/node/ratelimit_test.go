package node

import (
	"net/http"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/testkit/stores"
)

// TestRateLimitAcrossNodes: an instance's rateLimit holds across the nodes
// of a shared store, as its other limits do: calls spread over two nodes
// of one PostgreSQL pass exactly one bucket's worth (a second of calls,
// the clocks standing still), then both nodes answer 429 RATE_LIMITED.
// Before, each node kept a bucket of its own and the instance got the
// limit once per node. One node on SQLite passes the same count.
func TestRateLimitAcrossNodes(t *testing.T) {
	const limit, calls = 50, 80 // a node asks for grants of 5 (grantOf)
	check := func(t *testing.T, nodes ...string) {
		do(t, "POST", nodes[0]+"/v1/instances", `{"name":"jobs"}`, 201)
		do(t, "PATCH", nodes[0]+"/v1/tasks/jobs/settings", `{"rateLimit":50}`, 200)
		passed := map[string]int{}
		for i := range calls {
			url := nodes[i%len(nodes)]
			resp, err := http.Get(url + "/v1/tasks/jobs/queues")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			switch resp.StatusCode {
			case 200:
				passed[url]++
			case 429:
				if resp.Header.Get("Retry-After") != "1" {
					t.Fatalf("call %d: 429 with Retry-After %q, want 1", i, resp.Header.Get("Retry-After"))
				}
			default:
				t.Fatalf("call %d: %d", i, resp.StatusCode)
			}
		}
		total := 0
		for _, n := range passed {
			total += n
		}
		if total != limit {
			t.Fatalf("%d calls over %d nodes: %d passed (%v), want %d (rateLimit %d, one second of calls)",
				calls, len(nodes), total, passed, limit, limit)
		}
		if len(passed) != len(nodes) {
			t.Fatalf("calls passed on %v only", passed)
		}
	}
	t.Run("one node", func(t *testing.T) {
		_, url := serveNode(t, stores.Open(t, "sqlite"), false)
		check(t, url)
	})
	t.Run("two nodes", func(t *testing.T) {
		// Two nodes on one database, each on a fake clock standing at the
		// same time (not the database's clock, which each node would read
		// at its own start: their skew would refill the bucket between
		// them).
		open := stores.OpenPostgresShared(t)
		_, a := serveNode(t, open(), false)
		_, b := serveNode(t, open(), false)
		if strings.EqualFold(a, b) {
			t.Fatal("one server")
		}
		check(t, a, b)
	})
}
