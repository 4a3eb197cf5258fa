package httpapi

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// frameReadLimit bounds a frame a worker sends at all: one past it closes
// the connection (1009), and the attempts it held fail. A frame past
// errandapi.MaxWorkerFrame but within this is read through, keeping one
// JSON token at a time, for its type and lease (skimFrame): an answer
// then fails its own attempt, refused with PAYLOAD_TOO_LARGE, and the
// connection and its other attempts go on — a worker that returns a
// result far past the 64 KiB a result may be (a non-SDK worker: the SDK
// fails such a result itself) no longer takes its other attempts down
// with it on every retry. Reading one holds at most a few times this much
// at once (the JSON decoder's buffer and the token it returns), so the
// bound is what a connection may make the node hold, not only a size.
const frameReadLimit = 4 << 20

// frameTooLarge is read's answer to a frame past errandapi.MaxWorkerFrame:
// its type and leaseId (each "" when not a top-level string) and the
// PAYLOAD_TOO_LARGE error to refuse it with.
type frameTooLarge struct {
	typ, leaseID string
	err          *task.Error
}

func (e *frameTooLarge) Error() string { return e.err.Error() }

// Unwrap makes the frame a *task.Error where it is not an answer: a hello
// or a frame of another type that large closes the connection, naming the
// reason.
func (e *frameTooLarge) Unwrap() error { return e.err }

// tooLargeAnswer is read's error err as a frameTooLarge when it is one of
// an answer to an attempt (done, failed or defer) that names its lease;
// otherwise nil. A nil err costs one comparison (no allocation on the
// read loop's path).
func tooLargeAnswer(err error) *frameTooLarge {
	if err == nil {
		return nil
	}
	var e *frameTooLarge
	if !errors.As(err, &e) || e.leaseID == "" {
		return nil
	}
	switch e.typ {
	case errandapi.FrameDone, errandapi.FrameFailed, errandapi.FrameDefer:
		return e
	}
	return nil
}

// skimFrame reads a frame's JSON from r to its end and returns the
// frameTooLarge it is, with its size; r's own errors (the connection's,
// or its read limit) come back as they are, a frame that is not a JSON
// object as an INVALID_ARGUMENT *task.Error.
func skimFrame(r io.Reader) (*frameTooLarge, error) {
	cr := &countingReader{r: r}
	dec := json.NewDecoder(cr)
	var f frameTooLarge
	err := skimObject(dec, &f)
	if err == nil {
		_, err = io.Copy(io.Discard, cr) // what follows the object (white space) ends the message
	}
	var se *json.SyntaxError
	if errors.As(err, &se) || errors.Is(err, errNotObject) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return nil, task.Errorf(task.CodeInvalidArgument, "a frame is a JSON object with a type")
	}
	if err != nil {
		return nil, err
	}
	f.err = task.Errorf(task.CodePayloadTooLarge, "the %s frame is %d bytes: a frame is at most %d (a result at most %d bytes of JSON)",
		task.Quote(f.typ), cr.n, errandapi.MaxWorkerFrame, errandapi.MaxPayloadBytes)
	return &f, nil
}

var errNotObject = errors.New("not a JSON object")

// skimObject reads one JSON object from dec, keeping its top-level "type"
// and "leaseId" strings in f and stepping over every other value.
func skimObject(dec *json.Decoder, f *frameTooLarge) error {
	if tok, err := dec.Token(); err != nil {
		return err
	} else if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errNotObject
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if tok, err = dec.Token(); err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if err := skipNested(dec, d); err != nil {
				return err
			}
			continue
		}
		s, _ := tok.(string)
		switch key {
		case "type":
			f.typ = s
		case "leaseId":
			f.leaseID = s
		}
	}
	_, err := dec.Token() // the closing '}'
	return err
}

// skipNested reads the rest of the object or array whose opening
// delimiter open dec has just read.
func skipNested(dec *json.Decoder, open json.Delim) error {
	if open != '{' && open != '[' {
		return errNotObject
	}
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
