package postgres

import (
	"math/rand/v2"
	"testing"

	"github.com/errandhq/errand/internal/store"
)

// TestRefillParity checks that the claim's SQL refill of a rate bucket is
// store.Refill bit for bit, so that the row limit the claim computes in SQL
// and the bucket it stores from Go agree.
func TestRefillParity(t *testing.T) {
	s := OpenTest(t)
	defer s.Close()
	sql := `SELECT (` + sqlRefill + `), $4::int, $5::int, $6::int
		FROM (SELECT $1::float8 AS rate_tokens, $2::bigint AS rate_at) AS q`
	r := rand.New(rand.NewPCG(1, 2))
	const now = int64(1_700_000_000_000)
	for i := range 2000 {
		tokens := []float64{-1, 0, 0.2, 1, 2.9999999999, r.Float64() * 10, r.Float64() * 1e6}[i%7]
		at := now - r.Int64N(120_000) + 1_000 // sometimes after now
		rate := []float64{0.001, 0.5, 2, 3.3, 1e6, r.Float64() * 100}[i%6]
		burst := []int{0, 1, 3, 10, 100_000}[i%5]
		want := store.Refill(tokens, at, now, rate, burst)
		var got float64
		var x, y, z int
		if err := s.pool.QueryRow(t.Context(), sql, tokens, at, now, 0, 0, 0, rate, burst).Scan(&got, &x, &y, &z); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("refill(%v, %d, %d, %v, %d): SQL %v, Go %v", tokens, at, now, rate, burst, got, want)
		}
	}
}
