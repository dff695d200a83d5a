// Package p4c runs the P4 compiler's BMv2 back end (p4c-bm2-ss) on mrcgen's
// programs.
package p4c

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
)

// Binary is the compiler's name on PATH.
const Binary = "p4c-bm2-ss"

// EnvVar names the environment variable that may point at the compiler.
const EnvVar = "MRCGEN_P4C"

// ErrNotFound is returned by Find when no compiler is installed.
var ErrNotFound = errors.New("p4c-bm2-ss not found")

// Find returns the compiler to use: explicit if set, else $MRCGEN_P4C, else
// p4c-bm2-ss on PATH (or in /opt/p4/bin).
func Find(explicit string) (string, error) {
	path, found, err := Lookup(explicit, EnvVar, Binary, "/opt/p4/bin/"+Binary)
	if err != nil || found {
		return path, err
	}
	return "", fmt.Errorf("%w on PATH or in /opt/p4/bin: install p4c (p4lang's packages or the p4lang/p4c container image) or pass --p4c / set %s", ErrNotFound, EnvVar)
}

// Lookup finds a compiler (or any tool) the way mrcgen's commands do: the
// explicit choice if given (it must exist), else the one the environment
// variable envVar names (it must exist), else the first of defaults that
// exists. found is false, with no error, when nothing was asked for and no
// default exists: the caller says what to install.
func Lookup(explicit, envVar string, defaults ...string) (path string, found bool, err error) {
	for _, c := range []string{explicit, os.Getenv(envVar)} {
		if c == "" {
			continue
		}
		path, err := exec.LookPath(c)
		if err != nil {
			return "", false, fmt.Errorf("compiler %q: %w", c, err)
		}
		return path, true, nil
	}
	for _, d := range defaults {
		if path, err := exec.LookPath(d); err == nil {
			return path, true, nil
		}
	}
	return "", false, nil
}

// CompileError is a failed compilation; Error() is one line (the compiler's
// first error line, or its first line), %+v adds the compiler's whole
// output.
type CompileError struct {
	// Compiler says which compiler ran, as people know it ("p4c-bm2-ss",
	// "p4c --target tofino2").
	Compiler string
	Program  string
	Err      error
	Log      string
}

func (e *CompileError) Error() string {
	first := ""
	for _, line := range strings.Split(e.Log, "\n") {
		if strings.Contains(line, "error") {
			first = strings.TrimSpace(line)
			break
		}
	}
	if first == "" {
		first = strings.TrimSpace(e.Log)
		if i := strings.IndexByte(first, '\n'); i >= 0 {
			first = first[:i]
		}
	}
	return fmt.Sprintf("%s %s: %v: %s", e.Compiler, e.Program, e.Err, first)
}

func (e *CompileError) Unwrap() error { return e.Err }

// Format prints the whole compiler log with %+v.
func (e *CompileError) Format(s fmt.State, verb rune) {
	if verb == 'v' && s.Flag('+') {
		fmt.Fprintf(s, "%s\n%s", e.Error(), e.Log)
		return
	}
	fmt.Fprint(s, e.Error())
}

// Compile compiles program src into BMv2 JSON (outJSON) and p4c's own P4Info
// in text format (outP4Info).
func Compile(ctx context.Context, compiler, src, outJSON, outP4Info string) error {
	cmd := exec.CommandContext(ctx, compiler, "--p4runtime-files", outP4Info, "-o", outJSON, src)
	var log bytes.Buffer
	cmd.Stdout = &log
	cmd.Stderr = &log
	if err := cmd.Run(); err != nil {
		return &CompileError{Compiler: Binary, Program: src, Err: err, Log: log.String()}
	}
	return nil
}

// ReadP4Info reads a P4Info in text format.
func ReadP4Info(path string) (*p4cfg.P4Info, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	info := &p4cfg.P4Info{}
	if err := prototext.Unmarshal(data, info); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return info, nil
}
