package httpapi

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/task"
)

// TestSkimFrame: an oversized frame's type and leaseId are found wherever
// they stand, past values of every shape, and its size is counted; what
// is not a JSON object is INVALID_ARGUMENT.
func TestSkimFrame(t *testing.T) {
	big := strings.Repeat("x", 300<<10)
	for _, c := range []struct{ in, typ, lease string }{
		{`{"type":"done","leaseId":"L1","result":{"a":"` + big + `"}}`, "done", "L1"},
		{`{"result":["` + big + `",{"b":[1,2,{"c":null}]},true], "leaseId":"L2" ,"type":"failed"}` + " \n", "failed", "L2"},
		{`{"type":"done","result":"` + big + `","leaseId":7}`, "done", ""},
		{`{"type":{"nested":"` + big + `"},"leaseId":"L3"}`, "", "L3"},
		{`{"type":"hello","functions":["` + big + `"]}`, "hello", ""},
	} {
		f, err := skimFrame(strings.NewReader(c.in))
		if err != nil {
			t.Fatalf("%.60s: %v", c.in, err)
		}
		if f.typ != c.typ || f.leaseID != c.lease || f.err == nil || f.err.Code != task.CodePayloadTooLarge ||
			!strings.Contains(f.err.Message, " frame is "+strconv.Itoa(len(c.in))+" bytes") {
			t.Fatalf("%.60s: %+v (%v)", c.in, f, f.err)
		}
	}
	for _, in := range []string{`["` + big + `"]`, `{"type":"done","result":"` + big, `{"type":"done",` + big, `"` + big + `"`, ``} {
		_, err := skimFrame(strings.NewReader(in))
		var te *task.Error
		if !errors.As(err, &te) || te.Code != task.CodeInvalidArgument {
			t.Fatalf("%.60s: %v; want INVALID_ARGUMENT", in, err)
		}
	}
	// The reader's own error comes back as it is.
	boom := errors.New("boom")
	if _, err := skimFrame(&failingReader{data: `{"type":"done","result":"` + big, err: boom}); !errors.Is(err, boom) {
		t.Fatalf("a failing read: %v", err)
	}
}

// failingReader reads data, then fails with err.
type failingReader struct {
	data string
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestTooLargeAnswer: only an answer that names its lease fails its own
// attempt; a hello, an unknown type, an answer without a lease and any
// other error close the connection.
func TestTooLargeAnswer(t *testing.T) {
	e := func(typ, lease string) error {
		return &frameTooLarge{typ: typ, leaseID: lease, err: task.Errorf(task.CodePayloadTooLarge, "big")}
	}
	for _, typ := range []string{"done", "failed", "defer"} {
		if tooLargeAnswer(e(typ, "L")) == nil {
			t.Errorf("a %s answer with its lease: not taken as an answer", typ)
		}
		if tooLargeAnswer(e(typ, "")) != nil {
			t.Errorf("a %s answer without a lease: taken as an answer", typ)
		}
	}
	for _, err := range []error{nil, errors.New("boom"), e("hello", "L"), e("ping", "L"), e("", "L")} {
		if tooLargeAnswer(err) != nil {
			t.Errorf("%v: taken as an answer", err)
		}
	}
}
