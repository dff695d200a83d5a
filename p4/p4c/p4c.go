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
	for _, c := range []string{explicit, os.Getenv(EnvVar)} {
		if c == "" {
			continue
		}
		path, err := exec.LookPath(c)
		if err != nil {
			return "", fmt.Errorf("p4 compiler %q: %w", c, err)
		}
		return path, nil
	}
	if path, err := exec.LookPath(Binary); err == nil {
		return path, nil
	}
	if path, err := exec.LookPath("/opt/p4/bin/" + Binary); err == nil {
		return path, nil
	}
	return "", fmt.Errorf("%w on PATH or in /opt/p4/bin: install p4c (p4lang's packages or the p4lang/p4c container image) or pass --p4c / set %s", ErrNotFound, EnvVar)
}

// CompileError is a failed compilation; Error() is one line, %+v adds the
// compiler's whole output.
type CompileError struct {
	Program string
	Err     error
	Log     string
}

func (e *CompileError) Error() string {
	first := strings.TrimSpace(e.Log)
	if i := strings.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	return fmt.Sprintf("p4c-bm2-ss %s: %v: %s", e.Program, e.Err, first)
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
		return &CompileError{Program: src, Err: err, Log: log.String()}
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
