// Package tofino runs the open-source Intel Tofino compiler (p4c's
// backends/tofino driver, `p4c --target tofino2 --arch t2na`) on mrcgen's
// switch program and reads what it reports: the resources the program takes
// on the chip (pipe/logs/resources.json, written with -g), the tables it
// exposes to the control plane (bfrt.json) and, when it writes one, its
// P4Info.
package tofino

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/mrc-fabric/mrcgen/p4/emit"
	"github.com/mrc-fabric/mrcgen/p4/p4c"
)

// EnvVar names the environment variable that may point at the compiler
// driver.
const EnvVar = "MRCGEN_TOFINO_P4C"

// RequireEnv names the environment variable that, set to 1, makes tests
// fail rather than skip when the compiler is missing.
const RequireEnv = "MRCGEN_REQUIRE_TOFINO"

// DefaultPath is where shared/tools/build-tofino-compiler.sh installs the
// driver.
const DefaultPath = "/opt/tofino/bin/p4c"

// ErrNotFound is returned by Find when no Tofino compiler is installed.
var ErrNotFound = errors.New("Tofino compiler (p4c with the tofino back end) not found")

// Find returns the compiler driver to use: explicit if set, else
// $MRCGEN_TOFINO_P4C, else /opt/tofino/bin/p4c. The driver is not looked up
// on PATH: the p4c found there is usually p4lang's, without the Tofino back
// end.
func Find(explicit string) (string, error) {
	path, found, err := p4c.Lookup(explicit, EnvVar, DefaultPath)
	if err != nil || found {
		return path, err
	}
	return "", fmt.Errorf("%w in %s: build it with shared/tools/build-tofino-compiler.sh, or pass --p4c / set %s", ErrNotFound, DefaultPath, EnvVar)
}

// CompileError is a failed compilation (p4c.CompileError: the compiler's
// first error line, %+v for its whole output).
type CompileError = p4c.CompileError

// Output names the files of one compilation.
type Output struct {
	Dir    string // the compiler's output directory
	Log    string // the compiler's stdout and stderr
	P4Info string // the P4Info it wrote (text format)
	// Warnings are the compiler's warning lines, in order.
	Warnings []string
}

// LogFile and P4InfoFile are the names Compile gives the compiler's log and
// P4Info inside the output directory.
const (
	LogFile    = "p4c.log"
	P4InfoFile = "p4info.txtpb"
)

// Args is the command line Compile runs, without the compiler itself.
func Args(chip emit.Chip, src, outDir string) []string {
	return []string{
		"--target", string(chip), "--arch", chip.Arch(),
		// -g: the resource logs (pipe/logs/resources.json, mau.resources.log).
		"-g",
		// A P4Info with standard counter and register messages, as a
		// P4Runtime server on the switch (Stratum) expects, rather than
		// Tofino-specific externs.
		"--p4runtime-files", filepath.Join(outDir, P4InfoFile), "--p4runtime-force-std-externs",
		"-o", outDir, src,
	}
}

// Compile compiles program src for chip into outDir (created, and emptied
// of a previous compilation's files first), keeping the compiler's log
// there.
func Compile(ctx context.Context, compiler string, chip emit.Chip, src, outDir string) (*Output, error) {
	if _, err := emit.ParseChip(string(chip)); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(outDir); err != nil {
		return nil, fmt.Errorf("compile %s: clear %s: %w", src, outDir, err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("compile %s: %w", src, err)
	}
	cmd := exec.CommandContext(ctx, compiler, Args(chip, src, outDir)...)
	cmd.Env = compilerEnv(compiler, os.Environ())
	var log bytes.Buffer
	cmd.Stdout = &log
	cmd.Stderr = &log
	runErr := cmd.Run()
	out := &Output{Dir: outDir, Log: filepath.Join(outDir, LogFile), P4Info: filepath.Join(outDir, P4InfoFile)}
	if err := os.WriteFile(out.Log, log.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("compile %s: write the compiler log: %w", src, err)
	}
	if runErr != nil {
		return nil, &CompileError{Compiler: "p4c --target " + string(chip), Program: src, Err: runErr, Log: log.String()}
	}
	if _, err := os.Stat(out.P4Info); err != nil {
		out.P4Info = ""
	}
	out.Warnings = Warnings(log.String())
	return out, nil
}

// Warnings returns the warning lines of a compiler log: those with
// "warning:" (the compiler's own; the "WARNING:" line of its logging library
// is not one), once each, in order.
func Warnings(log string) []string {
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "warning:") && !seen[line] {
			seen[line] = true
			out = append(out, line)
		}
	}
	return out
}

// compilerEnv adds the driver's Python modules (PREFIX/pylib, beside
// PREFIX/bin, as /opt/tofino/env.sh does) to PYTHONPATH when they exist.
func compilerEnv(compiler string, env []string) []string {
	pylib := filepath.Join(filepath.Dir(filepath.Dir(compiler)), "pylib")
	if st, err := os.Stat(pylib); err != nil || !st.IsDir() {
		return env
	}
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok {
			for _, p := range filepath.SplitList(v) {
				if p == pylib {
					return env
				}
			}
			env[i] = "PYTHONPATH=" + pylib + string(filepath.ListSeparator) + v
			return env
		}
	}
	return append(env, "PYTHONPATH="+pylib)
}

// findFile returns the one file called name under dir.
func findFile(dir, name string) (string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == name {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("compiler output %s: %w", dir, err)
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("compiler output %s: no %s", dir, name)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("compiler output %s: %d files called %s (%s)", dir, len(found), name, strings.Join(found, ", "))
}
