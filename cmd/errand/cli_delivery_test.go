package main

import (
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
)

// TestCLIDeliveryTokens: "lease --delivery-tokens" answers each task's
// token, and "add --delivery-token" (or ERRAND_DELIVERY_TOKEN) adds a
// follow-up with the task's depth + 1 and source lease; a token that is
// not one is refused naming the flag.
func TestCLIDeliveryTokens(t *testing.T) {
	c := devCLI(t)
	c.ok("queues", "create", "crawl", "--mode", "pull")
	c.ok("add", "-q", "crawl", "--payload", `{"url":"https://example.com/"}`)
	var leased errandapi.LeaseResponse
	c.json(&leased, "lease", "-q", "crawl", "--delivery-tokens")
	if len(leased.Tasks) != 1 || leased.Tasks[0].DeliveryToken == "" {
		t.Fatalf("lease --delivery-tokens: %+v", leased.Tasks)
	}
	tok := leased.Tasks[0].DeliveryToken
	var ar errandapi.AddResponse
	c.json(&ar, "add", "-q", "crawl", "--payload", `{"url":"https://example.com/a"}`, "--delivery-token", tok)
	var got errandapi.TaskResponse
	c.json(&got, "get", ar.Tasks[0].ID)
	if got.Task.Depth != 1 || got.Task.Source != "lease" {
		t.Fatalf("a follow-up added with the token: depth %d, source %s; want 1, lease", got.Task.Depth, got.Task.Source)
	}
	// The same from the environment, as a script's worker passes it on.
	c.env = append(c.env, "ERRAND_DELIVERY_TOKEN="+tok)
	c.json(&ar, "add", "-q", "crawl", "--payload", `{"url":"https://example.com/b"}`)
	c.env = c.env[:len(c.env)-1]
	c.json(&got, "get", ar.Tasks[0].ID)
	if got.Task.Depth != 1 || got.Task.Source != "lease" {
		t.Fatalf("a follow-up added with ERRAND_DELIVERY_TOKEN: depth %d, source %s", got.Task.Depth, got.Task.Source)
	}
	// Without it: any client's add.
	c.json(&ar, "add", "-q", "crawl", "--payload", `{}`)
	c.json(&got, "get", ar.Tasks[0].ID)
	if got.Task.Depth != 0 || got.Task.Source != "api" {
		t.Fatalf("an add without a token: depth %d, source %s", got.Task.Depth, got.Task.Source)
	}
	r := c.run("", "add", "-q", "crawl", "--payload", `{}`, "--delivery-token", "garbage")
	if r.code != exitRefused || !strings.Contains(r.errout, "--delivery-token: is not a valid delivery token") {
		t.Fatalf("a bad token: exit %d, stderr %s", r.code, r.errout)
	}
}
