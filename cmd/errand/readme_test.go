package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readmeBlocks returns the sh blocks of the README's sections whose
// headings are given, in order.
func readmeBlocks(t *testing.T, headings ...string) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, sec := range strings.Split(string(b), "\n## ")[1:] {
		title, body, _ := strings.Cut(sec, "\n")
		for _, h := range headings {
			if title != h {
				continue
			}
			parts := strings.Split(body, "```sh\n")
			for _, p := range parts[1:] {
				code, _, _ := strings.Cut(p, "```")
				blocks = append(blocks, code)
			}
		}
	}
	if len(blocks) == 0 {
		t.Fatalf("no sh block under %q", headings)
	}
	return blocks
}

// TestREADMEWalkthrough runs the README's walkthrough blocks as pasted,
// twice, with bash against a real errand dev and the built errand first on
// PATH.
func TestREADMEWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: the README's walkthrough uses it")
	}
	bin := buildErrand(t)
	_, url := startErrand(t, bin, "--data", t.TempDir())
	run := func(block string) (string, string) {
		t.Helper()
		cmd := exec.Command("bash", "-c", block)
		cmd.Env = append(os.Environ(), "ERRAND_URL="+url, "ERRAND_INSTANCE=", "ERRAND_API_KEY=",
			"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		_ = cmd.Run() // the blocks end with a command that may be refused on purpose
		return out.String(), errb.String()
	}
	curlBlocks := readmeBlocks(t, "A walkthrough with curl")
	cliBlocks := readmeBlocks(t, "The CLI")
	hookBlocks := readmeBlocks(t, "Webhooks in: hooks")
	_, opensslErr := exec.LookPath("openssl")
	for round := 1; round <= 2; round++ {
		out, errs := run(curlBlocks[0])
		if !strings.Contains(out, `"TASK_EXISTS"`) || strings.Count(out, `"state":"cancelled"`) != 1 ||
			!strings.Contains(out, `"NOT_CANCELLABLE"`) || errs != "" {
			t.Fatalf("round %d, the curl walkthrough:\n%s\nstderr: %s", round, out, errs)
		}
		if round == 1 && (!strings.Contains(out, `"mode":"pull"`) || !strings.Contains(out, `"state":"scheduled"`)) {
			t.Fatalf("round 1, the curl walkthrough:\n%s", out)
		}
		out, errs = run(curlBlocks[1])
		if !strings.Contains(out, `"state":"succeeded"`) || !strings.Contains(out, `"result":{"ok":true}`) || errs != "" {
			t.Fatalf("round %d, the worker:\n%s\nstderr: %s", round, out, errs)
		}
		// The hook block: GitHub's call, signed with openssl, then its
		// redelivery, a duplicate (a new rule each round, so again).
		if opensslErr == nil { // else skipped: the block signs with openssl
			out, errs = run(hookBlocks[0])
			if first, second, _ := strings.Cut(out, "\n"); !strings.Contains(first, `"duplicate":false`) || !strings.Contains(second, `"duplicate":true`) || errs != "" {
				t.Fatalf("round %d, the hook block:\n%s\nstderr: %s", round, out, errs)
			}
		}
		out, errs = run(cliBlocks[0])
		if !strings.Contains(out, "report-2026-01-02") || !strings.Contains(out, "reports  pull") ||
			strings.Contains(errs, "--help' for usage") || strings.Contains(errs, "command not found") {
			t.Fatalf("round %d, the CLI walkthrough:\n%s\nstderr: %s", round, out, errs)
		}
		if round == 1 && !strings.Contains(out, "LEASE ID") {
			t.Fatalf("round 1 of the CLI walkthrough leased nothing:\n%s\nstderr: %s", out, errs)
		}
		// The second time the task is still leased: the lease says it got
		// none, and prints no table.
		if round == 2 && (!strings.Contains(errs, "QUEUE_EXISTS") || !strings.Contains(errs, "TASK_EXISTS") ||
			!strings.Contains(errs, "no tasks leased") || strings.Contains(out, "LEASE ID")) {
			t.Fatalf("round 2 of the CLI walkthrough should meet its own names and lease nothing:\n%s\nstderr: %s", out, errs)
		}
	}
}
