package mcp

import (
	"net/url"
	"strings"
)

// parseQueueURI reads errand://tasks/{instance}/queues/{queue}.
func parseQueueURI(uri string) (instance, queue string, ok bool) {
	rest, found := strings.CutPrefix(uri, "errand://tasks/")
	if !found {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[1] != "queues" {
		return "", "", false
	}
	inst, err1 := url.PathUnescape(parts[0])
	q, err2 := url.PathUnescape(parts[2])
	if err1 != nil || err2 != nil || inst == "" || q == "" {
		return "", "", false
	}
	return inst, q, true
}
