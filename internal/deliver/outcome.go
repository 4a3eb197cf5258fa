package deliver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/errandhq/errand/internal/task"
)

// Bounds of what is read from an answer.
const (
	// errorBodyBytes of a non-2xx answer are read for the error text.
	errorBodyBytes = 4 << 10
	// errorTextBytes of them appear in the attempt's error.
	errorTextBytes = 200
	// drainBytes more are read and dropped so the connection can be reused;
	// a longer answer closes the connection instead.
	drainBytes = 64 << 10
	// MaxDeferDelay caps the wait a target may ask for with retry-after, as
	// an added task's runAt is capped: a year.
	MaxDeferDelay = 365 * 24 * time.Hour
)

// answer turns a response into a Result (without Duration). It reads the
// body within the caps; the caller closes it.
func answer(resp *http.Response, now time.Time) Result {
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		o := task.Outcome{Status: task.AttemptSucceeded, HTTPStatus: code}
		if resp.ContentLength == 0 {
			return Result{Outcome: o}
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, task.MaxPayloadBytes+1))
		// A result is JSON in UTF-8, as an ack's must be (json.Valid
		// passes invalid UTF-8 in strings).
		if len(body) <= task.MaxPayloadBytes && !task.IsJSONNull(body) && json.Valid(body) && utf8.Valid(body) {
			o.Result = body
		} else if len(body) > task.MaxPayloadBytes {
			drain(resp.Body)
		}
		return Result{Outcome: o}
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyBytes))
	drain(resp.Body)
	msg := "HTTP " + strconv.Itoa(code)
	if code >= 300 && code < 400 {
		msg += ": redirects are not followed"
		if loc := snippet([]byte(resp.Header.Get("Location")), errorTextBytes); loc != "" {
			msg += " (location " + loc + ")"
		}
	} else if text := snippet(body, errorTextBytes); text != "" {
		msg += ": " + text
	}
	res := failed(code, msg)
	if code == http.StatusServiceUnavailable && strings.EqualFold(strings.TrimSpace(resp.Header.Get("X-Task-Retry")), "defer") {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
			res.Defer, res.DeferDelay = true, d
		} else {
			res.Outcome.Error += " (x-task-retry: defer ignored: retry-after is missing, or neither whole seconds nor an HTTP date)"
		}
	}
	return res
}

func drain(r io.Reader) { _, _ = io.CopyN(io.Discard, r, drainBytes) }

// parseRetryAfter reads a retry-after value: delta seconds, or an HTTP date
// taken relative to now (a past date is 0). The wait is capped at
// MaxDeferDelay.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if strings.Trim(v, "0123456789") == "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > int64(MaxDeferDelay/time.Second) {
			return MaxDeferDelay, true // only digits: too many of them
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), MaxDeferDelay), true
}

// snippet returns up to n bytes of b as one line of valid UTF-8: control
// characters become spaces, and the cut falls on a character boundary.
func snippet(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
		for i := 1; i < utf8.UTFMax && len(b) > 0; i++ {
			if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
				break
			}
			b = b[:len(b)-1] // part of a character cut in two
		}
	}
	s := strings.ToValidUTF8(string(b), "�")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// shortError names why an attempt got no answer, in a few words.
func shortError(ctx context.Context, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "deadline exceeded"
	}
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	var refused *RefusedError
	if errors.As(err, &refused) {
		return "refused: " + refused.Error()
	}
	if errors.Is(err, ErrPlainHTTP) {
		return "refused: " + ErrPlainHTTP.Error()
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "dns: " + shortDNSError(dnsErr)
	}
	if s := tlsError(err); s != "" {
		return s
	}
	var op *net.OpError
	if errors.As(err, &op) {
		verb := op.Op
		switch verb {
		case "dial":
			verb = "connect"
		case "remote error": // a TLS alert from the target
			return "tls: the target sent an alert: " + strings.TrimPrefix(innermost(op.Err), "tls: ")
		}
		if op.Timeout() {
			return verb + ": timeout"
		}
		return verb + ": " + innermost(op.Err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "connection closed by the target before it answered"
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = ue.Err.Error()
	}
	switch {
	case strings.Contains(msg, "timeout awaiting response headers"):
		return "timeout: no answer within the response header timeout"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	}
	return snippet([]byte(strings.TrimPrefix(msg, "net/http: ")), errorTextBytes)
}

// tlsError names a TLS failure, or returns "".
func tlsError(err error) string {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	var rh tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case errors.As(err, &cv):
		return "tls: " + strings.TrimPrefix(cv.Err.Error(), "x509: ")
	case errors.As(err, &ua), errors.As(err, &hn), errors.As(err, &ci):
		return "tls: " + strings.TrimPrefix(innermost(err), "x509: ")
	case errors.As(err, &rh), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "tls: the target did not answer with TLS"
	case errors.As(err, &alert):
		return "tls: " + strings.TrimPrefix(alert.Error(), "tls: ")
	case strings.Contains(err.Error(), "TLS handshake timeout"):
		return "tls: handshake timeout"
	}
	return ""
}

// innermost returns the message of the deepest wrapped error: "connection
// refused" rather than "dial tcp 127.0.0.1:9: connect: connection refused".
func innermost(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// shortDNSError names a lookup failure: "no such host", "timeout", or the
// resolver's own words.
func shortDNSError(err error) string {
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) {
		return snippet([]byte(err.Error()), errorTextBytes)
	}
	switch {
	case dnsErr.IsNotFound:
		return "no such host"
	case dnsErr.IsTimeout:
		return "timeout"
	}
	return snippet([]byte(dnsErr.Err), errorTextBytes)
}
