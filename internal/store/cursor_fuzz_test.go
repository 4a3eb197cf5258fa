package store

import (
	"testing"

	"github.com/errandhq/errand/internal/task"
)

// FuzzDecodeCursor: any string either decodes to a key and an id errand
// could have made, or is INVALID_ARGUMENT naming cursor; and every cursor
// EncodeCursor makes decodes to what it was made from.
func FuzzDecodeCursor(f *testing.F) {
	f.Add("YzEyMzphYmM", int64(123), "01k3250r0044qvnlvji1o")
	f.Add("YTEyMzphAGI", int64(-5), "a-b_c.d")
	f.Add("", int64(0), "x")
	f.Fuzz(func(t *testing.T, c string, key int64, id string) {
		for _, o := range []ListOrder{ByRunAt, ByFinished, ByCreated} {
			k, got, err := DecodeCursor(o, c)
			if err != nil {
				if te, ok := err.(*task.Error); !ok || te.Code != task.CodeInvalidArgument || te.Field != "cursor" {
					t.Fatalf("%q: %#v", c, err)
				}
			} else if c != "" && !task.ValidID(got) {
				t.Fatalf("%q decoded to id %q", c, got)
			}
			_ = k
			if !task.ValidID(id) {
				continue
			}
			tk := &task.Task{ID: id, RunAt: key, FinishedAt: key, CreatedAt: key}
			k, got, err = DecodeCursor(o, EncodeCursor(o, tk))
			if err != nil || k != key || got != id {
				t.Fatalf("round trip of (%d, %q): (%d, %q, %v)", key, id, k, got, err)
			}
		}
	})
}
