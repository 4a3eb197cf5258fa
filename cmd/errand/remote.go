package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/errandhq/errand/client"
)

// remoteFlags are the flags of a verb that runs against a node through the
// Go client: --url and --api-key, from ERRAND_URL and ERRAND_API_KEY.
type remoteFlags struct {
	url, key *string
}

func addRemoteFlags(fs *flag.FlagSet) *remoteFlags {
	return &remoteFlags{
		url: fs.String("url", cmp.Or(os.Getenv("ERRAND_URL"), "http://127.0.0.1:9191"), ""),
		key: fs.String("api-key", os.Getenv("ERRAND_API_KEY"), ""),
	}
}

// client is a client of the node the flags name.
func (f *remoteFlags) client() (*client.Client, error) {
	c, err := client.New(*f.url, client.Options{APIKey: *f.key, UserAgent: "errand-cli"})
	if err != nil {
		return nil, usagef("%s: %v", clientFlag(err), err)
	}
	return c, nil
}

// remoteFlagsHelp documents remoteFlags in a verb's usage.
const remoteFlagsHelp = `  --url URL               the node (default $ERRAND_URL, else http://127.0.0.1:9191)
  --api-key KEY           the API key (default $ERRAND_API_KEY; errand dev needs none)`

// isTerminal reports whether w is a terminal (progress is shown there
// only, never in a file or a pipe).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressLine rewrites one status line on a terminal; elsewhere it writes
// nothing. done ends the line.
type progressLine struct {
	w  io.Writer
	on bool
}

func newProgress(w io.Writer) *progressLine { return &progressLine{w: w, on: isTerminal(w)} }

func (p *progressLine) show(format string, args ...any) {
	if p.on {
		fmt.Fprintf(p.w, "\r\033[K"+format, args...)
	}
}

func (p *progressLine) done() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
