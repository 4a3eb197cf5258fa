package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyQueryPlans: the lookup every authenticated call makes is an index
// seek on the digest, a key's read by id (a subscription's check) a seek on
// its key, and an organization's key list needs no sort.
func TestKeyQueryPlans(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "plan.db"), Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name string
		q    query
		args []any
		want string
	}{
		{"by digest", qKeyByDigest, []any{make([]byte, 32)}, "SEARCH api_keys USING INDEX sqlite_autoindex_api_keys_2 (digest=?)"},
		{"list org", qKeyListOrg, []any{"acme"}, "SEARCH api_keys USING INDEX api_keys_org (org=?)"},
		{"revoke", qKeyRevoke, []any{1, "acme", "k1"}, "SEARCH api_keys USING PRIMARY KEY (id=?)"},
		// An open channel subscription reads its key once a second.
		{"get", qKeyGet, []any{"k1", "acme"}, "SEARCH api_keys USING PRIMARY KEY (id=?)"},
	} {
		rows, err := s.w.QueryContext(ctx, "EXPLAIN QUERY PLAN "+c.q.text, c.args...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, c.want) || strings.Contains(text, "TEMP B-TREE") || strings.Contains(text, "SCAN") {
			t.Errorf("%s: plan\n%s\nwant %q, no scan, no sort", c.name, text, c.want)
		}
	}
}
