package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// addBody is an add body of n tasks as clients send them: an array of
// objects with a payload and a name (one object alone when n is 1).
func addBody(n int) []byte {
	items := make([]string, n)
	for i := range items {
		items[i] = `{"name":"receipt-o-` + strconv.Itoa(i) + `","payload":{"orderId":"o-1041","amount":1299,"lines":[{"sku":"a-1","qty":2}]},"delay":0}`
	}
	if n == 1 {
		return []byte(items[0])
	}
	return []byte("[" + strings.Join(items, ",") + "]")
}

// BenchmarkAddParse measures the add handler's decoding and validation of a
// body (parseAdd), without the store.
func BenchmarkAddParse(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			raw := addBody(n)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parseAdd(raw, task.SourceAPI); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAddAnswer measures rendering and writing an add's 201 answer
// for 100 added tasks.
func BenchmarkAddAnswer(b *testing.B) {
	ins, err := parseAdd(addBody(100), task.SourceAPI)
	if err != nil {
		b.Fatal(err)
	}
	res := make([]engine.AddResult, len(ins))
	for i, in := range ins {
		res[i] = engine.AddResult{Task: &task.Task{ID: "0mvpn7bai3f9c2e81d4a" + strconv.Itoa(i%10), Name: in.Name,
			State: task.Pending, RunAt: 1793042520000 + int64(i)}}
	}
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		out, added := addAnswer(ins, res)
		if added != len(ins) {
			b.Fatal(added)
		}
		writeJSON(rec, http.StatusCreated, out)
	}
}
