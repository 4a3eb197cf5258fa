package httpapi

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/errandhq/errand/internal/jsonstrict"
	"github.com/errandhq/errand/internal/task"
)

// maxBody bounds a request body: 100 tasks with 64 KiB payloads and params.
const maxBody = 16 << 20

// readBody reads a whole request body up to maxBody: readBodyUpTo.
func readBody(r *http.Request) ([]byte, error) {
	b, err := readBodyUpTo(r, maxBody)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, task.Errorf(task.CodePayloadTooLarge, "the request body is over %d bytes", maxBody)
	}
	return b, err
}

// readBodyUpTo reads a whole request body up to limit bytes, else an
// *http.MaxBytesError. A body sent with Content-Encoding gzip is read
// decompressed (Google's APIs take one so), bounded by limit as it
// decompresses; any other encoding is refused naming the header, rather
// than read as JSON that it is not.
func readBodyUpTo(r *http.Request, limit int64) ([]byte, error) {
	body := io.Reader(http.MaxBytesReader(nil, r.Body, limit))
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, task.FieldErrorf(task.CodeInvalidArgument, "Content-Encoding", "the body is not gzip: %v", err)
		}
		defer zr.Close()
		body = http.MaxBytesReader(nil, io.NopCloser(zr), limit)
	default:
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "Content-Encoding", "%s is not taken: send the body as it is, or with gzip", task.Quote(enc))
	}
	b, err := io.ReadAll(body)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, err
	}
	if err != nil {
		return nil, task.Errorf(task.CodeInvalidArgument, "reading the body: %v", err)
	}
	return b, nil
}

// decodeBody reads and strictly decodes a request body; an empty body
// decodes as {}.
func decodeBody(r *http.Request, v any) error {
	raw, err := readJSONBody(r)
	if err != nil {
		return err
	}
	return jsonstrict.Decode(raw, v, "")
}

// bodyless refuses, and answers (in the v1 or the operations API's
// shape), a body on a route that takes none, as decodeBody refuses one
// with a field a route does not know: an empty body, {} or null passes. It
// reports whether the route may go on.
func (s *Server) bodyless(w http.ResponseWriter, r *http.Request) bool {
	if err := decodeBody(r, &struct{}{}); err != nil {
		s.writerFor(r)(w, r, err)
		return false
	}
	return true
}

// decodePatch is decodeBody for a PATCH: a null is refused for a field
// it cannot clear (see jsonstrict.DecodePatch).
func decodePatch(r *http.Request, v any) error {
	raw, err := readJSONBody(r)
	if err != nil {
		return err
	}
	return jsonstrict.DecodePatch(raw, v, "")
}

// readJSONBody reads a body to decode; an empty body is {}.
func readJSONBody(r *http.Request) ([]byte, error) {
	raw, err := readBody(r)
	if err != nil || len(jsonstrict.TrimSpace(raw)) > 0 {
		return raw, err
	}
	return []byte("{}"), nil
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	// Payloads go out unescaped: never read as anything but JSON.
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // payloads and results keep their bytes
	_ = enc.Encode(v)
}

// queryInt parses an optional integer query parameter.
func queryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, task.FieldErrorf(task.CodeInvalidArgument, name, "must be an integer %d–%d", lo, hi)
	}
	return n, nil
}
