package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite docs/img/tiny-fail.svg, docs/img/compare.svg and README.md's \"What MRC buys\" table from the current code")

// readmeDrawCommand is the command the README shows next to the picture.
const readmeDrawCommand = "mrcgen draw --preset tiny --fail p0-t0-0:p0-t1-1 --out docs/img/tiny-fail.svg"

// TestGoldenREADMEPicture regenerates the README's picture with the command
// printed beside it and compares it with the committed file (-update
// rewrites it), so that the picture cannot drift from the code.
func TestGoldenREADMEPicture(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), readmeDrawCommand) || !strings.Contains(string(readme), "(docs/img/tiny-fail.svg)") {
		t.Fatalf("README does not show docs/img/tiny-fail.svg next to %q", readmeDrawCommand)
	}
	out := filepath.Join(t.TempDir(), "tiny-fail.svg")
	args := strings.Fields(readmeDrawCommand)[1:]
	args[len(args)-1] = out
	if code, _, errOut := mrcgen(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(root, "docs", "img", "tiny-fail.svg")
	if *updateGolden {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/mrcgen -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what `%s` draws now: run go test ./cmd/mrcgen -run Golden -update and look at it", golden, readmeDrawCommand)
	}
}

func TestDrawBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "never.svg")
	for _, args := range [][]string{
		{"draw", "--preset", "tiny", "--fail", "p0-t0-0:p0-t0-1", "--out", out},
		{"draw", "--preset", "tiny", "--fail", "p9-t0-0:p0-t1-1", "--out", out},
		{"draw", "--preset", "nope", "--out", out},
		{"draw", "--summary", "--full", "--out", out},
	} {
		code, _, errOut := mrcgen(t, args...)
		if code == 0 || errOut == "" {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%v: wrote %s", args, out)
		}
	}
}
