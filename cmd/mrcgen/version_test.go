package main

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/mrc-fabric/mrcgen", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "4959236abc"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	want := versionInfo{Module: "github.com/mrc-fabric/mrcgen", Version: "v0.3.0", Commit: "4959236abc", CommitTime: "2026-12-01T10:00:00Z", Modified: true, Go: "go1.26.8"}
	if got := readVersion(bi, true); got != want {
		t.Errorf("readVersion = %+v\nwant %+v", got, want)
	}
	if got := readVersion(nil, false); got.Version != "unknown" || got.Module != "github.com/mrc-fabric/mrcgen" {
		t.Errorf("readVersion without build info = %+v", got)
	}

	code, out, errOut := mrcgen(t, "version", "-o", "json")
	var v versionInfo
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if v.Go != runtime.Version() || v.Version == "" {
		t.Errorf("version: %+v", v)
	}
	code, out, _ = mrcgen(t, "version")
	if code != 0 || !strings.Contains(out, "go  ") || !strings.Contains(out, runtime.Version()) || !strings.Contains(out, "commit") {
		t.Errorf("version table: exit %d\n%s", code, out)
	}
}
