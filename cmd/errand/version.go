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

// versionString is "errand VERSION (commit COMMIT[, modified], built TIME,
// GOVERSION)" from the build information the Go toolchain records.
func versionString() string {
	v, commit, when, dirty, gover := version, "unknown", "", false, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		gover = bi.GoVersion
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	s := "errand " + v + " (commit " + commit
	if dirty {
		s += ", modified"
	}
	if when != "" {
		s += ", " + when
	}
	if gover != "" {
		s += ", " + gover
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
