package sqlite

import (
	"fmt"
	"strings"
)

// chunkSizes are the row counts of the multi-row statements: a batch of n
// rows is cut into chunks of these sizes, largest first, so that three
// prepared statements cover every batch with at most a few executions.
var chunkSizes = []int{100, 10, 1}

// chunks returns the chunk sizes that add up to n, largest first.
func chunks(n int) []int {
	var out []int
	for _, c := range chunkSizes {
		for n >= c {
			out = append(out, c)
			n -= c
		}
	}
	return out
}

// defineChunked registers, for each chunk size, the statement that
// build(rows) makes, where rows is that many "(?, …)" groups of width
// columns, to prepare on pools.
func defineChunked(pools pool, width int, build func(rows string) string) map[int]query {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	out := make(map[int]query, len(chunkSizes))
	for _, n := range chunkSizes {
		out[n] = define(pools, build(strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")))
	}
	return out
}

// setOnce is the SET terms that bind cols once, as the parameters after
// the first after ones (the entries' own): "col = ?N".
func setOnce(cols []string, after int) []string {
	set := make([]string, len(cols))
	for i, c := range cols {
		set[i] = fmt.Sprintf("%s = ?%d", c, after+i+1)
	}
	return set
}
