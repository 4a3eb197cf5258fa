package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release, set at build time with
// -ldflags "-X main.version=v1.2.3"; without it the module's version from
// the build information is used ("(devel)" for a build of a checkout).
var version = ""

// build is what the Go toolchain recorded of this binary.
type build struct {
	version, commit, when, goVersion string
	dirty                            bool
}

// readBuild reads the build information (runtime/debug): the version is
// main.version when set, else the module's ("(devel)" for a checkout), and
// the commit "unknown" without version control information.
func readBuild() build {
	b := build{version: version, commit: "unknown"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		b.goVersion = bi.GoVersion
		if b.version == "" {
			b.version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.commit = s.Value
			case "vcs.time":
				b.when = s.Value
			case "vcs.modified":
				b.dirty = s.Value == "true"
			}
		}
	}
	if b.version == "" {
		b.version = "(devel)"
	}
	if len(b.commit) > 12 {
		b.commit = b.commit[:12]
	}
	return b
}

// versionString is "errand VERSION (commit COMMIT[, modified], built TIME,
// GOVERSION)" from the build information the Go toolchain records.
func versionString() string {
	b := readBuild()
	s := "errand " + b.version + " (commit " + b.commit
	if b.dirty {
		s += ", modified"
	}
	if b.when != "" {
		s += ", " + b.when
	}
	if b.goVersion != "" {
		s += ", " + b.goVersion
	}
	return s + ")"
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print errand's version and commit",
		Long: `Print the version of this binary and the commit it was built from, as the Go
toolchain recorded them (runtime/debug build information). The commit is "unknown" in a
binary built without version control information (go build -buildvcs=false, or outside a
checkout). "errand --version" prints the same line.`,
		Example: `  errand version
  errand --version`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(c.OutOrStdout(), versionString())
			return err
		},
	}
}
