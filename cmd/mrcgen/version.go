package main

import (
	"fmt"
	"runtime/debug"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// versionInfo is what `mrcgen version` prints: where the binary came from.
type versionInfo struct {
	Module string `json:"module"`
	// Version is the module version ("(devel)" for a build from a work
	// tree, "v1.2.3" or a pseudo-version from `go install ...@version`).
	Version string `json:"version"`
	// Commit, CommitTime and Modified are the VCS stamp of a build from a
	// work tree (empty when the build had none, e.g. `go run` or -buildvcs=false).
	Commit     string `json:"commit"`
	CommitTime string `json:"commit_time"`
	Modified   bool   `json:"modified"`
	Go         string `json:"go"`
}

func readVersion(bi *debug.BuildInfo, ok bool) versionInfo {
	v := versionInfo{Module: "github.com/mrc-fabric/mrcgen", Version: "unknown"}
	if !ok || bi == nil {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	v.Go = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func newVersionCommand(io streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print mrcgen's module version, VCS commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := readVersion(debug.ReadBuildInfo())
			if io.json() {
				return writeJSON(io.out, v)
			}
			commit := v.Commit
			switch {
			case commit == "":
				commit = "unknown (built without VCS information)"
			case v.Modified:
				commit += " (with uncommitted changes)"
			}
			tw := tabwriter.NewWriter(io.out, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "module\t%s\n", v.Module)
			fmt.Fprintf(tw, "version\t%s\n", v.Version)
			fmt.Fprintf(tw, "commit\t%s\n", commit)
			if v.CommitTime != "" {
				fmt.Fprintf(tw, "commit time\t%s\n", v.CommitTime)
			}
			fmt.Fprintf(tw, "go\t%s\n", v.Go)
			return tw.Flush()
		},
	}
}
