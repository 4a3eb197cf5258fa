// Package inproc serves HTTP requests with an http.Handler in the same
// process: the MCP server and the web console call the node's own API
// without a socket, through the same handler (auth, grants, rate limit,
// validation) as any caller.
package inproc

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// noCreateKey marks a context whose in-process calls create no instance.
type noCreateKey struct{}

// NoCreate marks ctx so that the calls made with it create no instance on
// first use in dev: a caller's background reads (the console's live
// counts), which would otherwise make again an instance deleted meanwhile.
// The node maps it to the engine's own mark.
func NoCreate(ctx context.Context) context.Context {
	return context.WithValue(ctx, noCreateKey{}, true)
}

// CreatesNone reports whether ctx is marked by NoCreate.
func CreatesNone(ctx context.Context) bool { return ctx.Value(noCreateKey{}) != nil }

// Transport is an http.RoundTripper that serves each request with H in
// this process. The API's answers are small JSON documents, so each is
// buffered whole.
type Transport struct {
	H http.Handler
}

// RoundTrip serves req with the handler and returns its answer.
func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.RequestURI = req.URL.RequestURI()
	r.RemoteAddr = "in-process"
	if r.Body == nil {
		r.Body = http.NoBody
	}
	w := &recorder{header: http.Header{}}
	t.H.ServeHTTP(w, r)
	if req.Body != nil {
		req.Body.Close()
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return &http.Response{
		Status: http.StatusText(w.status), StatusCode: w.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.header, Body: io.NopCloser(bytes.NewReader(w.body.Bytes())), ContentLength: int64(w.body.Len()),
		Request: req,
	}, nil
}

// recorder is the http.ResponseWriter of an in-process call.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}
